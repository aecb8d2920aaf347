package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// lakeFS's merge (v1.84.0, pkg/graveler/committed/merge.go) can leave the
// target without a path neither side deleted. When one side has no entries
// left (handleAll), it writes each remaining entry of the other side unless
// the merge-base's next entry from that key on has the same identity, and
// it does not check that this base entry has the same key. A path one side
// added, whose claimed checksum and size are those of the next path the
// merge-base holds, which the other side deleted, is dropped: a batch that
// deletes a file can take away a file an earlier publish brought, and main
// then holds neither what that publish audited nor what the recheck of this
// one audited (the recheck's model of the merge, mergedObjects, keeps the
// path). When both sides added a path with different identities, the same
// comparison makes the merge keep one of them where it should report a
// conflict. Neither can be told from lakeFS's answer, so the recheck
// refuses a batch whose merge could meet either: merge_hazard, one result
// per table, failing with the paths.

// KindMergeHazard is the kind of the result that names paths lakeFS's
// merge could drop or resolve against the recheck's model of it.
const KindMergeHazard = "merge_hazard"

// Successor is a Source that finds the first object of a ref after a path,
// whatever its prefix: the merge-base's next path beyond a table's.
type Successor interface {
	After(ctx context.Context, repo, ref, after string) (Object, bool, error)
}

// FirstUnder is a Source that finds the first object of a ref whose path
// starts with a prefix (path order), asking for one entry: merge_hazard
// looks at one path of a ref so (the path itself sorts first of those it
// prefixes). Without it the path is listed as a prefix, everything under
// it: a writer's 5,000 objects named after one path were all listed to
// look at it (TestLimits63MergeHazardsAskOneEntryOfAPath).
type FirstUnder interface {
	FirstUnder(ctx context.Context, repo, ref, prefix string) (Object, bool, error)
}

// firstUnder is the first object of ref whose path starts with prefix.
func (r *run) firstUnder(ctx context.Context, ref, prefix string) (Object, bool, error) {
	if fu, ok := r.e.opts.Source.(FirstUnder); ok {
		return fu.FirstUnder(ctx, r.req.Repository, ref, prefix)
	}
	objs, err := r.e.opts.Source.List(ctx, r.req.Repository, ref, prefix)
	if err != nil || len(objs) == 0 {
		return Object{}, false, err
	}
	return slices.MinFunc(objs, func(a, b Object) int { return strings.Compare(a.Path, b.Path) }), true, nil
}

// objectAt is the object at path of ref, if ref holds one.
func (r *run) objectAt(ctx context.Context, ref, path string) (Object, bool, error) {
	o, ok, err := r.firstUnder(ctx, ref, path)
	if err != nil || !ok || o.Path != path {
		return Object{}, false, err
	}
	return o, true, nil
}

// mergeHazards checks, for an audit onto the target (a recheck), each
// table's paths for the merge's hazard above: a path one side (the sealed
// commit or the target's head) holds and the foundation does not, whose
// claimed checksum and size are those of the foundation's next path after
// it, while the other side holds no path from it on under the table (it may
// have run out there) or holds it with another checksum or size. The check
// is wider than the merge's condition (the other side may still hold paths
// beyond the table): it refuses some batches the merge would have taken
// whole, never one it would not. Each table's result also names the
// target's paths before the table the merge could drop when the batch
// empties it (hazardsBefore); the first table's, those before the paths
// the batch deletes outside its tables (hazardsBeforeRemovals) and those it
// adds there (hazardsAdded), from its whole diff (batchChanges).
func (r *run) mergeHazards(ctx context.Context) []schemas.CheckResult {
	if !r.req.Onto || r.e.opts.History == nil || r.req.BaseRef == "" {
		return nil
	}
	repo := r.req.Repository
	foundation, ferr := r.e.opts.History.MergeBase(ctx, repo, r.req.Ref, r.req.BaseRef)
	var out []schemas.CheckResult
	for i, t := range r.req.Suite.Tables {
		res := schemas.CheckResult{Name: KindMergeHazard + "(" + t.Name + ")", Kind: KindMergeHazard, Table: t.Name, Severity: SeverityError,
			Threshold: "no path under " + t.Path + " that lakeFS's merge could drop or keep against the model the recheck audited"}
		if ferr != nil {
			r.failedToRead(&res, "the merge-base of the audited commit and "+r.baseName(), ferr)
			out = append(out, res)
			continue
		}
		var lists [3][]Object
		var err error
		for i, ref := range []string{foundation, r.req.Ref, r.req.BaseRef} {
			if lists[i], err = r.listRead(ctx, ref, t.Path); err != nil { // read only
				break
			}
		}
		if err != nil {
			res.Status, res.Message = schemas.StatusError, "list "+t.Path+" at the foundation, the audited commit and "+r.baseName()+": "+err.Error()
			if r.infra == nil && !errors.As(err, new(errOverBudget)) {
				r.infra = fmt.Errorf("%w: %s: %w", ErrInfrastructure, res.Name, err)
			}
			out = append(out, res)
			continue
		}
		beyond := func() (Object, bool, error) { return r.baseBeyond(ctx, foundation, t.Path, lists[0]) }
		paths, err := mergeHazardPaths(lists[0], lists[1], lists[2], beyond)
		if err != nil {
			r.failedToRead(&res, "the foundation's first path after "+t.Path, err)
			out = append(out, res)
			continue
		}
		before, unchecked, err := r.hazardsBefore(ctx, foundation, t.Path, lists[0], lists[1])
		if r.hazardsCut(&res, err, "the target's paths before "+t.Path, unchecked,
			"the batch empties the table and holds nothing after it, so lakeFS's merge could drop a path the target added before it") {
			out = append(out, res)
			continue
		}
		paths = append(paths, before...)
		if i == 0 {
			// Paths the merge could drop before the allowed paths the batch
			// deletes and among those it adds, reported with the first table.
			c, unchecked, err := r.batchChanges(ctx, foundation)
			if r.hazardsCut(&res, err, "the batch's changes since the foundation", unchecked,
				"the batch's changes outside its tables could not all be read, so the paths lakeFS's merge could drop there were not looked at") {
				out = append(out, res)
				continue
			}
			outside, unchecked, err := r.hazardsBeforeRemovals(ctx, foundation, c)
			if r.hazardsCut(&res, err, "the target's paths before the batch's deleted paths", unchecked,
				"the batch deletes paths outside its tables and holds nothing after them, so lakeFS's merge could drop a path the target added before them") {
				out = append(out, res)
				continue
			}
			paths = append(paths, outside...)
			added, unchecked, err := r.hazardsAdded(ctx, foundation, c)
			if r.hazardsCut(&res, err, "the paths the batch adds outside its tables", unchecked,
				"the batch adds paths outside its tables with the claimed checksum and size of the foundation's next path, so lakeFS's merge could drop them") {
				out = append(out, res)
				continue
			}
			paths = append(paths, added...)
			both, unchecked, err := r.hazardsBothAdded(ctx, foundation, c)
			if r.hazardsCut(&res, err, "the target's paths the batch adds outside its tables", unchecked,
				"the batch adds paths outside its tables that the target may have added too, so lakeFS's merge could keep the batch's copy where it should conflict") {
				out = append(out, res)
				continue
			}
			paths = append(paths, both...)
			slices.Sort(paths)
			paths = slices.Compact(paths)
		}
		if len(paths) == 0 {
			continue // nothing to say: the report keeps its shape
		}
		res.Status = schemas.StatusFail
		res.Observed = fmt.Sprintf("%d paths lakeFS's merge could drop or keep against the audited model: %s", len(paths), listed(paths, maxUnauditedPaths))
		res.Message = "each was added on one side with the claimed checksum and size of the foundation's next path, and lakeFS's merge compares " +
			"such an entry with that path without comparing their names: it can drop the added path, or keep one side's where it should conflict, " +
			"so main would not hold what the recheck audited"
		out = append(out, res)
	}
	return out
}

// mergeHazardPaths are the hazardous paths of one table given its listings
// at the foundation (f), the sealed commit (s) and the target's head (h);
// beyond is the foundation's first path after the table's. The listings
// are walked side by side, in path order (lakeFS lists in that order), so
// the check costs a few comparisons per file and allocates nothing; it is
// in the publish turn.
func mergeHazardPaths(f, s, h []Object, beyond func() (Object, bool, error)) ([]string, error) {
	f, s, h = byPathOrder(f), byPathOrder(s), byPathOrder(h)
	var out []string
	var next *Object // beyond's answer, asked once
	var none bool
	side := func(x, y []Object) error {
		j, k := 0, 0 // f's and y's first paths not before x's path
		for _, o := range x {
			p := o.Path
			for j < len(f) && f[j].Path < p {
				j++
			}
			if j < len(f) && f[j].Path == p {
				continue // a changed path meets the base's entry of its own name
			}
			for k < len(y) && y[k].Path < p {
				k++
			}
			ranOut := k == len(y) // the other side holds no path from p on here
			inY := !ranOut && y[k].Path == p
			if !ranOut && !(inY && (y[k].Checksum != o.Checksum || y[k].Size != o.Size)) {
				continue
			}
			var q Object
			if j < len(f) { // the foundation's next path after p
				q = f[j]
			} else {
				if next == nil && !none {
					n, ok, err := beyond()
					if err != nil {
						return err
					}
					next, none = &n, !ok
				}
				if none {
					continue
				}
				q = *next
			}
			if q.Checksum == o.Checksum && q.Size == o.Size {
				out = append(out, p)
			}
		}
		return nil
	}
	if err := side(s, h); err != nil {
		return nil, err
	}
	if err := side(h, s); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// byPathOrder is objs in ascending path order, one entry per path (the
// last of a path's, as a map by path keeps): objs itself when it is so
// already, as lakeFS lists, else a sorted copy.
func byPathOrder(objs []Object) []Object {
	if pathOrdered(objs) {
		return objs
	}
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	w := 0
	for i := range out {
		if i+1 < len(out) && out[i+1].Path == out[i].Path {
			continue // a later entry of the same path follows
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}

// maxHazardDiffs bounds the target's changes since the foundation read to
// look for paths before a table that a batch emptying it could make
// lakeFS's merge drop (hazardsBefore); with more, the check fails.
const maxHazardDiffs = 10000

// hazardsBefore are the paths before the table under prefix that lakeFS's
// merge could drop when the audited commit (s, its listing of the table)
// empties the table the foundation held (f) and holds nothing after it:
// then the merge runs out of the audited commit's entries at such a path,
// and a path the target added there, with the claimed checksum and size of
// the foundation's next path (the table's first, which the batch deleted),
// is dropped as if the batch had deleted it: another dataset's published
// file just before this table (review 9). Every path the target changed
// since the foundation (lakeFS's two-dot diff) is looked at, at most
// maxHazardDiffs. Like mergeHazardPaths it is wider than the merge's
// condition: it refuses some merges lakeFS would have made whole.
func (r *run) hazardsBefore(ctx context.Context, foundation, prefix string, f, s []Object) (paths []string, unchecked string, err error) {
	succ, ok := r.e.opts.Source.(Successor)
	d, ok2 := r.e.opts.Source.(Differ)
	if len(s) > 0 || len(f) == 0 || !ok || !ok2 {
		return nil, "", nil
	}
	repo, sealed, head := r.req.Repository, r.req.Ref, r.req.BaseRef
	if _, found, err := succ.After(ctx, repo, sealed, prefix); err != nil || found {
		return nil, "", err // the audited commit holds paths after the table: the merge does not run out before it
	}
	diffs, truncated, err := d.Differences(ctx, repo, foundation, head, "", maxHazardDiffs)
	if err != nil {
		return nil, "", err
	}
	if truncated {
		return nil, fmt.Sprintf("more than %d changes on %s since the foundation %s: the paths before %s could not be checked", maxHazardDiffs, r.baseName(), short(foundation), prefix), nil
	}
	first := byPathOrder(f)[0]
	var out []string
	for _, df := range diffs {
		if df.Removed || df.Path >= prefix {
			continue
		}
		at := func(ref string) (Object, bool, error) { return r.objectAt(ctx, ref, df.Path) }
		o, ok, err := at(head)
		if err != nil {
			return nil, "", err
		}
		if !ok || o.Checksum != first.Checksum || o.Size != first.Size {
			continue
		}
		// The merge runs out of the audited commit at o: it holds neither o
		// nor anything after it.
		if _, held, err := at(sealed); err != nil || held {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		if _, found, err := succ.After(ctx, repo, sealed, o.Path); err != nil || found {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		// The foundation's next path from o on is the table's first.
		if _, held, err := at(foundation); err != nil || held {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		if q, found, err := succ.After(ctx, repo, foundation, o.Path); err != nil {
			return nil, "", err
		} else if found && q.Path == first.Path {
			out = append(out, o.Path)
		}
	}
	return out, "", nil
}

// baseBeyond is the foundation's first path after those under prefix
// (objs, its listing there), found once per foundation and prefix.
func (r *run) baseBeyond(ctx context.Context, foundation, prefix string, objs []Object) (Object, bool, error) {
	succ, ok := r.e.opts.Source.(Successor)
	if !ok {
		return Object{}, false, nil // a Source that cannot tell: nothing to compare with
	}
	k := r.req.Repository + "\x00" + foundation + "\x00" + prefix
	if b, ok := r.e.beyond.get(k); ok {
		return b.obj, b.ok, nil
	}
	// Asked for once at a time: the recheck in the publish turn waits for
	// the answer PrepareRecheck is getting instead of asking again.
	b, err := r.e.beyondAsked.Do(ctx, k, func() (beyondPath, error) {
		if b, ok := r.e.beyond.get(k); ok {
			return b, nil // answered while this waited for the lock
		}
		after := prefix
		for _, o := range objs {
			if o.Path > after {
				after = o.Path
			}
		}
		o, found, err := succ.After(ctx, r.req.Repository, foundation, after)
		if err != nil {
			return beyondPath{}, err
		}
		if found && strings.HasPrefix(o.Path, prefix) {
			return beyondPath{}, fmt.Errorf("the first path after %s at %s is %s, under the table: the listing was short", after, foundation, o.Path)
		}
		r.e.beyond.put(k, beyondPath{o, found})
		return beyondPath{o, found}, nil
	})
	return b.obj, b.ok, err
}

// hazardsCut ends res when a look for paths the merge could drop failed
// (err, reading what) or met more changes than it looks at (unchecked:
// the batch fails, why), and reports whether it did.
func (r *run) hazardsCut(res *schemas.CheckResult, err error, what, unchecked, why string) bool {
	switch {
	case err != nil:
		r.failedToRead(res, what, err)
	case unchecked != "":
		res.Status, res.Observed = schemas.StatusFail, unchecked
		res.Message = why + "; too many changes to look at them all"
	default:
		return false
	}
	return true
}

// PrepareRecheck reads ahead what every recheck of req.Ref onto a head of
// its target asks about its foundation, whatever the head: each table's
// first path after the table's at the foundation (baseBeyond, one lakeFS
// call, kept per foundation), and, given the batch's diff (req.Changes),
// which paths it adds outside its tables claim the checksum and size of
// the foundation's next path (addedSuspects, kept per foundation and
// sealed commit). A publish waiting for its turn calls it, so
// that the recheck in the turn, which holds up every other publish into
// the target, does not wait for lakeFS there. Errors are left for the
// recheck to meet.
func (e *Engine) PrepareRecheck(ctx context.Context, req Request, foundation string) {
	if !IsCommitID(foundation) {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.runs.Add(1)
	e.mu.Unlock()
	defer e.runs.Done()
	r := &run{e: e, req: req, log: e.opts.Logger}
	for _, t := range req.Suite.Tables {
		objs, err := r.listRead(ctx, foundation, t.Path)
		if err != nil {
			return
		}
		if _, _, err := r.baseBeyond(ctx, foundation, t.Path, objs); err != nil {
			return
		}
	}
	_, _ = r.addedSuspects(ctx, foundation, req.Changes) // nothing without the runner's diff: the recheck takes it then
}

// beyondPath is a foundation's first path after a table's.
type beyondPath struct {
	obj Object
	ok  bool
}

// hazardsBeforeRemovals are the paths lakeFS's merge could drop before the
// paths outside the suite's tables that the audited commit deletes (an
// allowed_paths marker) when it holds nothing after the last of them: the
// merge then runs out of its entries there, and a path the target added
// since the foundation whose claimed checksum and size are those of the
// foundation's next path, one the audited commit deleted, is dropped as
// if the batch had deleted it (review 10:
// TestReview10DeletedAllowedPathDoesNotDropAnotherDatasetsFile, where
// another dataset's published file was lost). c is the batch's whole diff
// (batchChanges); with no such deletion, or a path the audited commit
// holds after the last one (one lakeFS call), nothing more is read; else,
// as hazardsBefore, the target's changes since the foundation, at most
// maxHazardDiffs.
func (r *run) hazardsBeforeRemovals(ctx context.Context, foundation string, c *Changes) (paths []string, unchecked string, err error) {
	succ, ok := r.e.opts.Source.(Successor)
	d, ok2 := r.e.opts.Source.(Differ)
	if c == nil || !c.Removals || !ok || !ok2 {
		return nil, "", nil
	}
	var last string
	for _, p := range c.Removed {
		if p > last && !slices.ContainsFunc(r.req.Suite.Tables, func(t Table) bool { return strings.HasPrefix(p, t.Path) }) {
			last = p // the tables' own are mergeHazardPaths' and hazardsBefore's
		}
	}
	if last == "" {
		return nil, "", nil
	}
	repo, sealed, head := r.req.Repository, r.req.Ref, r.req.BaseRef
	if _, found, err := succ.After(ctx, repo, sealed, last); err != nil || found {
		return nil, "", err // the merge does not run out before the deleted paths
	}
	diffs, truncated, err := d.Differences(ctx, repo, foundation, head, "", maxHazardDiffs)
	if err != nil {
		return nil, "", err
	}
	if truncated {
		return nil, fmt.Sprintf("more than %d changes on %s since the foundation %s: the paths before %s could not be checked", maxHazardDiffs, r.baseName(), short(foundation), last), nil
	}
	at := func(ref, path string) (Object, bool, error) { return r.objectAt(ctx, ref, path) }
	for _, df := range diffs {
		if df.Removed || df.Path >= last {
			continue
		}
		o, ok, err := at(head, df.Path)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		// The merge runs out of the audited commit at o: it holds neither o
		// nor anything after it, and the foundation does not hold o.
		if _, held, err := at(sealed, o.Path); err != nil || held {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		if _, found, err := succ.After(ctx, repo, sealed, o.Path); err != nil || found {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		if _, held, err := at(foundation, o.Path); err != nil || held {
			if err != nil {
				return nil, "", err
			}
			continue
		}
		// The foundation's next path, which the audited commit deleted (it
		// holds nothing from o on), claims o's identity.
		q, found, err := succ.After(ctx, repo, foundation, o.Path)
		if err != nil {
			return nil, "", err
		}
		if found && q.Checksum == o.Checksum && q.Size == o.Size {
			paths = append(paths, o.Path)
		}
	}
	return paths, "", nil
}

// maxAddedSuspects bounds the paths outside the tables a batch adds with
// the claimed checksum and size of the foundation's next path that a
// recheck looks at on the target (one lakeFS call per folder, two more for
// a suspect that call does not settle); with more, the check fails.
const maxAddedSuspects = 100

// hazardsAdded are the paths outside the suite's tables (allowed_paths)
// that the audited commit adds and lakeFS's merge could drop: as
// mergeHazardPaths does for the tables' paths, a path the batch adds whose
// claimed checksum and size are those of the foundation's next path, while
// the target holds no path from it on (the merge runs out of the target's
// entries there, and handleAll compares the path with that next path
// whatever its name) or holds it with another checksum or size (both
// added it: handleBothKeys keeps the target's). Main would not hold the
// batch's published file. The suspects depend on the foundation and the
// sealed commit alone (addedSuspects, read ahead by PrepareRecheck); the
// target is read only for them: its first path after a suspect's folder
// (one call per folder) settles a suspect that is the first the target
// could hold there (a marker in the batch's own folder), else a listing at
// the suspect and the target's next path after it (two calls more). A path
// the target added with the claimed checksum and size of the foundation's
// next path, which the batch added too at other bytes, is
// hazardsBothAdded's (lakeFS keeps the batch's entry, a conflict it does
// not report).
func (r *run) hazardsAdded(ctx context.Context, foundation string, c *Changes) (paths []string, unchecked string, err error) {
	suspects, err := r.addedSuspects(ctx, foundation, c)
	if err != nil || suspects.unchecked != "" || len(suspects.objs) == 0 {
		return nil, suspects.unchecked, err
	}
	succ := r.e.opts.Source.(Successor) // addedSuspects found none without it
	repo, head := r.req.Repository, r.req.BaseRef
	// The head's first path after a suspect's folder answers it in one call
	// when it is the suspect itself or a path after it (the head holds
	// nothing between); asked once per folder.
	firstIn := map[string]*Object{} // nil: the head holds nothing after the folder
	for _, o := range suspects.objs {
		dir := o.Path[:strings.LastIndex(o.Path, "/")+1]
		h, asked := firstIn[dir]
		if !asked {
			n, found, err := succ.After(ctx, repo, head, dir)
			if err != nil {
				return nil, "", err
			}
			if found {
				h = &n
			}
			firstIn[dir] = h
		}
		switch {
		case h == nil:
			paths = append(paths, o.Path) // the head holds nothing from o on
			continue
		case h.Path == o.Path:
			if h.Checksum != o.Checksum || h.Size != o.Size {
				paths = append(paths, o.Path) // both added it: lakeFS keeps the head's
			}
			continue
		case h.Path > o.Path:
			continue // the head holds a path after o and not o: the merge does not run out before it
		}
		// The head holds paths between the folder and o: ask about o itself
		// (one entry: o sorts first of the paths it prefixes).
		u, under, err := r.firstUnder(ctx, head, o.Path)
		if err != nil {
			return nil, "", err
		}
		if under && u.Path == o.Path {
			if u.Checksum != o.Checksum || u.Size != o.Size {
				paths = append(paths, o.Path)
			}
			continue
		}
		if under {
			continue // the head holds paths under o's: the merge does not run out before it
		}
		if _, found, err := succ.After(ctx, repo, head, o.Path); err != nil {
			return nil, "", err
		} else if !found {
			paths = append(paths, o.Path)
		}
	}
	return paths, "", nil
}

// addedSet is what addedSuspects found of a sealed commit on its
// foundation.
type addedSet struct {
	objs      []Object // the sealed commit's entries, in path order
	unchecked string
}

// addedSuspects are the paths outside the suite's tables that the audited
// commit adds (the foundation does not hold them) whose claimed checksum
// and size are those of the foundation's next path, with the audited
// commit's entries; c is the audited commit's whole diff (nil: nothing to
// look at). The added paths are walked in order, and one lakeFS call finds
// the foundation's next path for every added path before it (the
// foundation holds nothing between them); a path's size is compared first,
// from the diff, and only an equal one costs a listing of the audited
// commit and of the foundation at it. Kept per foundation and audited
// commit.
func (r *run) addedSuspects(ctx context.Context, foundation string, c *Changes) (addedSet, error) {
	succ, ok := r.e.opts.Source.(Successor)
	if c == nil || !c.Removals || !ok || !IsCommitID(foundation) {
		return addedSet{}, nil
	}
	var added []Object
	for _, o := range c.Objects {
		if !slices.ContainsFunc(r.req.Suite.Tables, func(t Table) bool { return strings.HasPrefix(o.Path, t.Path) }) {
			added = append(added, o) // the tables' own are mergeHazardPaths'
		}
	}
	if len(added) == 0 {
		return addedSet{}, nil
	}
	repo, sealed := r.req.Repository, r.req.Ref
	k := repo + "\x00" + foundation + "\x00" + sealed
	if s, ok := r.e.added.get(k); ok {
		return s, nil
	}
	return r.e.addedAsked.Do(ctx, k, func() (addedSet, error) {
		if s, ok := r.e.added.get(k); ok {
			return s, nil
		}
		at := func(ref, path string) (Object, bool, error) { return r.objectAt(ctx, ref, path) }
		added = byPathOrder(added)
		var out addedSet
		var next Object
		found := false
		asked := false
		for _, o := range added {
			if !asked || (found && next.Path <= o.Path) {
				var err error
				if next, found, err = succ.After(ctx, repo, foundation, o.Path); err != nil {
					return addedSet{}, err
				}
				asked = true
			}
			if !found || next.Size != o.Size {
				continue
			}
			s, held, err := at(sealed, o.Path)
			if err != nil {
				return addedSet{}, err
			}
			if !held || s.Checksum != next.Checksum || s.Size != next.Size {
				continue
			}
			if _, inF, err := at(foundation, o.Path); err != nil {
				return addedSet{}, err
			} else if inF {
				continue // changed, not added: the merge meets the foundation's entry of its own name
			}
			if len(out.objs) == maxAddedSuspects {
				out = addedSet{unchecked: fmt.Sprintf("more than %d paths outside the tables claim the checksum and size of %s's next path at the foundation %s: they could not all be checked",
					maxAddedSuspects, short(sealed), short(foundation))}
				break
			}
			out.objs = append(out.objs, s)
		}
		r.e.keepAdded(k, out)
		return out, nil
	})
}

// maxAddedSetBytes bounds a set addedSuspects keeps (objectBytes of its
// entries): their paths, checksums and addresses are the batch's writer's
// (up to the lakeFS client's bounds), and 1,024 sets of 100 such entries
// were 338 MB (TestAddedSuspectSetsAreBoundedByTheirBytes). An honest set
// of 100 entries is about 30 KB.
const maxAddedSetBytes = 64 << 10

// keepAdded keeps s, what addedSuspects found for k, unless it is over
// maxAddedSetBytes: it is then found again when asked again.
func (e *Engine) keepAdded(k string, s addedSet) {
	if objectBytes(s.objs)+len(s.unchecked) > maxAddedSetBytes {
		return
	}
	e.added.put(k, s)
}

// batchChanges is the audited commit's whole diff against the foundation,
// which merge_hazard takes the batch's paths outside its tables from: the
// request's when it has it (the runner's diff of the sealed commit from its
// foundation; a three-dot diff from a later head would leave out the paths
// the head holds alike), else lakeFS's two-dot diff of the foundation and
// the audited commit, at most maxHazardDiffs changes (with
// more, unchecked says so). Nil when the Source cannot diff.
func (r *run) batchChanges(ctx context.Context, foundation string) (*Changes, string, error) {
	if c := r.req.Changes; c != nil && c.Removals {
		return c, "", nil
	}
	d, ok := r.e.opts.Source.(Differ)
	if !ok {
		return nil, "", nil
	}
	diffs, truncated, err := d.Differences(ctx, r.req.Repository, foundation, r.req.Ref, "", maxHazardDiffs)
	if err != nil {
		return nil, "", err
	}
	if truncated {
		return nil, fmt.Sprintf("more than %d changes of %s since the foundation %s", maxHazardDiffs, short(r.req.Ref), short(foundation)), nil
	}
	c := &Changes{Removals: true}
	for _, df := range diffs {
		if df.Removed {
			c.Removed = append(c.Removed, df.Path)
		} else {
			c.Objects = append(c.Objects, Object{Path: df.Path, Size: df.Size})
		}
	}
	return c, "", nil
}

// maxBothAddedDiffs bounds the lakeFS diffs hazardsBothAdded asks for (one
// per folder of the batch's paths outside its tables); with more folders
// it asks one diff under their common prefix instead.
const maxBothAddedDiffs = 16

// hazardsBothAdded are the paths outside the suite's tables that both the
// audited commit and the target added since the foundation, where the
// target's copy claims the checksum and size of the foundation's next path
// and the batch's does not: lakeFS's handleBothKeys (equal keys, other
// identities) compares both with that next path whatever its name, finds
// the target's equal to it and writes the batch's entry, where a
// three-way merge reports a conflict. Main would lose a file another
// publish was announced to hold (another dataset's marker or sidecar under
// a shared allowed path). The other half, the batch's copy claiming the
// next path's identity (lakeFS keeps the target's), is hazardsAdded's.
// A path both added, or both changed from the foundation's entry, with the
// same claimed checksum and size is no conflict to lakeFS, which keeps the
// batch's entry: at another address, its bytes
// are compared with the target's (at most maxRelinkedCompared, within
// audit.max_bytes; the rest refused), since lakeFS's checksum of an upload
// is an MD5, whose collisions are public, and other bytes are refused.
// The target's changes are read with lakeFS's two-dot diff of the
// foundation and the head under each folder of the batch's added paths
// (one call per folder, at most maxBothAddedDiffs, else one under their
// common prefix; at most maxHazardDiffs changes, else the check fails);
// only a path both changed costs more: the three entries at it and the
// foundation's next path. A batch adding nothing outside its tables asks
// nothing.
func (r *run) hazardsBothAdded(ctx context.Context, foundation string, c *Changes) (paths []string, unchecked string, err error) {
	succ, ok := r.e.opts.Source.(Successor)
	d, ok2 := r.e.opts.Source.(Differ)
	if c == nil || !c.Removals || !ok || !ok2 {
		return nil, "", nil
	}
	added := map[string]bool{}
	var prefixes []string
	for _, o := range c.Objects {
		if slices.ContainsFunc(r.req.Suite.Tables, func(t Table) bool { return strings.HasPrefix(o.Path, t.Path) }) {
			continue // the tables' own are mergeHazardPaths'
		}
		added[o.Path] = true
		prefix := o.Path[:strings.LastIndex(o.Path, "/")+1]
		if prefix == "" {
			prefix = o.Path // a path at the root: the whole repository's diff is not needed
		}
		prefixes = append(prefixes, prefix)
	}
	if len(added) == 0 {
		return nil, "", nil
	}
	slices.Sort(prefixes)
	prefixes = slices.Compact(prefixes)
	if len(prefixes) > maxBothAddedDiffs {
		prefixes = []string{commonPrefix(prefixes)}
	}
	repo, sealed, head := r.req.Repository, r.req.Ref, r.req.BaseRef
	at := func(ref, path string) (Object, bool, error) { return r.objectAt(ctx, ref, path) }
	compared := 0 // paths both added alike whose bytes were compared
	for _, prefix := range prefixes {
		diffs, truncated, err := d.Differences(ctx, repo, foundation, head, prefix, maxHazardDiffs)
		if err != nil {
			return nil, "", err
		}
		if truncated {
			return nil, fmt.Sprintf("more than %d changes under %q on %s since the foundation %s: the paths the batch adds there could not be checked", maxHazardDiffs, prefix, r.baseName(), short(foundation)), nil
		}
		for _, df := range diffs {
			if df.Removed || !added[df.Path] {
				continue
			}
			added[df.Path] = false // under two prefixes: looked at once
			_, inF, err := at(foundation, df.Path)
			if err != nil {
				return nil, "", err
			}
			h, inH, err := at(head, df.Path)
			if err != nil {
				return nil, "", err
			}
			s, inS, err := at(sealed, df.Path)
			if err != nil {
				return nil, "", err
			}
			if !inH || !inS {
				continue // not both hold it (listed since the diff): nothing both added alike
			}
			if h.Checksum == s.Checksum && h.Size == s.Size {
				// Both added it, or both changed the foundation's entry,
				// alike to lakeFS, which keeps the batch's entry without a
				// conflict: the same bytes, or two that share an MD5 (an
				// upload's checksum) or a claimed checksum.
				if h.Address == s.Address {
					continue
				}
				if compared >= maxRelinkedCompared || s.Size > r.e.opts.MaxBytes/2 {
					paths = append(paths, df.Path) // not compared: refused
					continue
				}
				compared++
				same, err := r.sameBytes(ctx, s, h)
				if err != nil {
					return nil, "", err
				}
				if !same {
					paths = append(paths, df.Path)
				}
				continue
			}
			if inF {
				continue // both changed it otherwise: the merge meets the foundation's entry of its own name, a conflict
			}
			q, found, err := succ.After(ctx, repo, foundation, df.Path)
			if err != nil {
				return nil, "", err
			}
			if found && q.Checksum == h.Checksum && q.Size == h.Size {
				paths = append(paths, df.Path)
			}
		}
	}
	return paths, "", nil
}

// commonPrefix is the longest folder ("a/b/") all of paths lie under.
func commonPrefix(paths []string) string {
	p := paths[0]
	for _, q := range paths[1:] {
		n := 0
		for n < len(p) && n < len(q) && p[n] == q[n] {
			n++
		}
		p = p[:n]
	}
	return p[:strings.LastIndex(p, "/")+1]
}
