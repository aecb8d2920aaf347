package audit

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// What is merged is what was audited. The merge takes every object a batch
// changes under a table's path; the audit reads only the table's files
// (not names starting with _ or ., not objects claiming size 0, for Delta
// only the files the log names). DuckDB's globs and Polars read the rest,
// so every changed object under an audited table's path must have been read
// by the audit, or be a marker (Table.Markers). Anything else fails the
// check unaudited_objects, which names the paths, and the batch is aborted.

// KindUnaudited is the kind of the result that names unaudited objects.
const KindUnaudited = schemas.KindUnauditedObjects

// DefaultMarkers are the writers' marker objects a table may have without
// the audit reading them, when the table lists none: Spark's and Hadoop's
// job markers. A Delta table's _delta_log/ is read by the log reader.
// A default marker has no extension: a data file named like one
// (_committed_x.parquet) is read by readers' globs and is not a marker.
var DefaultMarkers = []string{"_SUCCESS", "_committed_*", "_started_*"}

// maxUnauditedPaths bounds how many paths the result names.
const maxUnauditedPaths = 20

// markers are the table's marker patterns.
func (t Table) markers() []string {
	if t.Markers == nil {
		return DefaultMarkers
	}
	return t.Markers
}

func validPattern(p string) bool {
	_, err := path.Match(p, "")
	return p != "" && err == nil
}

// isMarker says whether rel (a path relative to the table) matches one of
// the patterns, as a whole or by its base name.
func isMarker(patterns []string, rel string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		if ok, _ := path.Match(p, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

// unaudited checks, for each table of the suite, that every object the ref
// changes under its path against the base was read (for a table no check
// reads, none was). It
// needs a base; without one (an audit of a ref alone) there is no batch.
func (r *run) unaudited(ctx context.Context) []schemas.CheckResult {
	if r.req.BaseRef == "" || r.req.BaseRef == r.req.Ref {
		return nil
	}
	var out []schemas.CheckResult
	for _, t := range r.req.Suite.Tables {
		key := strings.ToLower(t.Name)
		var views []*view
		for _, s := range []string{schemaMain, schemaBatch} {
			if v := r.views[viewKey{s, key}]; v != nil {
				views = append(views, v)
			}
		}
		if slices.ContainsFunc(views, func(v *view) bool { return v.broken }) {
			continue // its checks already error
		}
		// A table no check reads (no view) had nothing read: every object
		// the batch changed under it is unaudited.
		read := map[string]bool{}
		for _, v := range views {
			for _, o := range v.objects {
				read[o.Path] = true
			}
		}
		changed, err := r.changed(ctx, t.Path)
		res := schemas.CheckResult{Name: KindUnaudited + "(" + t.Name + ")", Kind: KindUnaudited, Table: t.Name, Severity: SeverityError,
			Threshold: "every changed object under " + t.Path + " read by the audit, or a marker (" + strings.Join(t.markers(), ", ") + ")"}
		if err != nil {
			r.failedToRead(&res, "list the changes under "+t.Path, err)
			out = append(out, res)
			continue
		}
		var stray []string
		logDir := deltaLogDir(t.Path)
		for _, o := range changed {
			rel := strings.TrimPrefix(strings.TrimPrefix(o.Path, strings.TrimSuffix(t.Path, "/")), "/")
			switch {
			case read[o.Path], isMarker(t.markers(), rel) && (t.Markers != nil || !strings.Contains(path.Base(rel), ".")):
			case t.format() == FormatDelta && (strings.HasPrefix(o.Path, logDir) || r.deltaNamed(t, o.Path)):
				// The log reader read the log; change data files were
				// compared with the data.
			default:
				stray = append(stray, o.Path)
			}
		}
		if len(stray) == 0 {
			continue // nothing to say: the report keeps its shape
		}
		slices.Sort(stray)
		res.Status = schemas.StatusFail
		res.Observed = fmt.Sprintf("%d changed objects not read by the audit: %s", len(stray), listed(stray, maxUnauditedPaths))
		res.Message = "readers that list the table's path (DuckDB globs, Polars, Spark reading Parquet) would read them on the target"
		if len(views) == 0 {
			res.Message = "no check of the suite reads table " + t.Name + ", so nothing under its path was audited; " + res.Message
		}
		out = append(out, res)
	}
	return out
}

// deltaNamed says whether obj, changed by the batch and not read, is a
// file a commit of the batch added and a later one removed (no reader of
// the table's latest version reads it), or a change data file of the
// batch's versions that the audit compared with the data
// (deltaChangeData). A file only the base's versions name (removed since)
// is not: time travel to those versions, and streaming and CDF readers
// that have not read them yet, read its bytes, which were read by the
// audit that published them, not these (TestDeltaRemovedFileRewrittenInPlaceIsUnaudited).
func (r *run) deltaNamed(t Table, obj string) bool {
	s, ok := r.deltaSnaps[r.req.Ref+"\x00"+strings.ToLower(t.Name)]
	if !ok || s.snap == nil {
		return false
	}
	if _, cdc := s.snap.changeData[obj]; cdc {
		return true
	}
	v, added := s.snap.addedIn[obj]
	return s.snap.named[obj] && added && v > s.snap.base
}

// failedToRead makes res an error result saying what could not be read,
// and the audit's infrastructure error (retried, never published).
func (r *run) failedToRead(res *schemas.CheckResult, what string, err error) {
	res.Status, res.Message = schemas.StatusError, what+": "+err.Error()
	if r.infra == nil {
		r.infra = fmt.Errorf("%w: %s: %w", ErrInfrastructure, res.Name, err)
	}
}
