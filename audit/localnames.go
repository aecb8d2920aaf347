package audit

import (
	"context"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// The engine reads local copies of the objects (a run directory's
// "files/1.csv", the download cache's "<hash>-15.csv"), and DuckDB's errors
// name those. An operator reading a check's error in Slack or in the result
// event needs the object's path on the ref, and the engine's directories are
// none of the event's readers' business (TestUnreadableFileIsNamedByItsPath).

// nameObjects rewrites, in the checks' messages and observed values, every
// local copy of a file this run read as the path of its object.
func (r *run) nameObjects(checks []schemas.CheckResult) {
	var rep *strings.Replacer
	for i := range checks {
		c := &checks[i]
		if !r.namesLocal(c.Message) && !r.namesLocal(c.Observed) {
			continue
		}
		if rep == nil {
			var pairs []string
			seen := map[string]bool{}
			for _, v := range r.views {
				for j, f := range v.files {
					if j < len(v.objects) && !seen[f] {
						seen[f] = true
						pairs = append(pairs, f, v.objects[j].Path)
					}
				}
			}
			rep = strings.NewReplacer(pairs...)
		}
		c.Message, c.Observed = rep.Replace(c.Message), rep.Replace(c.Observed)
	}
}

// namesLocal tells whether s may name a local copy: the run's directories
// are under the engine's work directory or its cache.
func (r *run) namesLocal(s string) bool {
	return strings.Contains(s, r.e.dir) || (r.e.opts.CacheDir != "" && strings.Contains(s, r.e.opts.CacheDir))
}

// unreadableFile is the path of the first of a view's files DuckDB cannot read on
// its own, when the view reads several: DuckDB's error over a union of
// files may name none of them (a CSV file it cannot read among others:
// 'Error when sniffing file ""'). Each file is read alone, in order, only on
// this failure path.
func (r *run) unreadableFile(ctx context.Context, v *view) string {
	if len(v.files) < 2 || v.delta != nil {
		return ""
	}
	for i, f := range v.files {
		if _, err := r.conn.ExecContext(ctx, "SELECT * FROM "+readSQL(v.table.format(), []string{f})+" LIMIT 0"); err != nil {
			if i < len(v.objects) {
				return v.objects[i].Path
			}
			return ""
		}
	}
	return ""
}
