package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lakewap/lakewap/schemas"
)

// History is what incremental audits need of lakeFS besides Source: the
// commit a batch branch started from, and that commit's metadata (its
// attestation).
type History interface {
	// MergeBase is lakeFS's merge-base of two refs.
	MergeBase(ctx context.Context, repo, a, b string) (string, error)
	// Commit is the commit ref points at.
	Commit(ctx context.Context, repo, ref string) (CommitInfo, error)
}

// An incremental audit. A batch branch starts from a commit of the target,
// its foundation (the merge-base of the sealed commit and the target). When
// the foundation carries a valid attestation of the same dataset and suite
// (Attested), the table at the foundation passed every check the
// attestation does not name, and the audited table is that table with the
// batch's files added, replaced or removed. Then, for the checks that
// passed there:
//   - row checks (not_null, accepted_values, range, regex without mostly,
//     with or without a where condition that reads only the row) read the
//     batch's files only: the unchanged rows passed them;
//   - stat takes the unchanged files' min and max from lakewap's statistics;
//   - unique reads the batch's keys and the key columns of the unchanged
//     files whose key range (from the statistics) can hold one of them;
//   - row_count and volume_change add up the files' row counts.
//
// The statistics are lakewap's own, computed from the data when an audit
// read each file and kept by physical address (StatsStore); a file without
// them is read once to compute them. Every other check, every check the
// foundation did not pass, and every check of a table that is not Parquet
// runs over the whole table as before. Anything the attestation does not
// vouch for (no attestation, another suite, a graph that does not match)
// makes the audit full, and the report says why (Mode, ModeReason); so does
// an attested commit that lakewap's own lakeFS user did not make, when the
// History knows that user (OwnUser, MadeBy). The
// verdicts and counts are the full audit's (TestIncrementalEqualsFull).
type increment struct {
	att        Attestation
	foundation string       // the commit whose table the attestation covers
	planned    map[int]bool // checks (suite index) answered incrementally
	rows       map[int]bool // of them, the row checks moved to the batch's rows
	tables     map[string]*incTable
}

// incTable is one table of an incremental audit: the files of the audited
// state, which of them are the batch's, and the unchanged files' statistics.
type incTable struct {
	done  bool
	err   error
	need  statsNeed
	batch []Object // the batch's files (their addresses from the listing)
	// batchStats are the batch's files' statistics (nil when not all
	// known), in batch's order.
	batchStats []fileStats
	old        []Object // the unchanged files
	oldStats   []fileStats
	sum        *fileSummary // of old, when they could be keyed (summary.go)
}

// incrementalKind says how a check of kind k can be incremental: "row" (on
// the batch's rows), "table" (a plan of its own) or "" (full).
func incrementalKind(c Check) string {
	k := kindOf(c)
	if c.scope() != ScopeTable || c.Mostly != nil {
		return ""
	}
	switch {
	case k.failing != nil && k.aggregated() && k.resample == nil && !k.compares:
		return "row"
	case c.Kind == KindStat, c.Kind == KindRowCount, c.Kind == KindVolumeChange:
		return "table"
	case c.Kind == KindUnique && strings.TrimSpace(c.Where) == "":
		return "table"
	}
	return ""
}

// decide chooses the run's mode: incremental when the foundation is
// attested for this suite, else full with the reason. It rewrites the run's
// suite so that the row checks it moves read the batch scope.
func (r *run) decide(ctx context.Context) (mode, reason string) {
	e := r.e
	req := r.req
	switch {
	case req.fullBecause != "":
		return ModeFull, req.fullBecause
	case req.Full:
		return ModeFull, "a full audit was asked for"
	case e.opts.History == nil:
		return ModeFull, ""
	case req.BaseRef == "":
		return ModeFull, "no base ref to compare with"
	}
	var foundation string
	if req.Onto {
		foundation = req.BaseRef
	} else {
		var err error
		if foundation, err = e.opts.History.MergeBase(ctx, req.Repository, req.Ref, req.BaseRef); err != nil {
			return ModeFull, "the batch's foundation could not be read: " + err.Error()
		}
		e.foundations.put(req.Repository+"\x00"+req.Ref, foundation)
	}
	c, err := e.opts.History.Commit(ctx, req.Repository, foundation)
	if err != nil {
		return ModeFull, "the batch's foundation could not be read: " + err.Error()
	}
	var own string
	if u, ok := e.opts.History.(OwnUser); ok {
		if own, err = u.OwnCommitter(ctx); err != nil {
			return ModeFull, "who lakewap is to lakeFS could not be read: " + err.Error()
		}
	}
	att, err := Attested(c, req.Dataset, SuiteDigest(req.Suite), e.opts.AttestationKey)
	if err == nil {
		err = MadeBy(c, own)
	}
	if err != nil {
		var ok bool
		if att, ok = r.attestedBeneath(ctx, c, own); !ok {
			return ModeFull, fmt.Sprintf("commit %s on %s is not an attested publish of this suite: %v", short(c.ID), cmp.Or(req.BaseName, "the target"), err)
		}
	}
	inc := &increment{att: att, foundation: foundation, planned: map[int]bool{}, rows: map[int]bool{}, tables: map[string]*incTable{}}
	checks := slices.Clone(req.Suite.Checks)
	for i, ch := range checks {
		t := r.table(ch.Table)
		if t.format() != FormatParquet || !att.passed(i) {
			continue
		}
		how := incrementalKind(ch)
		if how == "" || !e.rowOnly(ctx, ch.Where) {
			continue
		}
		inc.planned[i] = true
		it := inc.tables[strings.ToLower(ch.Table)]
		if it == nil {
			it = &incTable{}
			inc.tables[strings.ToLower(ch.Table)] = it
		}
		if w := strings.TrimSpace(ch.Where); w != "" && !slices.Contains(it.need.wheres, w) {
			it.need.wheres = append(it.need.wheres, w)
			for _, k := range e.whereColumns(ctx, ch.Where) {
				if !slices.Contains(it.need.whereCols, k) {
					it.need.whereCols = append(it.need.whereCols, k)
				}
			}
		}
		if col := statColumn(ch); col.name != "" {
			it.need.addCol(col)
		}
		for _, pc := range pandasColumnsOf(ch) { // pandas' reading of the whole column (pandasfloat.go)
			it.need.addCol(colNeed{name: strings.ToLower(pc.col), countOnly: true})
		}
		if how == "row" || ch.Kind == KindStat || ch.Kind == KindRowCount {
			// Judged by the table's scan over the batch's rows, with the
			// unchanged files' figures added (adjust).
			inc.rows[i] = true
			checks[i].Scope = ScopeBatch
		}
	}
	if len(inc.planned) == 0 {
		return ModeFull, "no check of this suite can be incremental"
	}
	r.req.Suite.Checks = checks
	r.inc = inc
	return ModeIncremental, ""
}

// planFailed is why the run gives up its incremental plan ("" when it
// holds): a table whose plan could not be prepared (incTableOf) while its
// batch's view reads. Its planned checks erred with the plan's own error,
// over a part of the table the full audit reads with the rest (the
// statistics of an unchanged file without a column a where condition
// reads, computed beside a batch without it either, failed the scan:
// TestReview53StatisticsOfAFileWithoutAWhereColumn), and the full audit's
// verdict is the one that counts. A batch's view that cannot be read errs
// full too; a failed download is the run's own error (run.infra).
func (r *run) planFailed() string {
	names := slices.Sorted(maps.Keys(r.inc.tables))
	for _, name := range names {
		it := r.inc.tables[name]
		if it.done && it.err != nil && r.viewErr(schemaBatch, name) == nil {
			return fmt.Sprintf("the incremental plan of table %s failed (%s)", name, clip(it.err.Error(), 300))
		}
	}
	return ""
}

// maxForeignPublishes bounds how many publishes of other datasets may lie
// between a foundation and this dataset's last attested publish.
const maxForeignPublishes = 16

// attestedBeneath is this dataset's attestation for foundation top when top
// is another dataset's publish into the same target: the first parents
// below top, up to maxForeignPublishes of them, are all lakewap's attested
// publishes of other datasets, down to this dataset's attested publish of
// this suite, and nothing under this suite's tables changed between that
// publish and top (one diff per table, removals included: changedBetween).
// Then the tables at top are the ones that publish attested. A commit on the way that is not an attested
// publish (a direct commit, a merge or revert by hand), or a change under
// this suite's tables, and the audit is full. Each of these commits must
// be lakewap's own (MadeBy own).
func (r *run) attestedBeneath(ctx context.Context, top CommitInfo, own string) (Attestation, bool) {
	e, req := r.e, r.req
	digest := SuiteDigest(req.Suite)
	cur := top
	for range maxForeignPublishes {
		if a, err := ParseAttestation(cur.Metadata[MetaAttestation], e.opts.AttestationKey); err != nil || a.Dataset == req.Dataset ||
			len(cur.Parents) != 2 || cur.Parents[0] != a.Against || cur.Parents[1] != a.Sealed || MadeBy(cur, own) != nil {
			return Attestation{}, false // not another dataset's attested publish
		}
		below, err := e.opts.History.Commit(ctx, req.Repository, cur.Parents[0])
		if err != nil {
			return Attestation{}, false
		}
		a, err := Attested(below, req.Dataset, digest, e.opts.AttestationKey)
		if err == nil {
			err = MadeBy(below, own)
		}
		if err != nil {
			cur = below
			continue
		}
		for _, t := range req.Suite.Tables {
			if changed, err := r.changedBetween(ctx, below.ID, top.ID, t.Path); err != nil || changed {
				return Attestation{}, false
			}
		}
		return a, true
	}
	return Attestation{}, false
}

// changedBetween says whether anything under prefix differs between the
// commits from and to, removals included: lakeFS's two-dot diff (Differ)
// where the Source has it, else its changes (Changed), which leave out
// removals. A file another dataset's publish removed from this suite's
// table can change how the table's other rows read (schemaagree.go).
func (r *run) changedBetween(ctx context.Context, from, to, prefix string) (bool, error) {
	if d, ok := r.e.opts.Source.(Differ); ok {
		diffs, truncated, err := d.Differences(ctx, r.req.Repository, from, to, prefix, 1)
		return truncated || len(diffs) > 0, err
	}
	changed, err := r.e.opts.Source.Changed(ctx, r.req.Repository, from, to, prefix)
	return len(changed) > 0, err
}

// Foundation is the foundation an audit of ref found (the merge-base of
// ref and its base), if one did lately: what a publish of ref attests it
// was checked onto.
func (e *Engine) Foundation(repo, ref string) (string, bool) {
	return e.foundations.get(repo + "\x00" + ref)
}

// boundedMap keeps the last max entries put.
type boundedMap[V any] struct {
	mu    sync.Mutex
	max   int
	m     map[string]V
	order []string
}

func newBoundedMap[V any](max int) *boundedMap[V] {
	return &boundedMap[V]{max: max, m: map[string]V{}}
}

func (b *boundedMap[V]) get(k string) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

func (b *boundedMap[V]) put(k string, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok {
		b.order = append(b.order, k)
	}
	b.m[k] = v
	for len(b.order) > b.max {
		delete(b.m, b.order[0])
		b.order = b.order[1:]
	}
}

// statColumn is the column whose min and max a check's incremental plan
// takes from the statistics, if any.
func statColumn(c Check) colNeed {
	switch c.Kind {
	case KindRange, KindStat:
		return colNeed{name: strings.ToLower(c.Column), where: strings.TrimSpace(c.Where)}
	case KindUnique:
		return colNeed{name: strings.ToLower(c.columns()[0])}
	}
	return colNeed{}
}

// incTableOf prepares table name's unchanged files and their statistics,
// once per run: the audited state's listing, the batch's files, the
// statistics of every file (read from the store, or computed from the data
// of the files without them, and stored).
func (r *run) incTableOf(ctx context.Context, name string) (*incTable, error) {
	it := r.inc.tables[strings.ToLower(name)]
	if it == nil {
		return nil, fmt.Errorf("table %s is not incremental", name)
	}
	if it.done {
		return it, it.err
	}
	it.done = true
	it.err = r.prepareIncTable(ctx, name, it)
	return it, it.err
}

func (r *run) prepareIncTable(ctx context.Context, name string, it *incTable) error {
	t := r.table(name)
	bv := r.views[viewKey{schemaBatch, strings.ToLower(name)}]
	if bv == nil {
		return fmt.Errorf("table %s: batch not loaded", name)
	}
	// A file without a column a where reads has its figures under it only
	// as read in the table's type (fileStats.Nulls).
	need := it.need
	it.need.nullType = func(k string) string { return cmp.Or(r.typedNulls(ctx, t, need)[k], "NULL") }
	if bv.colsErr != nil {
		return bv.colsErr
	}
	all, err := r.stateObjects(ctx, t)
	if err != nil {
		return err
	}
	inBatch := map[string]bool{}
	for _, o := range bv.objects {
		inBatch[o.Path] = true
	}
	it.old = make([]Object, 0, len(all))
	for _, o := range all {
		if !inBatch[o.Path] {
			it.old = append(it.old, o)
		}
	}
	// The batch's files, with the addresses the listing gives (a diff has
	// none): the listing is in path order (a map of it was most of this
	// step's cost over a table of thousands of files).
	at := func(path string) (Object, bool) {
		i, found := slices.BinarySearchFunc(all, path, func(o Object, p string) int { return strings.Compare(o.Path, p) })
		if found {
			for i+1 < len(all) && all[i+1].Path == path {
				i++ // the last of one path, as the map kept it
			}
			return all[i], true
		}
		return Object{}, false
	}
	if !slices.IsSortedFunc(all, func(a, b Object) int { return strings.Compare(a.Path, b.Path) }) {
		byPath := make(map[string]Object, len(all))
		for _, o := range all {
			byPath[o.Path] = o
		}
		at = func(path string) (Object, bool) { o, ok := byPath[path]; return o, ok }
	}
	for _, o := range bv.objects {
		if l, ok := at(o.Path); ok && l.Size == o.Size {
			o.Address = l.Address
		}
		it.batch = append(it.batch, o)
	}
	// The batch's own statistics, for the audits after it is published:
	// computed from its files (already local) unless the store has them
	// (a recheck of the same sealed commit, the review's finding 7).
	if len(bv.files) == len(it.batch) && len(it.batch) > 0 {
		var objs []Object
		var files []string
		var at []int
		known := make([]fileStats, len(it.batch))
		for i, o := range it.batch {
			if st, ok := r.e.stats.get(statsKey(r.req.Repository, o)); ok && st.has(it.need) {
				known[i] = st
				continue
			}
			objs, files, at = append(objs, o), append(files, bv.files[i]), append(at, i)
		}
		it.batchStats = known
		if len(objs) > 0 {
			if sts, err := r.computeStats(ctx, t, objs, files, it.need); err == nil {
				for i, o := range objs {
					r.storeStats(o, cmp.Or(o.at, bv.ref), sts[i])
					known[at[i]] = sts[i]
				}
			} else {
				it.batchStats = nil
				r.log.Warn("audit: batch statistics not computed", "table", name, "err", err)
			}
		}
	}
	return r.unchangedStats(ctx, t, it)
}

// stateObjects lists the files of table t in the audited state: at the ref,
// or, for a request Onto its base, the base's files with the batch's
// changes (the sealed commit's against the foundation) applied.
func (r *run) stateObjects(ctx context.Context, t Table) ([]Object, error) {
	if !r.req.Onto {
		objs, err := r.tableListing(ctx, r.req.Ref, t)
		if err != nil {
			return nil, fmt.Errorf("audit: list table %s at %s: %w", t.Name, r.req.Ref, err)
		}
		return slices.Clone(objs), nil
	}
	return r.mergedObjects(ctx, t)
}

// mergedObjects is what merging the sealed commit (Ref) into the target
// (BaseRef) leaves of table t: a path the batch changed against the
// foundation has the batch's version (or is gone), any other the target's.
// Changed is as lakeFS's merge sees it: by claimed checksum and size, not
// by address (a path the batch holds at a new address claiming the same
// checksum and size is unchanged to lakeFS, which keeps the target's
// entry; relinked_objects refuses such a path unless its bytes are the
// target's). Objects keep the ref they are read at.
func (r *run) mergedObjects(ctx context.Context, t Table) ([]Object, error) {
	if r.e.opts.History == nil {
		return nil, errors.New("audit: an audit onto the target needs History")
	}
	foundation, err := r.e.opts.History.MergeBase(ctx, r.req.Repository, r.req.Ref, r.req.BaseRef)
	if err != nil {
		return nil, fmt.Errorf("audit: merge-base of %s and %s: %w", r.req.Ref, r.req.BaseRef, err)
	}
	list := func(ref string) ([]Object, error) {
		objs, err := r.tableListing(ctx, ref, t)
		if err != nil {
			return nil, fmt.Errorf("audit: list table %s at %s: %w", t.Name, ref, err)
		}
		objs = slices.Clone(objs)
		for i := range objs {
			objs[i].at = ref
		}
		return objs, nil
	}
	f, err := list(foundation)
	if err != nil {
		return nil, err
	}
	s, err := list(r.req.Ref)
	if err != nil {
		return nil, err
	}
	tg, err := list(r.req.BaseRef)
	if err != nil {
		return nil, err
	}
	if out, ok := mergeSorted(f, s, tg); ok {
		return out, nil
	}
	return mergeByPath(f, s, tg), nil
}

// mergeByPath is mergeSorted for listings in any order.
func mergeByPath(f, s, tg []Object) []Object {
	byPath := func(objs []Object) map[string]Object {
		m := make(map[string]Object, len(objs))
		for _, o := range objs {
			m[o.Path] = o
		}
		return m
	}
	fm, sm, tm := byPath(f), byPath(s), byPath(tg)
	var out []Object
	for p, o := range sm {
		if fo, ok := fm[p]; !ok || !sameIdentity(fo, o) {
			out = append(out, o) // the batch's
		}
	}
	for p, o := range tm {
		so, inS := sm[p]
		fo, inF := fm[p]
		batchChanged := inS != inF || (inS && !sameIdentity(so, fo))
		if !batchChanged {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// mergeSorted is mergedObjects' table from the foundation's, the sealed
// commit's and the target's files when each listing is in strict path
// order (as lakeFS and the derived listings give them): one walk of the
// three, without a map of each. It reports false for a listing out of
// order.
func mergeSorted(f, s, tg []Object) ([]Object, bool) {
	for _, l := range [][]Object{f, s, tg} {
		for i := 1; i < len(l); i++ {
			if l[i-1].Path >= l[i].Path {
				return nil, false
			}
		}
	}
	out := make([]Object, 0, len(tg)+len(s))
	i, j, k := 0, 0, 0
	for i < len(f) || j < len(s) || k < len(tg) {
		p := ""
		first := true
		for _, c := range []struct {
			l []Object
			n int
		}{{f, i}, {s, j}, {tg, k}} {
			if c.n < len(c.l) && (first || c.l[c.n].Path < p) {
				p, first = c.l[c.n].Path, false
			}
		}
		var fo, so, to Object
		inF := i < len(f) && f[i].Path == p
		inS := j < len(s) && s[j].Path == p
		inT := k < len(tg) && tg[k].Path == p
		if inF {
			fo, i = f[i], i+1
		}
		if inS {
			so, j = s[j], j+1
		}
		if inT {
			to, k = tg[k], k+1
		}
		batchChanged := inS != inF || (inS && !sameIdentity(so, fo))
		switch {
		case inS && batchChanged:
			out = append(out, so) // the batch's
		case inT && !batchChanged:
			out = append(out, to)
		}
	}
	return out, true
}

// sameIdentity says whether lakeFS's diff takes a and b (one path at two
// commits) as the same object, as far as a listing shows: the same address,
// or the same claimed checksum and size.
func sameIdentity(a, b Object) bool {
	return a.Address == b.Address || (a.Checksum == b.Checksum && a.Size == b.Size)
}

// statsOf returns the statistics of objs (files of table t), computing
// those the store lacks from the files' data.
func (r *run) statsOf(ctx context.Context, t Table, objs []Object, need statsNeed) ([]fileStats, error) {
	out := make([]fileStats, len(objs))
	var missing []int
	for i, o := range objs {
		if st, ok := r.e.stats.get(statsKey(r.req.Repository, o)); ok && st.has(need) {
			out[i] = st
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	objsMissing := each(missing, func(i int) Object { return objs[i] })
	local := r.plan(each(objsMissing, func(o Object) fetch { return fetch{ref: cmp.Or(o.at, r.req.Ref), obj: o} }))
	sts, err := r.computeStats(ctx, t, objsMissing, local, need)
	if err != nil {
		return nil, fmt.Errorf("statistics of table %s: %w", t.Name, err)
	}
	for j, i := range missing {
		out[i] = sts[j]
		r.storeStats(objs[i], cmp.Or(objs[i].at, r.req.Ref), sts[j])
	}
	r.log.Debug("audit statistics computed from the data", "table", t.Name, "files", len(missing))
	return out, nil
}

// storeStats keeps st as the statistics of o's address, when o was read
// at ref, a commit: a download at a branch is by path, and a branch that
// moved after its listing gave another address's bytes, which kept under
// the listed address would be taken for that address's figures by every
// later audit (TestReview44BranchReadsDoNotKeyBytesByAnotherAddress).
func (r *run) storeStats(o Object, ref string, st fileStats) {
	if st.mixed {
		return // in another type than the file's own (schemaagree.go)
	}
	if !IsCommitID(ref) {
		return
	}
	if err := r.e.stats.put(statsKey(r.req.Repository, o), st); err != nil {
		r.log.Warn("audit: statistics not stored", "path", o.Path, "err", err)
	}
}

// oldRows is the unchanged files' rows (meeting where, if set).
func (it *incTable) oldRows(where string) int64 {
	var n int64
	where = strings.TrimSpace(where)
	if it.sum != nil {
		if where == "" {
			return it.sum.rows
		}
		if n, ok := it.sum.counts[whereKey(where)]; ok {
			return n
		}
	}
	for _, st := range it.oldStats {
		if where == "" {
			n += st.Rows
		} else {
			n += st.Counts[whereKey(where)]
		}
	}
	return n
}

// adjust turns the figures of a check moved to the batch's rows into the
// table's: the unchanged files' rows are added to the count, and their
// min and max to the batch's (range, stat). The unchanged rows passed the
// check, so its failing rows are the batch's.
func (r *run) adjust(ctx context.Context, i int, c Check, total int64, v []any) (int64, []any, error) {
	if r.inc == nil || !r.inc.rows[i] {
		return total, v, nil
	}
	it, err := r.incTableOf(ctx, c.Table)
	if err != nil {
		return 0, nil, err
	}
	total += it.oldRows(c.Where)
	switch c.Kind {
	case KindRange:
		lo, hi, err := r.combinedMinMax(ctx, it, c)
		if err != nil {
			return 0, nil, err
		}
		v = []any{v[0], lo, hi}
	case KindStat:
		lo, hi, err := r.combinedMinMax(ctx, it, c)
		if err != nil {
			return 0, nil, err
		}
		v = []any{map[string]any{StatMin: lo, StatMax: hi}[c.Stat]}
	}
	return total, v, nil
}

// combinedMinMax is the min and max of c's column over the batch's rows and
// the unchanged files' statistics, typed as the scan would give them.
func (r *run) combinedMinMax(ctx context.Context, it *incTable, c Check) (any, any, error) {
	q := quoteIdent(c.Column)
	parts := []string{fmt.Sprintf("SELECT min(%s) AS lo, max(%s) AS hi FROM %s", q, q, filtered(schemaBatch, r.table(c.Table).Name, c.Where))}
	olds, err := oldMinMax(it, c)
	if err != nil {
		return nil, nil, err
	}
	if lo, hi, ok := r.batchMinMax(ctx, c, olds); ok {
		return lo, hi, nil
	}
	for _, cs := range olds {
		parts = append(parts, fmt.Sprintf("SELECT CAST(%s AS %s) AS lo, CAST(%s AS %s) AS hi", quoteLiteral(cs.Min), cs.Type, quoteLiteral(cs.Max), cs.Type))
	}
	query := "SELECT min(lo), max(hi) FROM (" + strings.Join(parts, " UNION ALL ") + ")"
	var vals []any
	if r.e.rowOnly(ctx, c.Where) {
		// The statistics' min and max are literals of the text.
		vals, err = r.memoRow(ctx, query, query, 2, viewKey{schemaBatch, strings.ToLower(c.Table)})
	} else {
		vals, err = r.queryRow(ctx, query, 2)
	}
	if err != nil {
		return nil, nil, err
	}
	return vals[0], vals[1], nil
}

// oldMinMax is the unchanged files' min and max of c's column as the
// combined query takes them: from their summary where it has them, else
// from each file's statistics, reduced to one where Go orders them.
func oldMinMax(it *incTable, c Check) ([]colStats, error) {
	col := statColumn(c).key()
	if it.sum != nil {
		if f, ok := it.sum.cols[col]; ok || len(it.oldStats) == 0 {
			if olds, ok := f.olds(); ok {
				return olds, nil
			}
		}
	}
	olds := make([]colStats, 0, len(it.oldStats))
	for _, st := range it.oldStats {
		cs := st.Cols[col]
		if cs.NonNull == 0 {
			continue
		}
		if !typeName.MatchString(cs.Type) {
			return nil, fmt.Errorf("statistics of column %s name type %q", c.Column, cs.Type)
		}
		olds = append(olds, cs)
	}
	// One row per unchanged file made the query grow with the table; where
	// the files' type has an order Go knows, their overall min and max are
	// picked here and the query gets one row.
	if lo, hi, ok := reduceMinMax(olds); ok {
		olds = []colStats{{Type: lo.Type, Min: lo.Min, Max: hi.Max}}
	}
	return olds, nil
}

// reduceMinMax picks, among files' statistics of one column, the one with
// the least min and the one with the greatest max, when every file has the
// same type and it is one whose order Go reproduces exactly: DuckDB's
// integers (compared as integers), DECIMALs (as exact rationals), DOUBLE
// and FLOAT without NaN, and VARCHAR (byte order). Otherwise it reports
// false and the query compares them.
func reduceMinMax(olds []colStats) (lo, hi colStats, ok bool) {
	if len(olds) < 2 {
		return lo, hi, false
	}
	typ := strings.ToUpper(strings.TrimSpace(olds[0].Type))
	cmp := minMaxOrder(typ)
	if cmp == nil {
		return lo, hi, false
	}
	lo, hi = olds[0], olds[0]
	for _, cs := range olds {
		if strings.ToUpper(strings.TrimSpace(cs.Type)) != typ {
			return lo, hi, false
		}
		c, ok := cmp(cs.Min, lo.Min)
		if !ok {
			return lo, hi, false
		}
		if c < 0 {
			lo = cs
		}
		if c, ok = cmp(cs.Max, hi.Max); !ok {
			return lo, hi, false
		}
		if c > 0 {
			hi = cs
		}
	}
	// Each file's own min and max must parse too (its max is compared
	// only when it may win; make sure none is unreadable).
	for _, cs := range olds {
		if _, ok := cmp(cs.Min, cs.Max); !ok {
			return lo, hi, false
		}
	}
	return lo, hi, true
}

// minMaxOrder is the order of DuckDB's values of type typ (upper case)
// given as text, where Go reproduces it exactly: integers (compared as
// integers), DECIMALs (as exact rationals), DOUBLE and FLOAT without NaN,
// and VARCHAR (byte order); nil for any other type. It reports false for
// a text it cannot read (or NaN).
func minMaxOrder(typ string) func(a, b string) (int, bool) {
	switch {
	case slices.Contains([]string{"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}, typ),
		strings.HasPrefix(typ, "DECIMAL("):
		return func(a, b string) (int, bool) {
			x, okx := new(big.Rat).SetString(a)
			y, oky := new(big.Rat).SetString(b)
			if !okx || !oky {
				return 0, false
			}
			return x.Cmp(y), true
		}
	case typ == "DOUBLE" || typ == "FLOAT":
		return func(a, b string) (int, bool) {
			x, errx := strconv.ParseFloat(a, 64)
			y, erry := strconv.ParseFloat(b, 64)
			if errx != nil || erry != nil || math.IsNaN(x) || math.IsNaN(y) {
				return 0, false
			}
			return compareFloat(x, y), true
		}
	case typ == "VARCHAR":
		return func(a, b string) (int, bool) { return strings.Compare(a, b), true }
	}
	return nil
}

// batchMinMax answers combinedMinMax from the batch's own min and max and
// the unchanged files' (olds, reduced to one), where that gives exactly
// the combined query's answer: the batch's figures depend on its files
// only, so they come from the memo once its audit ran; the unchanged
// files' min and max change as the target gains files, and a query with
// them as literals would miss the memo whenever they do. Which wins is
// decided in Go (minMaxOrder) when the batch's column has the statistics'
// type; a winner from the statistics is typed in Go where Go reads its
// text as DuckDB does (typedLiterals), else by DuckDB (CAST of the literal,
// on the engine's pool: it reads no table; memoized by its text).
// Equal values spelled differently (0 and -0) and anything Go does not
// order leave it to the query (ok false).
func (r *run) batchMinMax(ctx context.Context, c Check, olds []colStats) (lo, hi any, ok bool) {
	bk := viewKey{schemaBatch, strings.ToLower(c.Table)}
	if len(olds) > 1 || !r.e.rowOnly(ctx, c.Where) {
		return nil, nil, false
	}
	if _, ok := r.memoView(ctx, bk); !ok {
		return nil, nil, false
	}
	q := batchMinMaxSQL(r.table(c.Table).Name, c)
	vals, err := r.memoRow(ctx, q, q, 5, bk)
	if err != nil {
		return nil, nil, false // the combined query reports it
	}
	if len(olds) == 0 {
		return vals[0], vals[1], true
	}
	typ := strings.ToUpper(strings.TrimSpace(fmt.Sprint(vals[4])))
	old := olds[0]
	order := minMaxOrder(typ)
	if order == nil || strings.ToUpper(strings.TrimSpace(old.Type)) != typ {
		return nil, nil, false
	}
	// batchWins: the batch's value v (text t) is the answer against the
	// statistics' text o; sign -1 for the min, 1 for the max.
	batchWins := func(v, t any, o string, sign int) (bool, bool) {
		text, isText := t.(string)
		if v == nil || !isText {
			return false, true // the batch has no value: the statistics' is the answer
		}
		c, ok := order(text, o)
		if !ok || (c == 0 && text != o) {
			return false, false
		}
		return c*sign >= 0, true
	}
	loBatch, ok1 := batchWins(vals[0], vals[2], old.Min, -1)
	hiBatch, ok2 := batchWins(vals[1], vals[3], old.Max, 1)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	lo, hi = vals[0], vals[1]
	if !loBatch || !hiBatch {
		typed, ok := typedLiterals(typ, old.Min, old.Max)
		if !ok {
			var err error
			typed, err = r.literalRow(ctx, fmt.Sprintf("SELECT CAST(%s AS %s), CAST(%s AS %s)", quoteLiteral(old.Min), old.Type, quoteLiteral(old.Max), old.Type), 2)
			if err != nil {
				return nil, nil, false
			}
		}
		if !loBatch {
			lo = typed[0]
		}
		if !hiBatch {
			hi = typed[1]
		}
	}
	return lo, hi, true
}

// batchMinMaxSQL is batchMinMax's query: the min and max of c's column
// over the batch's rows (meeting its where), as values and as text, and
// their type.
func batchMinMaxSQL(table string, c Check) string {
	col := quoteIdent(c.Column)
	return fmt.Sprintf("SELECT min(%s), max(%s), CAST(min(%s) AS VARCHAR), CAST(max(%s) AS VARCHAR), typeof(min(%s)) FROM %s",
		col, col, col, col, col, filtered(schemaBatch, table, c.Where))
}

// typedLiterals is CAST(text AS typ) of each of texts as the driver scans
// it, where Go reads the text exactly as DuckDB's CAST does: the integer
// types up to BIGINT and UBIGINT in plain decimal, VARCHAR that is valid
// UTF-8 without NUL, DOUBLE in the decimal or exponent form DuckDB prints
// (Go's and DuckDB's parsing both round correctly). ok is false for the
// rest, which literalRow asks DuckDB (TestTypedLiteralsEqualDuckDB).
func typedLiterals(typ string, texts ...string) ([]any, bool) {
	out := make([]any, len(texts))
	for i, text := range texts {
		v, ok := typedLiteral(typ, text)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func typedLiteral(typ, text string) (any, bool) {
	if typ == "VARCHAR" {
		return text, utf8.ValidString(text) && !strings.ContainsRune(text, 0)
	}
	if typ == "DOUBLE" {
		if !plainDouble.MatchString(text) {
			return nil, false
		}
		f, err := strconv.ParseFloat(text, 64)
		return f, err == nil
	}
	if !plainInteger.MatchString(text) {
		return nil, false
	}
	signed := map[string]int{"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64}
	unsigned := map[string]int{"UTINYINT": 8, "USMALLINT": 16, "UINTEGER": 32, "UBIGINT": 64}
	if bits, ok := signed[typ]; ok {
		n, err := strconv.ParseInt(text, 10, bits)
		if err != nil {
			return nil, false
		}
		return map[int]any{8: int8(n), 16: int16(n), 32: int32(n), 64: n}[bits], true
	}
	if bits, ok := unsigned[typ]; ok {
		n, err := strconv.ParseUint(text, 10, bits)
		if err != nil {
			return nil, false
		}
		return map[int]any{8: uint8(n), 16: uint16(n), 32: uint32(n), 64: n}[bits], true
	}
	return nil, false
}

var (
	plainInteger = regexp.MustCompile(`^-?[0-9]{1,20}$`)
	plainDouble  = regexp.MustCompile(`^-?(inf|[0-9]{1,400}(\.[0-9]{1,400})?(e[-+]?[0-9]{1,3})?)$`)
)

// literalRow runs q, a query that reads no table, on the engine's pool,
// its answer memoized by its text.
func (r *run) literalRow(ctx context.Context, q string, n int) ([]any, error) {
	key := memoKey("literal", q)
	if v, ok := r.e.memo.get(key); ok {
		if vals := v.([]any); len(vals) == n {
			return append([]any(nil), vals...), nil
		}
	}
	r.e.statement(q)
	vals, err := scanValues(r.pool().QueryRowContext(ctx, q).Scan, n)
	if err == nil {
		r.e.memo.put(key, append([]any(nil), vals...), memoSize(vals))
	}
	return vals, err
}

func compareFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// runIncremental answers a planned table check that is not judged by the
// batch's scan (unique, volume_change), or reports false.
func (r *run) runIncremental(ctx context.Context, i int, c Check) (schemas.CheckResult, bool) {
	if r.inc == nil || !r.inc.planned[i] || r.inc.rows[i] {
		return schemas.CheckResult{}, false
	}
	start := time.Now()
	if err := r.viewErr(schemaBatch, c.Table); err != nil {
		return r.errored(c, err, time.Since(start)), true
	}
	it, err := r.incTableOf(ctx, c.Table)
	if err != nil {
		return r.errored(c, err, time.Since(start)), true
	}
	var res schemas.CheckResult
	switch c.Kind {
	case KindUnique:
		res = r.uniqueIncremental(ctx, it, c)
	case KindVolumeChange:
		res = r.volumeIncremental(ctx, it, c)
	default:
		return r.errored(c, fmt.Errorf("no incremental plan for %s", c.Kind), 0), true
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res, true
}

// volumeIncremental compares the state's row count (the unchanged files'
// and the batch's) with the base's (its files' statistics).
func (r *run) volumeIncremental(ctx context.Context, it *incTable, c Check) schemas.CheckResult {
	t := r.table(c.Table)
	q := aggregateSQL(schemaBatch, t.Name, nil)
	vals, err := r.memoRow(ctx, q, q, 1, viewKey{schemaBatch, strings.ToLower(t.Name)})
	if err != nil {
		return r.errored(c, err, 0)
	}
	total := it.oldRows("") + asInt(vals[0])
	objs, err := r.listRead(ctx, r.req.BaseRef, t.Path) // tableFiles copies it
	if err != nil {
		return r.errored(c, fmt.Errorf("list table %s at %s: %w", t.Name, r.req.BaseRef, err), 0)
	}
	objs = tableFiles(t.Path, objs)
	for j := range objs {
		objs[j].at = r.req.BaseRef
	}
	// The base's files are summed up as the unchanged ones are: a kept
	// summary of them, or of all but those gained since, answers.
	sum, sts, err := r.summarize(ctx, t, objs, statsNeed{})
	if err != nil {
		return r.errored(c, err, 0)
	}
	var base int64
	if sum != nil {
		base = sum.rows
	} else {
		for _, st := range sts {
			base += st.Rows
		}
	}
	res := r.volumeJudged(c, total, base)
	counted(&res, kindOf(c), total, nil) // as the full audit's scan counts it
	return res
}

// uniqueIncremental counts a unique check's duplicates as the whole table
// would: the unchanged files' keys are unique (they passed), so the extra
// occurrences are the batch's among themselves plus its distinct keys that
// an unchanged file already holds. Only the unchanged files whose key range
// can hold a batch key are read, and only their key columns.
func (r *run) uniqueIncremental(ctx context.Context, it *incTable, c Check) schemas.CheckResult {
	t := r.table(c.Table)
	cols := c.columns()
	first := quoteIdent(cols[0])
	keys := strings.Join(each(cols, quoteIdent), ", ")
	batch := viewKey{schemaBatch, strings.ToLower(t.Name)}
	q := uniqueBatchSQL(t.Name, c)
	vals, err := r.memoRow(ctx, q, q, 6, batch)
	if err != nil {
		if missing := r.missingColumnIn(ctx, schemaBatch, c); missing != nil {
			err = missing
		}
		return r.errored(c, err, 0)
	}
	batchRows, dup := asInt(vals[0]), asInt(vals[1])
	batchNonNull := asInt(vals[2])
	lo, _ := vals[3].(string)
	hi, _ := vals[4].(string)
	typ := fmt.Sprint(vals[5])
	total := it.oldRows("") + batchRows
	// The unchanged files that can hold a batch key.
	var overlap []Object
	col := statColumn(c).key()
	batchNulls := batchRows > batchNonNull
	var kc *keyColumn // the summary's figures of col, file by file (summary.go)
	if it.sum != nil {
		kc = it.sum.keys[col]
	}
	if kc != nil {
		br := newBatchRange(typ, lo, hi)
		for j, kf := range kc.files {
			canNull := len(cols) > 1 && batchNulls && kf.nonNull < kf.rows // NULLs compare equal in a combination
			if canNull {
				overlap = append(overlap, it.old[j])
				continue
			}
			if batchNonNull == 0 || kf.nonNull == 0 {
				continue
			}
			// rangesMeet, with the figures parsed once per summary.
			if kf.meets(br) {
				overlap = append(overlap, it.old[j])
			}
		}
	} else {
		for j, st := range it.oldStats {
			cs := st.Cols[col]
			canNull := len(cols) > 1 && batchNulls && cs.NonNull < st.Rows // NULLs compare equal in a combination
			if canNull || (batchNonNull > 0 && cs.NonNull > 0 && rangesMeet(typ, lo, hi, cs)) {
				overlap = append(overlap, it.old[j])
			}
		}
	}
	overlap = r.holdingKeys(ctx, t, c, typ, it, overlap, batchNulls && len(cols) > 1)
	var collisions int64
	var samples []string
	if len(overlap) > 0 {
		// Downloaded if the memo does not answer (plan).
		local := r.plan(each(overlap, func(o Object) fetch { return fetch{ref: cmp.Or(o.at, r.req.Ref), obj: o} }))
		union := noHive
		if len(local) > 1 {
			union += ", union_by_name = true"
		}
		// The files' own columns (SELECT *), and a key column they all lack
		// NULL, as the table reads it (union by name with the batch's keys,
		// no rows): read_parquet alone also has virtual columns
		// (file_row_number, filename, file_index), which stood for it
		// (TestReview37OldKeysReadHasOnlyTheFilesColumns).
		old := fmt.Sprintf("(SELECT %s FROM ((SELECT * FROM read_parquet(%s%s)) UNION ALL BY NAME (SELECT %s FROM %s LIMIT 0)))",
			keys, literalList(slices.Compact(slices.Sorted(slices.Values(local)))), union, keys, qualified(schemaBatch, t.Name))
		on := strings.Join(each(cols, func(k string) string {
			return "b." + quoteIdent(k) + " IS NOT DISTINCT FROM o." + quoteIdent(k)
		}), " AND ")
		distinct := fmt.Sprintf("(SELECT DISTINCT %s FROM %s", keys, qualified(schemaBatch, t.Name))
		if len(cols) == 1 {
			distinct += " WHERE " + first + " IS NOT NULL"
		}
		distinct += ")"
		q := fmt.Sprintf("SELECT count(*) FROM %s b SEMI JOIN %s o ON %s", distinct, old, on)
		// The unchanged files are named in q: the key names their identities.
		keyText, _ := r.memoIDs(q, overlap, local)
		vals, err := r.memoRow(ctx, q, keyText, 1, batch)
		if err != nil {
			return r.errored(c, err, 0)
		}
		collisions = asInt(vals[0])
		if dup+collisions > 0 {
			samples = r.uniqueSamples(ctx, t, c, old, on)
		}
	} else if dup > 0 {
		samples = r.uniqueSamples(ctx, t, c, "", "")
	}
	dup += collisions
	v := []any{dup}
	if len(cols) == 1 {
		// pandas' reading of the whole column (pandasfloat.go), from the
		// unchanged files' statistics and the batch's figures.
		nonNull, in, wide := batchNonNull, intRange{}, typ
		if integerType(typ) {
			in.add(lo, hi)
		}
		if kc != nil {
			nonNull += kc.nonNull
			in.widen(kc.ints)
			wide = cmp.Or(kc.wide, wide)
		} else {
			for _, st := range it.oldStats {
				cs := st.Cols[col]
				nonNull += cs.NonNull
				if integerType(cs.Type) {
					in.add(cs.Min, cs.Max)
					wide = cs.Type
				}
			}
		}
		if integerType(typ) {
			wide = typ
		}
		text := func(b *big.Int) any {
			if b == nil {
				return nil
			}
			return b.String()
		}
		v = append(v, nonNull, text(in.lo), text(in.hi), wide)
	}
	res := checkKinds[KindUnique].judge(r, ctx, c, total, v)
	if res.Status != schemas.StatusPass && res.Status != schemas.StatusError {
		res.SampleRows = samples
		if collisions > 0 {
			res.Message = strings.TrimSpace(res.Message + fmt.Sprintf(" %d of the batch's keys are already in the table (in %s)",
				collisions, listed(each(overlap, func(o Object) string { return o.Path }), 5)))
		}
	}
	return res
}

// uniqueBatchSQL is uniqueIncremental's query over the batch's rows: its
// rows, the extra occurrences of its keys, the rows with a first key
// column, that column's min and max as text, and its type.
func uniqueBatchSQL(table string, c Check) string {
	cols := c.columns()
	first := quoteIdent(cols[0])
	inner := fmt.Sprintf("count(%s) - count(DISTINCT %s)", first, first)
	if len(cols) > 1 {
		inner = fmt.Sprintf("count(*) - count(DISTINCT (%s))", strings.Join(each(cols, quoteIdent), ", "))
	}
	return fmt.Sprintf("SELECT count(*), %s, count(%s), CAST(min(%s) AS VARCHAR), CAST(max(%s) AS VARCHAR), typeof(min(%s)) FROM %s",
		inner, first, first, first, first, qualified(schemaBatch, table))
}

// holdingKeys narrows files (unchanged files whose key range meets the
// batch's) to those whose range holds one of the batch's keys: a range
// join of the batch's distinct keys with the files' ranges. On any error
// it keeps them all (they are read; nothing is skipped on a doubt). With
// nulls (a combination key whose first column is NULL in the batch) a file
// with NULLs is kept too. A file whose statistics are of another type than
// the batch's keys (sameKeyOrder) is kept: its range, cast to the batch's
// type, need not hold its keys in that type's order (BIGINT 9 to 10 is
// the text '9' to '10', which does not hold '10'), while read whole the
// table compares them in the type of the union.
func (r *run) holdingKeys(ctx context.Context, t Table, c Check, typ string, it *incTable, files []Object, nulls bool) []Object {
	if len(files) < 2 || !typeName.MatchString(typ) || nulls {
		return files
	}
	idx := map[string]int{}
	for j, o := range it.old {
		idx[o.Path] = j
	}
	col := statColumn(c).key()
	var ranges []string
	kept := make([]bool, len(files))
	for f, o := range files {
		cs := it.oldStats[idx[o.Path]].Cols[col]
		if cs.Min == "" || cs.Max == "" {
			return files
		}
		if !sameKeyOrder(typ, cs.Type) {
			kept[f] = true
			continue
		}
		ranges = append(ranges, fmt.Sprintf("(%d, CAST(%s AS %s), CAST(%s AS %s))", f, quoteLiteral(cs.Min), typ, quoteLiteral(cs.Max), typ))
	}
	if len(ranges) == 0 {
		return files
	}
	k := quoteIdent(c.columns()[0])
	q := fmt.Sprintf("SELECT DISTINCT f FROM (VALUES %s) r(f, lo, hi) JOIN (SELECT DISTINCT %s AS k FROM %s WHERE %s IS NOT NULL) b ON b.k BETWEEN r.lo AND r.hi ORDER BY f",
		strings.Join(ranges, ", "), k, qualified(schemaBatch, t.Name), k)
	hit, err := firstColumn[int64](ctx, r.conn, q)
	if err != nil {
		r.log.Debug("audit: key ranges not narrowed", "err", err)
		return files
	}
	for _, f := range hit {
		kept[f] = true
	}
	var out []Object
	for f, o := range files {
		if kept[f] {
			out = append(out, o)
		}
	}
	return out
}

// sameKeyOrder says whether a file's key range, stored as text of type
// ftyp, keeps its order and equalities cast to the batch's key type typ:
// the same type, or integers both. Statistics take the type of the scan
// that computed them, which a file of another type in that scan widens
// (union by name), so a file's type is not known to be its own.
func sameKeyOrder(typ, ftyp string) bool {
	typ, ftyp = strings.ToUpper(strings.TrimSpace(typ)), strings.ToUpper(strings.TrimSpace(ftyp))
	return typ == ftyp || integerType(typ) && integerType(ftyp)
}

// uniqueSamples are the most duplicated keys of the table, as uniqueSQL
// gives them: only keys of the batch can be duplicated, so they are counted
// over the batch's rows and the overlapping unchanged files (old).
func (r *run) uniqueSamples(ctx context.Context, t Table, c Check, old, on string) []string {
	cols := c.columns()
	keys := strings.Join(each(cols, quoteIdent), ", ")
	counted, order := "true", "row("+keys+")"
	if len(cols) == 1 {
		counted, order = quoteIdent(cols[0])+" IS NOT NULL", quoteIdent(cols[0])
	}
	rows := fmt.Sprintf("SELECT %s FROM %s", keys, qualified(schemaBatch, t.Name))
	if old != "" {
		rows += fmt.Sprintf(" UNION ALL BY NAME SELECT o.* FROM %s o SEMI JOIN (SELECT %s FROM %s) b ON %s", old, keys, qualified(schemaBatch, t.Name), on)
	}
	fields := each(cols, func(col string) string { return quoteLiteral(col) + ": " + quoteIdent(col) })
	q := fmt.Sprintf("SELECT coalesce(CAST(to_json(min_by({%s, 'duplicate_count': n}, {'o': -n, 'k': %s}, %d)) AS VARCHAR), '[]') "+
		"FROM (SELECT %s, count(*) AS n FROM (%s) GROUP BY %s) g WHERE n > 1 AND %s",
		strings.Join(fields, ", "), order, r.e.opts.SampleRows, keys, rows, keys, counted)
	var s any
	if err := r.conn.QueryRowContext(ctx, q).Scan(&s); err != nil {
		return nil
	}
	out, _ := jsonRows(s)
	return out
}

// rangesMeet reports whether a file's key range can hold a key in [lo, hi]
// (the batch's, of type typ). Ranges compare as integers or text; of any
// other type, or when types differ in kind, they are taken to meet.
func rangesMeet(typ, lo, hi string, cs colStats) bool {
	if cs.Min == "" || cs.Max == "" || lo == "" || hi == "" {
		return true
	}
	switch {
	case integerType(typ) && integerType(cs.Type):
		l, e1 := strconv.ParseInt(lo, 10, 64)
		h, e2 := strconv.ParseInt(hi, 10, 64)
		fl, e3 := strconv.ParseInt(cs.Min, 10, 64)
		fh, e4 := strconv.ParseInt(cs.Max, 10, 64)
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return true
		}
		return fl <= h && l <= fh
	case typ == "VARCHAR" && cs.Type == "VARCHAR":
		return cs.Min <= hi && lo <= cs.Max
	}
	return true
}

func integerType(t string) bool {
	switch strings.ToUpper(t) {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT":
		return true
	}
	return false
}

// missingColumnIn names a column check c reads that its table lacks in
// schema, or nil.
func (r *run) missingColumnIn(ctx context.Context, schema string, c Check) error {
	cols, err := r.describe(ctx, schema, c.Table)
	if err != nil {
		return err
	}
	for _, want := range c.columns() {
		if _, ok := findColumn(cols, want); !ok {
			return fmt.Errorf("table %s has no column %q (columns: %s)", c.Table, want, strings.Join(columnNames(cols), ", "))
		}
	}
	return nil
}
