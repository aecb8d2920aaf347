package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// Listings of lakewap's own merges and seals, derived (the seals' at
// deriveOwnSeal). Each publish makes a new head
// of the target (its merge commit M of the sealed commit S onto the head
// H), and the next batch's recheck lists its tables at M: whole, that
// grows with the table. The engine derives that listing instead, when all
// of these hold, and lists whole otherwise:
//   - the runner made M itself by lakeFS's merge of S (RecordMerge; a merge
//     by anyone else, or one made before a restart, is not recorded: a
//     commit with any parents can be written by other means);
//   - M's parents are [H, S] (lakeFS's commit; commits are immutable);
//   - relinked_objects compared S with H under a table path holding the
//     prefix and found no relinked object whose bytes differ or that lies
//     outside the repository's data prefix (relinked);
//   - the listings of H and S under the prefix are held (listcache.go).
//
// Then listing(M) is listing(H) with each path of lakeFS's two-dot diff of
// H and M removed, or taken from listing(S). Why it holds: lakeFS's merger
// writes only entries (or whole ranges) of its source or its destination,
// so M holds at each path H's entry, S's, or nothing. A path the diff of H
// and M names has, in M, an entry of another identity than H's or none: S's
// entry, or nothing. A path it does not name has in M an entry of H's
// identity: H's own, or S's with the same claimed checksum and size at
// another address, whose bytes relinked_objects compared with H's (it
// downloads both by ref and path, so a derived listing of H does not fool
// it) and found equal. So every derived entry is M's, or one with M's
// path, checksum and size and the same bytes; by induction the same holds
// for listings derived from derived ones.
//
// The diff of H and M, not the batch's own diff (of its foundation and S)
// applied to H: lakeFS v1.84.0's merge compares an entry with the next
// entry of the merge-base, whatever its key, and drops an added path whose
// identity equals that of the next base path the other side deleted
// (TestMergeDropsAnAddedPathTheBatchesDiffNames), so "H with the batch's
// changes" is not always what lakeFS merged.

// Difference is one path whose entries differ between two commits.
type Difference struct {
	Path    string
	Removed bool
	Size    int64 // the entry's claimed size at the later commit; 0 when removed
}

// Differ is a Source that compares two commits as trees (lakeFS's two-dot
// diff), removals included: at most limit differences, truncated past it.
type Differ interface {
	Differences(ctx context.Context, repo, from, to, prefix string, limit int) (diffs []Difference, truncated bool, err error)
}

const (
	// maxDerivationRecords bounds each kind of record the derivation keeps
	// (own merges, cleared comparisons, commits read); the oldest goes
	// first.
	maxDerivationRecords = 4096
	// maxDerivationRecordBytes bounds one record (its repository, commit
	// ids and table paths); a larger one is not kept.
	maxDerivationRecordBytes = 1024
)

// derivations is what the engine keeps to derive listings of own merges.
type derivations struct {
	merges   *boundedMap[string]   // repo \x00 M -> S
	seals    *boundedMap[bool]     // repo \x00 S: lakewap's own seals
	cleared  *boundedMap[[]string] // repo \x00 S \x00 H -> table paths relinked_objects cleared
	against  *boundedMap[string]   // repo \x00 S -> the H relinked_objects last cleared S against
	mu       sync.Mutex            // guards derived, declined and each update of cleared
	derived  int                   // listings derived, for tests and logs
	declined int
}

func newDerivations() *derivations {
	return &derivations{merges: newBoundedMap[string](maxDerivationRecords), seals: newBoundedMap[bool](maxDerivationRecords),
		cleared: newBoundedMap[[]string](maxDerivationRecords), against: newBoundedMap[string](maxDerivationRecords)}
}

// RecordMerge tells the engine that lakewap itself merged the sealed
// commit into a target and lakeFS answered with the merge commit: the
// listings of that commit may be derived (see derive.go). Only commit ids
// are kept.
func (e *Engine) RecordMerge(repo, merge, sealed string) {
	if !IsCommitID(merge) || !IsCommitID(sealed) || len(repo)+len(merge)+len(sealed) > maxDerivationRecordBytes {
		return
	}
	e.derived.merges.put(repo+"\x00"+merge, sealed)
	e.deriveAhead(repo, merge, sealed)
}

const (
	// maxDerivingAhead bounds the own merges whose listings are derived
	// ahead at once; a merge recorded beyond it is derived when a run
	// needs it, as before.
	maxDerivingAhead = 2
	// aheadTimeout bounds one merge's derivation ahead.
	aheadTimeout = 30 * time.Second
)

// deriveAhead derives, in the background, the listings of lakewap's own
// merge of sealed that a recheck onto it will read: the tables
// relinked_objects cleared sealed against the merge's first parent. The
// next publish into the target rechecks its batch onto that merge inside
// its turn; derived ahead, its lakeFS reads (the merge commit, the
// two-dot diff of the head and the merge) overlap the turn's look at the
// target instead of following it. The derivation is derive's, with its
// conditions; one that does not hold leaves the listing to the run that
// needs it.
func (e *Engine) deriveAhead(repo, merge, sealed string) {
	if e.ahead == nil || e.opts.History == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	select {
	case e.ahead <- struct{}{}:
	default:
		return
	}
	// The flights of the tables the recheck of sealed cleared against the
	// head it was checked against are taken now, before the merge commit
	// is read: the next recheck, onto this merge, waits for them instead of
	// deriving them beside this.
	head, _ := e.derived.against.get(repo + "\x00" + sealed)
	paths, _ := e.derived.cleared.get(repo + "\x00" + sealed + "\x00" + head)
	var flights []listFlight
	var led []string
	for _, p := range paths {
		if _, ok := e.listings.shared(repo, merge, p); ok {
			continue
		}
		if fl, lead := e.flights.lead(repo, merge, p); lead {
			flights, led = append(flights, fl), append(led, p)
		}
	}
	if len(led) == 0 {
		<-e.ahead
		return
	}
	e.aheads.Add(1)
	go func() {
		defer e.aheads.Done()
		defer func() { <-e.ahead }()
		defer func() {
			for _, fl := range flights {
				fl.end()
			}
		}()
		defer func() {
			if v := recover(); v != nil {
				e.opts.Logger.Error("audit: deriving the listings of an own merge panicked", "commit", merge, "panic", v)
			}
		}()
		ctx, cancel := context.WithTimeout(e.bg, aheadTimeout)
		defer cancel()
		r := &run{e: e, req: Request{Repository: repo}, log: e.opts.Logger}
		// The two-dot diffs of the head and the merge are asked for
		// beside the merge commit, which says whether they are the ones
		// the derivation needs (its first parent is that head): lakeFS's
		// first reads of a fresh commit wait in its batched read, and so
		// wait once instead of twice. Not needed, they are dropped.
		if differ, ok := e.opts.Source.(Differ); ok && IsCommitID(head) {
			r.diffsAhead = map[[3]string]*diffAhead{}
			for _, p := range led {
				d := &diffAhead{done: make(chan struct{})}
				r.diffsAhead[[3]string{head, merge, p}] = d
				go func() {
					defer close(d.done)
					d.diffs, d.why = r.differencesNow(ctx, differ, head, merge, p)
				}()
			}
			defer func() {
				cancel()
				for _, d := range r.diffsAhead {
					<-d.done
				}
			}()
		}
		c, err := e.opts.History.Commit(ctx, repo, merge)
		if err != nil || c.ID != merge || len(c.Parents) != 2 || c.Parents[0] != head || c.Parents[1] != sealed {
			return // made on another head: the run that needs its listings derives them
		}
		for _, p := range led {
			if objs, ok := r.derive(ctx, merge, p); ok {
				e.listings.put(repo, merge, p, objs)
			}
		}
	}()
}

// WaitDerivingAhead waits for the listings being derived ahead
// (deriveAhead) to be done: for tests.
func (e *Engine) WaitDerivingAhead() { e.aheads.Wait() }

// clear records that relinked_objects compared ref with base under paths
// and found nothing to refuse, merged with what earlier calls recorded for
// the same comparison. A merged record over maxDerivationRecordBytes is
// not kept: the record stays as it was. The record is read and written
// under d.mu, so concurrent clears of one comparison lose no path.
func (d *derivations) clear(repo, ref, base string, paths []string) {
	if len(paths) == 0 || !IsCommitID(ref) || !IsCommitID(base) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := repo + "\x00" + ref + "\x00" + base
	old, _ := d.cleared.get(k)
	merged := slices.Clone(old)
	for _, p := range paths {
		if !slices.Contains(merged, p) {
			merged = append(merged, p)
		}
	}
	n := len(repo) + len(ref) + len(base)
	for _, p := range merged {
		n += len(p)
	}
	if len(merged) > len(old) && n <= maxDerivationRecordBytes {
		d.cleared.put(k, merged)
		old = merged
	}
	if len(old) > 0 {
		d.against.put(repo+"\x00"+ref, base) // the head ref was cleared against last
	}
}

// covers says whether relinked_objects cleared ref against base under a
// table path holding prefix.
func (d *derivations) covers(repo, ref, base, prefix string) bool {
	paths, _ := d.cleared.get(repo + "\x00" + ref + "\x00" + base)
	return slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(prefix, p) })
}

// commitsKept is History with the commits it read by id kept (a commit id
// names an immutable commit): the incremental audit's look at a foundation
// and the derivation's at a merge's parents read a commit once.
type commitsKept struct {
	History
	kept *boundedMap[CommitInfo] // repo \x00 id
}

const (
	// maxKeptCommits bounds the commits kept, maxKeptCommitBytes one of
	// them (ids, parents, metadata, message, committer): a larger one is
	// read again when asked for.
	maxKeptCommits     = 1024
	maxKeptCommitBytes = 4096
)

func (h commitsKept) Commit(ctx context.Context, repo, ref string) (CommitInfo, error) {
	k := repo + "\x00" + ref
	if c, ok := h.kept.get(k); ok {
		return c, nil
	}
	c, err := h.History.Commit(ctx, repo, ref)
	if err != nil || !IsCommitID(ref) || c.ID != ref || commitBytes(repo, c) > maxKeptCommitBytes {
		return c, err
	}
	c.Parents = slices.Clone(c.Parents)
	h.kept.put(k, c)
	return c, nil
}

// OwnCommitter is the wrapped History's (OwnUser), "" when it does not know.
func (h commitsKept) OwnCommitter(ctx context.Context) (string, error) {
	if u, ok := h.History.(OwnUser); ok {
		return u.OwnCommitter(ctx)
	}
	return "", nil
}

func commitBytes(repo string, c CommitInfo) int {
	n := len(repo) + len(c.ID) + len(c.Message) + len(c.Committer)
	for _, p := range c.Parents {
		n += len(p)
	}
	for k, v := range c.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// keepCommits wraps h (nil stays nil).
func keepCommits(h History) History {
	if h == nil {
		return nil
	}
	return commitsKept{History: h, kept: newBoundedMap[CommitInfo](maxKeptCommits)}
}

func (d *derivations) count(ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok {
		d.derived++
	} else {
		d.declined++
	}
}

// DerivedListings is how many listings of own merges the engine derived,
// and how many recorded merges it listed whole instead (tests, logs).
func (e *Engine) DerivedListings() (derived, declined int) {
	e.derived.mu.Lock()
	defer e.derived.mu.Unlock()
	return e.derived.derived, e.derived.declined
}

// RecordSeal tells the engine that lakewap itself committed a batch's
// branch (its seal) and lakeFS answered with commit: its listings may be
// derived from its parent's (see derive.go).
func (e *Engine) RecordSeal(repo, commit string) {
	if !IsCommitID(commit) || len(repo)+len(commit) > maxDerivationRecordBytes {
		return
	}
	e.derived.seals.put(repo+"\x00"+commit, true)
}

// derive is the listing of prefix at commit when commit is a recorded own
// merge or seal and everything the derivation needs holds (derive.go),
// else false.
func (r *run) derive(ctx context.Context, commit, prefix string) ([]Object, bool) {
	e, repo := r.e, r.req.Repository
	var objs []Object
	var why string
	if sealed, ok := e.derived.merges.get(repo + "\x00" + commit); ok {
		objs, why = r.deriveOwnMerge(ctx, commit, sealed, prefix)
	} else if _, ok := e.derived.seals.get(repo + "\x00" + commit); ok {
		objs, why = r.deriveOwnSeal(ctx, commit, prefix)
	} else {
		return nil, false
	}
	e.derived.count(why == "")
	if why != "" {
		r.log.Debug("audit: listing of an own merge or seal made whole", "commit", commit, "prefix", prefix, "why", why)
		return nil, false
	}
	return objs, true
}

func (r *run) deriveOwnMerge(ctx context.Context, commit, sealed, prefix string) ([]Object, string) {
	e, repo := r.e, r.req.Repository
	c, differ, why := r.commitToDerive(ctx, commit)
	if why != "" {
		return nil, why
	}
	parents := c.Parents
	if c.ID != commit || len(parents) != 2 || parents[1] != sealed {
		return nil, "parents are not [head, sealed commit]"
	}
	head := parents[0]
	if !e.derived.covers(repo, sealed, head, prefix) {
		return nil, "relinked_objects did not clear the sealed commit against the head under the prefix"
	}
	lh, ok := e.listings.shared(repo, head, prefix) // applyDifferences only reads them
	if !ok {
		return nil, "head's listing not held"
	}
	ls, ok := e.listings.shared(repo, sealed, prefix)
	if !ok {
		return nil, "sealed commit's listing not held"
	}
	diffs, why := r.differences(ctx, differ, head, commit, prefix)
	if why != "" {
		return nil, why
	}
	objs, ok := applyDifferences(lh, ls, diffs)
	if !ok {
		return nil, "the diff names a path the listings do not hold"
	}
	return objs, ""
}

// deriveOwnSeal derives the listing of lakewap's own commit of a batch's
// branch: lakeFS's commit writes the parent's entries with the staged ones
// applied, keeping the parent's entry (its address) for a staged entry of
// the same identity (applyNextKey, pkg/graveler/committed/commit.go), so
// the commit differs from its one parent exactly at the paths their
// two-dot diff names. Those are taken from a listing of the commit under
// the deepest folder holding them all (the batch's own, usually).
func (r *run) deriveOwnSeal(ctx context.Context, commit, prefix string) ([]Object, string) {
	e, repo := r.e, r.req.Repository
	c, differ, why := r.commitToDerive(ctx, commit)
	if why != "" {
		return nil, why
	}
	if c.ID != commit || len(c.Parents) != 1 {
		return nil, "not one parent"
	}
	parent := c.Parents[0]
	lp, ok := e.listings.shared(repo, parent, prefix) // applyDifferences only reads it
	if !ok {
		return nil, "parent's listing not held"
	}
	diffs, ok := r.requestDifferences(commit, parent, prefix)
	if !ok {
		if diffs, why = r.differences(ctx, differ, parent, commit, prefix); why != "" {
			return nil, why
		}
	}
	var paths []string
	for _, d := range diffs {
		if !d.Removed {
			paths = append(paths, d.Path)
		}
	}
	var changed []Object
	if len(paths) > 0 {
		folder := commonFolder(prefix, paths)
		if folder == prefix {
			return nil, "the changes are spread over the whole prefix"
		}
		var ok bool
		if changed, ok = e.listings.get(repo, commit, folder); !ok {
			var err error
			if changed, err = e.opts.Source.List(ctx, repo, commit, folder); err != nil {
				return nil, "list " + folder + ": " + err.Error()
			}
			e.listings.put(repo, commit, folder, changed)
		}
	}
	objs, ok := applyDifferences(lp, changed, diffs)
	if !ok {
		return nil, "the diff names a path the listings do not hold"
	}
	return objs, ""
}

// requestDifferences is the two-dot diff of parent and commit under
// prefix as the request's changes give it, when they are that diff: the
// run audits commit against parent itself (not Onto), and the changes are
// the caller's whole three-dot diff of them (removals included). parent is
// then their merge-base, so lakeFS's three-dot diff compares commit with
// a destination that is the base itself, where it names exactly what the
// two-dot diff names (pkg/graveler/committed/compare_iterator.go: with
// the destination at the base nothing is skipped or in conflict). The
// runner's audit of a seal against the commit its branch was made from
// needs no second diff.
func (r *run) requestDifferences(commit, parent, prefix string) ([]Difference, bool) {
	c := r.req.Changes
	if c == nil || !c.Removals || r.req.Onto || r.req.Ref != commit || r.req.BaseRef != parent {
		return nil, false
	}
	var diffs []Difference
	for _, o := range c.Objects {
		if strings.HasPrefix(o.Path, prefix) {
			diffs = append(diffs, Difference{Path: o.Path, Size: o.Size})
		}
	}
	for _, p := range c.Removed {
		if strings.HasPrefix(p, prefix) {
			diffs = append(diffs, Difference{Path: p, Removed: true})
		}
	}
	if len(diffs) > r.e.opts.MaxListObjects {
		return nil, false // as over the budget as lakeFS's would be: asked, and declined there
	}
	slices.SortFunc(diffs, func(a, b Difference) int { return strings.Compare(a.Path, b.Path) })
	return diffs, true
}

// commitToDerive is commit's information and the Source's two-dot diff,
// or why a listing of it cannot be derived.
func (r *run) commitToDerive(ctx context.Context, commit string) (CommitInfo, Differ, string) {
	differ, ok := r.e.opts.Source.(Differ)
	if !ok || r.e.opts.History == nil {
		return CommitInfo{}, nil, "no two-dot diff or commit graph"
	}
	c, err := r.e.opts.History.Commit(ctx, r.req.Repository, commit)
	if err != nil {
		return CommitInfo{}, nil, "commit: " + err.Error()
	}
	return c, differ, ""
}

// diffAhead is a two-dot diff asked for ahead (run.diffsAhead).
type diffAhead struct {
	done  chan struct{}
	diffs []Difference
	why   string
}

// differences is lakeFS's two-dot diff of from and to under prefix, within
// the listing budget, or why not.
func (r *run) differences(ctx context.Context, differ Differ, from, to, prefix string) ([]Difference, string) {
	if d, ok := r.diffsAhead[[3]string{from, to, prefix}]; ok {
		select {
		case <-d.done:
			return d.diffs, d.why
		case <-ctx.Done():
			return nil, "diff: " + ctx.Err().Error()
		}
	}
	return r.differencesNow(ctx, differ, from, to, prefix)
}

// differencesNow is differences, asked for now.
func (r *run) differencesNow(ctx context.Context, differ Differ, from, to, prefix string) ([]Difference, string) {
	diffs, truncated, err := differ.Differences(ctx, r.req.Repository, from, to, prefix, r.e.opts.MaxListObjects)
	switch {
	case err != nil:
		return nil, "diff: " + err.Error()
	case truncated:
		return nil, "diff over the listing budget"
	}
	return diffs, ""
}

// applyDifferences is head's listing with each difference removed, or
// taken from sealed's listing, in path order; false when a difference
// names an entry that is not there.
func applyDifferences(head, sealed []Object, diffs []Difference) ([]Object, bool) {
	if out, ok, walked := applySorted(head, sealed, diffs); walked {
		return out, ok
	}
	return applyByPath(head, sealed, diffs)
}

// applySorted is applyDifferences in one walk of head's listing and the
// differences in path order, with sealed's entries found by binary search
// (no map of the head's listing, which grows with the table); walked is
// false, and the maps decide, when head's listing is not in strict path
// order or a path differs twice.
func applySorted(head, sealed []Object, diffs []Difference) (out []Object, ok, walked bool) {
	for i := 1; i < len(head); i++ {
		if head[i-1].Path >= head[i].Path {
			return nil, false, false
		}
	}
	ds := slices.Clone(diffs)
	slices.SortStableFunc(ds, func(a, b Difference) int { return strings.Compare(a.Path, b.Path) })
	for i := 1; i < len(ds); i++ {
		if ds[i-1].Path == ds[i].Path {
			return nil, false, false
		}
	}
	from := indexPaths(sealed)
	out = make([]Object, 0, len(head)+len(ds))
	i := 0
	for _, d := range ds {
		for i < len(head) && head[i].Path < d.Path {
			out = append(out, head[i])
			i++
		}
		inHead := i < len(head) && head[i].Path == d.Path
		if inHead {
			i++
		}
		if d.Removed {
			if !inHead {
				return nil, false, true
			}
			continue
		}
		o, found := from.get(d.Path)
		if !found {
			return nil, false, true
		}
		out = append(out, o)
	}
	return append(out, head[i:]...), true, true
}

// applyByPath is applyDifferences through maps, for listings in any order.
func applyByPath(head, sealed []Object, diffs []Difference) ([]Object, bool) {
	byPath := make(map[string]Object, len(head))
	for _, o := range head {
		byPath[o.Path] = o
	}
	fromSealed := make(map[string]Object, len(diffs))
	for _, o := range sealed {
		fromSealed[o.Path] = o
	}
	for _, d := range diffs {
		if d.Removed {
			if _, ok := byPath[d.Path]; !ok {
				return nil, false
			}
			delete(byPath, d.Path)
			continue
		}
		o, ok := fromSealed[d.Path]
		if !ok {
			return nil, false
		}
		byPath[d.Path] = o
	}
	out := make([]Object, 0, len(byPath))
	for _, o := range byPath {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	return out, true
}

// Listing is the listing of prefix at commit as an audit of repo reads it:
// kept, derived (an own merge or seal) or listed by lakeFS, and then kept,
// within the listing budget (audit.max_list_objects: ErrOverBudget past
// it). Only a commit id is taken: a branch's listing changes, and is not
// kept.
func (e *Engine) Listing(ctx context.Context, repo, commit, prefix string) ([]Object, error) {
	if !IsCommitID(commit) {
		return nil, fmt.Errorf("audit: listing of %q: not a commit id (64 lowercase hex digits)", schemas.Clip(commit, 80))
	}
	r := &run{e: e, req: Request{Repository: repo}, log: e.opts.Logger}
	return r.list(ctx, commit, prefix)
}
