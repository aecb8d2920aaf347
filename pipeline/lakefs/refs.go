package lakefs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Branch is a branch and the commit it points at.
type Branch struct {
	Name, CommitID string
}

// Commit is one commit of a repository's history.
type Commit = pipeline.Commit

// EnsureBranch creates branch from from (pipeline.Lake): the commit the run
// recorded before creating it, or a ref. An existing branch is resumed only
// when it is what creating it now would give: its head is from's commit and
// nothing is uncommitted. Any other (a branch made beforehand from an older
// commit, or with content of its own) wraps pipeline.ErrBranchTaken and is
// left as it is.
func (c *Client) EnsureBranch(ctx context.Context, repo, branch, from string) (bool, error) {
	err := c.send(ctx, call{op: "create branch", repo: repo, ref: branch}, http.StatusCreated, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.CreateBranch(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: branch, Source: from})
	})
	if status(err) != http.StatusConflict {
		return false, err
	}
	head, err := c.GetCommit(ctx, repo, branch)
	if err != nil {
		return false, err
	}
	want, err := c.GetCommit(ctx, repo, from)
	if err != nil {
		return false, err
	}
	if head.ID != want.ID {
		return false, fmt.Errorf("branch %s of %s points at %s, not at %s, the commit this run branches from: %w", branch, repo, head.ID, want.ID, pipeline.ErrBranchTaken)
	}
	staged, err := list(ctx, c, call{op: "diff branch", repo: repo, ref: branch}, 1, changeFrom,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffBranch(ctx, repo, branch, &apigen.DiffBranchParams{After: after, Amount: amount})
		})
	if err != nil {
		return false, err
	}
	if len(staged) > 0 {
		return false, fmt.Errorf("branch %s of %s has uncommitted changes (%s): %w", branch, repo, staged[0].Path, pipeline.ErrBranchTaken)
	}
	return true, nil
}

// NewestStaged is the newest modification time of the objects added or
// changed among the first limit uncommitted changes of branch (by path),
// and whether there are uncommitted changes at all: one diff of the
// branch, one entry listed per added or changed path. A staged removal has
// no time. The zero time with staged true: only removals were looked at.
func (c *Client) NewestStaged(ctx context.Context, repo, branch string, limit int) (newest time.Time, staged bool, err error) {
	changes, err := list(ctx, c, call{op: "diff branch", repo: repo, ref: branch}, limit, changeFrom,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffBranch(ctx, repo, branch, &apigen.DiffBranchParams{After: after, Amount: amount})
		})
	if err != nil || len(changes) == 0 {
		return time.Time{}, false, err
	}
	for _, ch := range changes {
		if ch.Type == "removed" {
			continue
		}
		// The path sorts first of the objects it prefixes.
		o, ok, err := c.FirstUnder(ctx, repo, branch, ch.Path)
		if err != nil {
			return time.Time{}, true, err
		}
		if ok && o.Path == ch.Path && o.Mtime.After(newest) {
			newest = o.Mtime
		}
	}
	return newest, true, nil
}

// Changes lists what ref changes against its merge-base with base
// (lakeFS's three-dot diff, pipeline.Lake): what merging ref into base
// brings, in one listing.
func (c *Client) Changes(ctx context.Context, repo, base, ref string) ([]pipeline.Change, error) {
	changes, err := c.Diff(ctx, repo, base, ref, "")
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Change, len(changes))
	for i, ch := range changes {
		out[i] = pipeline.Change{Path: ch.Path, Size: ch.Size, Removed: ch.Type == "removed"}
	}
	return out, nil
}

// DeleteBranch deletes branch; a branch that is not there is not an error
// (a missing repository still is).
func (c *Client) DeleteBranch(ctx context.Context, repo, branch string) error {
	err := c.send(ctx, call{op: "delete branch", repo: repo, ref: branch}, http.StatusNoContent, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.DeleteBranch(ctx, repo, branch, &apigen.DeleteBranchParams{})
	})
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound && !strings.Contains(strings.ToLower(e.Message), "repository") {
		return nil
	}
	return err
}

// ListBranches lists the branches whose names start with prefix and are
// at most schemas.MaxLakewapBranchNameLen bytes long, the longest lakewap
// makes (a revert's scratch branch of the longest batch branch).
// lakeFS itself bounds no branch name (its key-value store may), and a
// writer's long names made the janitor's listing hold gigabytes
// (TestBranchListingLeavesOutNamesLongerThanLakewapMakes):
// longer ones are left out as each page is read (and still count towards
// the listing's limit). A head id longer than pipeline.MaxCommitIDBytes
// (a writer's commit record's) is kept empty
// (TestBranchListingHoldsNoLongCommitIDs).
func (c *Client) ListBranches(ctx context.Context, repo, prefix string) ([]Branch, error) {
	return listKept(ctx, c, call{op: "list branches", repo: repo, ref: prefix}, 0,
		func(r apigen.Ref) (Branch, bool) {
			b := Branch{Name: r.Id, CommitID: r.CommitId}
			if len(b.CommitID) > pipeline.MaxCommitIDBytes {
				b.CommitID = "" // no commit lakewap reads: the janitor finds the head unreadable
			}
			return b, len(r.Id) <= schemas.MaxLakewapBranchNameLen
		},
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListBranches(ctx, repo, &apigen.ListBranchesParams{Prefix: prefixParam(prefix), After: after, Amount: amount})
		})
}

// Commit commits branch's uncommitted changes with message and meta. A
// branch without changes gives an error wrapping pipeline.ErrNoChanges.
func (c *Client) Commit(ctx context.Context, repo, branch, message string, meta map[string]string) (string, error) {
	return c.commit(ctx, repo, branch, message, meta, false)
}

// Merge merges source (any ref) into branch dest (pipeline.Lake). A conflict
// wraps pipeline.ErrMergeConflict; nothing to merge (a source already on dest
// included: it never asks for allow_empty) wraps pipeline.ErrNoChanges.
func (c *Client) Merge(ctx context.Context, repo, source, dest, message string, meta map[string]string) (string, error) {
	body := apigen.MergeIntoBranchJSONRequestBody{Message: &message}
	if len(meta) > 0 {
		body.Metadata = &apigen.Merge_Metadata{AdditionalProperties: meta}
	}
	var out apigen.MergeResult
	err := c.send(ctx, call{op: opMerge, repo: repo, ref: source + "->" + dest}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.MergeIntoBranch(ctx, repo, source, dest, body)
	})
	if err == nil {
		c.tips.put(repo, dest, out.Reference)
	}
	return out.Reference, err
}

// Seal is Commit with allow_empty (pipeline.Lake): every seal is a commit of
// its own, not on any target until lakewap merges it.
func (c *Client) Seal(ctx context.Context, repo, branch, message string, meta map[string]string) (string, error) {
	return c.commit(ctx, repo, branch, message, meta, true)
}

func (c *Client) commit(ctx context.Context, repo, branch, message string, meta map[string]string, allowEmpty bool) (string, error) {
	body := apigen.CommitJSONRequestBody{Message: message}
	if allowEmpty {
		body.AllowEmpty = ptr(true)
	}
	if len(meta) > 0 {
		body.Metadata = &apigen.CommitCreation_Metadata{AdditionalProperties: meta}
	}
	var out apigen.Commit
	err := c.send(ctx, call{op: "commit", repo: repo, ref: branch}, http.StatusCreated, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.Commit(ctx, repo, branch, &apigen.CommitParams{}, body)
	})
	if err == nil {
		c.made.put(repo, commitFrom(out))
		c.cached.put(repo, commitFrom(out))
		if len(out.Parents) == 1 {
			// A commit's merge-base with its only parent is that parent
			// (lakeFS's FindMergeBase reaches it from both sides first):
			// an audit of a seal against the commit its branch was made
			// from asks lakeFS nothing for it.
			c.bases.put(repo, out.Id, out.Parents[0], out.Parents[0])
		}
	}
	return out.Id, err
}

// MergeBase returns lakeFS's merge-base of source (a commit id) and dest
// (any ref), and the commit dest resolved to.
//
// The merge-base of two commit ids never changes: the answers for them are
// kept (mergeBases) and given again without asking.
func (c *Client) MergeBase(ctx context.Context, repo, source, dest string) (base, destCommit string, err error) {
	if b, ok := c.bases.get(repo, source, dest); ok {
		return b, dest, nil
	}
	// A branch this client merged into last most likely still points at
	// that merge: the merge-base with it is asked for while the branch is
	// listed (one round trip instead of two in the publish turn's look),
	// and used when the listing finds the branch there.
	tip, guessed := c.tips.get(repo, dest)
	var guess chan mergeBaseAnswer
	if guessed && commitID.MatchString(source) {
		if _, known := c.bases.get(repo, source, tip); !known {
			// A guess the listing proves wrong is not waited for; its
			// answer is kept all the same (a fact about two commit ids).
			guess = make(chan mergeBaseAnswer, 1)
			go func() {
				var a mergeBaseAnswer
				a.base, _, a.err = c.findMergeBase(ctx, repo, source, tip)
				if a.err == nil {
					c.bases.put(repo, source, tip, a.base)
				}
				guess <- a
			}()
		}
	}
	head, resolved, err := c.branchHead(ctx, repo, dest)
	if err != nil {
		return "", "", err
	}
	if resolved {
		// The merge-base of source and the branch is that of source and
		// the commit the branch points at now, which is kept.
		dest = head
		if b, ok := c.bases.get(repo, source, dest); ok {
			return b, dest, nil
		}
		if guess != nil && head == tip {
			if a := <-guess; a.err == nil && a.base != "" {
				return a.base, head, nil
			}
		}
	}
	base, destCommit, err = c.findMergeBase(ctx, repo, source, dest)
	if err != nil {
		return "", "", err
	}
	if resolved {
		destCommit = head // asked by its id: nothing to tell apart
	}
	c.bases.put(repo, source, destCommit, base)
	return base, destCommit, nil
}

type mergeBaseAnswer struct {
	base string
	err  error
}

// MergeTip is the commit this client's last merge into branch made, if it
// made one lately (see mergeTips): most likely the branch's head.
func (c *Client) MergeTip(repo, branch string) (string, bool) { return c.tips.get(repo, branch) }

// findMergeBase asks lakeFS for the merge-base of source and dest, and
// the commit dest resolved to.
func (c *Client) findMergeBase(ctx context.Context, repo, source, dest string) (base, destCommit string, err error) {
	a, err := c.baseFlights.Do(ctx, repo+"\x00"+source+"\x00"+dest, func() ([2]string, error) {
		base, destCommit, err := c.askMergeBase(ctx, repo, source, dest)
		return [2]string{base, destCommit}, err
	})
	return a[0], a[1], err
}

func (c *Client) askMergeBase(ctx context.Context, repo, source, dest string) (base, destCommit string, err error) {
	var out apigen.FindMergeBaseResult
	err = c.send(ctx, call{op: "merge base", repo: repo, ref: source + "..." + dest}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.FindMergeBase(ctx, repo, source, dest)
	})
	if err != nil {
		return "", "", err
	}
	// lakeFS v1.84.0 swaps source_commit_id and destination_commit_id in
	// this answer; tell them apart by the source, when it is a commit id.
	destCommit = out.DestinationCommitId
	if destCommit == source {
		destCommit = out.SourceCommitId
	}
	return out.BaseCommitId, destCommit, nil
}

// mergeTips keeps, per branch, the commit this client's last merge into
// it made (lakeFS's answer): the branch's head until someone else moves
// it. At most maxMergeTips branches, the oldest going first.
type mergeTips struct{ fifo[[2]string, string] }

const maxMergeTips = 1024

func (t *mergeTips) get(repo, branch string) (string, bool) {
	if t == nil {
		return "", false
	}
	return t.fifo.get([2]string{repo, branch})
}

func (t *mergeTips) put(repo, branch, commit string) {
	if t == nil || !commitID.MatchString(commit) || len(repo)+len(branch) > maxCachedCommitBytes {
		return
	}
	t.fifo.put([2]string{repo, branch}, commit, maxMergeTips)
}

// mergeBases keeps the merge-bases of pairs of commit ids lately found,
// the oldest going first beyond maxMergeBases. also, if set, is another
// client view's, read (never written) when this one has no answer
// (Client.Outside).
type mergeBases struct {
	fifo[[3]string, string]
	also *mergeBases
}

const maxMergeBases = 4096

// commitID matches lakeFS commit ids (not branch or tag names, whose
// commits move): 64 hex digits, as audit.IsCommitID (review 54: 40 to 64
// were taken, and a branch so named had its merge-bases kept).
var commitID = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (b *mergeBases) get(repo, source, dest string) (string, bool) {
	if b == nil || !commitID.MatchString(source) || !commitID.MatchString(dest) {
		return "", false
	}
	k := [3]string{repo, source, dest}
	if base, ok := b.fifo.get(k); ok || b.also == nil {
		return base, ok
	}
	return b.also.fifo.get(k)
}

func (b *mergeBases) put(repo, source, dest, base string) {
	if b == nil || base == "" || !commitID.MatchString(source) || !commitID.MatchString(dest) {
		return
	}
	b.fifo.put([3]string{repo, source, dest}, base, maxMergeBases)
}

// fifo is a map that keeps its keys in the order they came, the oldest
// going first beyond a bound.
type fifo[K comparable, V any] struct {
	mu    sync.Mutex
	m     map[K]V
	order []K
}

func (f *fifo[K, V]) get(k K) (V, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[k]
	return v, ok
}

// put sets k to v and drops the oldest keys beyond max.
func (f *fifo[K, V]) put(k K, v V, max int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[K]V{}
	}
	if _, ok := f.m[k]; !ok {
		f.order = append(f.order, k)
	}
	f.m[k] = v
	for len(f.order) > max {
		delete(f.m, f.order[0])
		f.order = f.order[1:]
	}
}

// commitCache keeps commits by id (a commit id names an immutable
// commit): those this client made, as lakeFS answered their creation, and
// those it read by id, whoever made them. The audit's look at a seal's
// parents asks lakeFS nothing, nor does a second read of a merge commit.
// Being here says nothing of who made a commit (madeCommits does). At most
// maxCachedCommits, each at most maxCachedCommitBytes (ids, parents,
// metadata, message); the oldest goes first. also, if set, is another
// client view's, read (never written) when this one has no answer
// (Client.Outside).
type commitCache struct {
	fifo[string, Commit] // repo \x00 id
	also                 *commitCache
}

const (
	maxCachedCommits     = 1024
	maxCachedCommitBytes = 4096
)

func (cc *commitCache) get(repo, id string) (Commit, bool) {
	if cc == nil || !commitID.MatchString(id) {
		return Commit{}, false
	}
	k := repo + "\x00" + id
	cm, ok := cc.fifo.get(k)
	if !ok && cc.also != nil {
		cm, ok = cc.also.fifo.get(k)
	}
	if ok {
		cm.Parents = slices.Clone(cm.Parents)
		cm.Metadata = maps.Clone(cm.Metadata)
	}
	return cm, ok
}

func (cc *commitCache) put(repo string, cm Commit) {
	n := len(repo) + len(cm.ID) + len(cm.Message) + len(cm.Committer)
	for _, p := range cm.Parents {
		n += len(p)
	}
	for k, v := range cm.Metadata {
		n += len(k) + len(v)
	}
	if cc == nil || !commitID.MatchString(cm.ID) || n > maxCachedCommitBytes {
		return
	}
	cc.fifo.put(repo+"\x00"+cm.ID, cm, maxCachedCommits)
}

// madeCommits keeps the commits this client made (Commit, Seal: lakeFS
// answered their creation to it), with their one parent ("" for a commit
// of none or more): what SealedOn trusts as a seal lakewap made. Only
// commit puts into it: a commit read by id (any caller of the pre-merge
// hook names any commit, which the client's Outside view reads) never is. At
// most maxMadeCommits, the oldest going first.
type madeCommits struct{ fifo[string, string] } // repo \x00 id -> one parent

const maxMadeCommits = 1024

func (mc *madeCommits) parent(repo, id string) (string, bool) {
	if mc == nil || !commitID.MatchString(id) {
		return "", false
	}
	return mc.fifo.get(repo + "\x00" + id)
}

func (mc *madeCommits) put(repo string, cm Commit) {
	if mc == nil || !commitID.MatchString(cm.ID) || len(repo) > maxCachedCommitBytes {
		return
	}
	parent := ""
	if len(cm.Parents) == 1 && commitID.MatchString(cm.Parents[0]) {
		parent = cm.Parents[0]
	}
	mc.fifo.put(repo+"\x00"+cm.ID, parent, maxMadeCommits)
}

// clockSlack widens a look back by time: commit dates come from the lakeFS
// server's clock (in whole seconds), the start times from lakewap's.
const clockSlack = 5 * time.Minute

// Published reports whether sealed is on target by the commit graph: the
// merge-base of sealed and target is sealed itself, and a commit merged it
// in. It then names the oldest first-parent commit of target made since
// since (less clockSlack) that has sealed as a merged parent.
//
// Being in the target's history is not enough: a writer can merge a sealed
// commit into another batch's branch and change or delete its files there,
// and that batch's publish then brings sealed into the target's history
// without its changes (review 9). So when no commit of that window merged
// sealed, Published finds the first-parent commit that brought sealed in
// (the oldest whose history holds it: holding it is monotone along the
// first parents, so it bisects, looking up to publishedDepth commits beyond
// the window too) and takes it as the publish only when it merged sealed
// (a merge older than the window, when the clocks disagree by more than
// clockSlack) or an older build's descendant of it (olderRecheck); any
// other commit is Absorbed, and OnTarget is false. When that commit is not
// found within those bounds, sealed counts as on the target with no Merge,
// as before. A zero since looks at target's last 1000 first-parent commits.
func (c *Client) Published(ctx context.Context, repo, target, sealed string, since time.Time) (pipeline.Publication, error) {
	base, head, err := c.MergeBase(ctx, repo, sealed, target)
	if err != nil {
		return pipeline.Publication{}, err
	}
	p := pipeline.Publication{Head: head, Base: base}
	if base != sealed {
		return p, nil
	}
	window, err := c.firstParents(ctx, repo, head, since)
	if err != nil {
		return p, err
	}
	if merges := mergesOf(window, sealed); len(merges) > 0 {
		p.OnTarget, p.Merge = true, merges[len(merges)-1].ID
		return p, nil
	}
	bringer, found, err := c.bringer(ctx, repo, head, window, sealed)
	switch {
	case err != nil:
		return p, err
	case !found:
		p.OnTarget = true // not known which commit brought it in
		return p, nil
	case slices.Contains(bringer.Parents[min(1, len(bringer.Parents)):], sealed):
		p.OnTarget, p.Merge = true, bringer.ID
		return p, nil
	}
	d, older, err := c.olderRecheck(ctx, repo, bringer, sealed)
	if err != nil {
		return p, err
	}
	if older {
		p.OnTarget, p.Merge, p.Source = true, bringer.ID, d
		return p, nil
	}
	intact, err := c.holdsUnchanged(ctx, repo, bringer, sealed)
	if err != nil {
		return p, err
	}
	if intact {
		p.OnTarget, p.Merge = true, bringer.ID // published by it, unchanged
		return p, nil
	}
	p.Absorbed = bringer.ID
	return p, nil
}

// maxAbsorbedChanges bounds the changes of a sealed commit compared with
// the commit that took it into the target (holdsUnchanged); a sealed commit
// with more is taken as absorbed.
const maxAbsorbedChanges = 100

// holdsUnchanged says whether commit, which brought sealed into its target
// without merging it, holds each path sealed changes against commit's first
// parent (lakeFS's three-dot diff: what merging sealed there would bring)
// as sealed holds it: the same physical address, checksum and size, or
// absent where sealed removed it. Then the batch's changes are on the
// target, published by commit, and it is not aborted for another branch
// having taken its sealed commit in unchanged.
func (c *Client) holdsUnchanged(ctx context.Context, repo string, commit Commit, sealed string) (bool, error) {
	if len(commit.Parents) == 0 {
		return false, nil
	}
	base := commit.Parents[0]
	changes, err := list(ctx, c, call{op: "diff", repo: repo, ref: base + "..." + sealed}, maxAbsorbedChanges+1, changeFrom,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffRefs(ctx, repo, base, sealed, &apigen.DiffRefsParams{After: after, Amount: amount})
		})
	if err != nil || len(changes) > maxAbsorbedChanges {
		return false, err
	}
	at := func(ref, path string) (Object, bool, error) {
		// One entry: the path itself sorts first of those it prefixes.
		// Listing them all read (and held) every object a writer put
		// under the path as a prefix, per changed path
		// (TestLimits63HoldsUnchangedReadsOneEntryPerPath).
		o, ok, err := c.FirstUnder(ctx, repo, ref, path)
		if err != nil || !ok || o.Path != path {
			return Object{}, false, err
		}
		return o, true, nil
	}
	for _, ch := range changes {
		o, held, err := at(commit.ID, ch.Path)
		if err != nil {
			return false, err
		}
		if ch.Type == "removed" {
			if held {
				return false, nil
			}
			continue
		}
		s, ok, err := at(sealed, ch.Path)
		if err != nil || !ok || !held || o.PhysicalAddress != s.PhysicalAddress || o.Checksum != s.Checksum || o.Size != s.Size {
			return false, err
		}
	}
	return true, nil
}

// bringer finds the first-parent commit of head that brought sealed (which
// head's history holds) in: the oldest whose history holds it, in window
// (head's first parents, newest first) or, when the window's oldest commit
// (or head, for an empty window) already holds it, among up to
// publishedDepth first parents beyond. found is false when it lies beyond
// those.
func (c *Client) bringer(ctx context.Context, repo, head string, window []Commit, sealed string) (Commit, bool, error) {
	i, err := c.oldestHolding(ctx, repo, window, sealed)
	switch {
	case err != nil:
		return Commit{}, false, err
	case i < 0 && len(window) > 0:
		return Commit{}, false, nil // the window's newest does not hold it: head moved since
	case i >= 0 && i < len(window)-1:
		return window[i], true, nil
	}
	from := head
	if i >= 0 {
		if len(window[i].Parents) == 0 {
			return window[i], true, nil
		}
		from = window[i].Parents[0]
	}
	more, err := c.commits(ctx, repo, from, publishedDepth, apigen.LogCommitsParams{FirstParent: ptr(true)})
	if err != nil {
		return Commit{}, false, err
	}
	j, err := c.oldestHolding(ctx, repo, more, sealed)
	switch {
	case err != nil:
		return Commit{}, false, err
	case j < 0 && i >= 0:
		return window[i], true, nil
	case j < 0, j == len(more)-1 && len(more) >= publishedDepth && len(more[j].Parents) > 0:
		return Commit{}, false, nil
	}
	return more[j], true, nil
}

// oldestHolding is the index of the oldest commit of chain (first parents,
// newest first) whose history holds sealed, or -1: holding it is monotone
// along the chain, so it bisects (one merge-base per probe).
func (c *Client) oldestHolding(ctx context.Context, repo string, chain []Commit, sealed string) (int, error) {
	var ferr error
	n := sort.Search(len(chain), func(i int) bool {
		if ferr != nil {
			return true
		}
		b, _, err := c.MergeBase(ctx, repo, sealed, chain[i].ID)
		if err != nil {
			ferr = err
			return true
		}
		return b != sealed
	})
	return n - 1, ferr
}

// olderRecheck says whether merge is the publish of sealed by a build that
// rechecked a batch by merging the target's head into its branch and
// merging that commit (before review finding 4): merge's merged parent is a
// commit of two parents whose first is sealed. It returns that commit.
func (c *Client) olderRecheck(ctx context.Context, repo string, merge Commit, sealed string) (string, bool, error) {
	if len(merge.Parents) != 2 {
		return "", false, nil
	}
	d, err := c.GetCommit(ctx, repo, merge.Parents[1])
	if err != nil {
		return "", false, err
	}
	return d.ID, len(d.Parents) == 2 && d.Parents[0] == sealed, nil
}

// FirstParentsAfter lists ref's first-parent commits after base (not included),
// oldest first: the newest limit of them (pipeline.Lister).
func (c *Client) FirstParentsAfter(ctx context.Context, repo, ref, base string, limit int) ([]string, error) {
	commits, err := c.commits(ctx, repo, ref, limit, apigen.LogCommitsParams{FirstParent: ptr(true), StopAt: ptr(base)})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cm := range commits {
		if cm.ID == base {
			break
		}
		out = append(out, cm.ID)
	}
	slices.Reverse(out)
	return out, nil
}

// MergesOf is pipeline.Reverter's: more than one means the same commit was
// merged again (an empty merge).
func (c *Client) MergesOf(ctx context.Context, repo, target, sealed string, since time.Time) ([]Commit, error) {
	window, err := c.firstParents(ctx, repo, target, since)
	return mergesOf(window, sealed), err // a failed listing is nil, and so are its merges
}

func (c *Client) firstParents(ctx context.Context, repo, ref string, since time.Time) ([]Commit, error) {
	params := apigen.LogCommitsParams{FirstParent: ptr(true)}
	if !since.IsZero() {
		params.Since = ptr(since.Add(-clockSlack))
	}
	return c.commits(ctx, repo, ref, publishedDepth, params)
}

func mergesOf(commits []Commit, sealed string) []Commit {
	return slices.DeleteFunc(slices.Clone(commits), func(cm Commit) bool {
		return len(cm.Parents) < 2 || !slices.Contains(cm.Parents[1:], sealed)
	})
}

// Log returns up to limit commits reachable from ref, newest first.
func (c *Client) Log(ctx context.Context, repo, ref string, limit int) ([]Commit, error) {
	if limit <= 0 {
		return nil, nil
	}
	return c.commits(ctx, repo, ref, limit, apigen.LogCommitsParams{})
}

// maxLogBytes bounds the messages, committers and metadata of the commits
// one read of a log keeps whole (what an answer's page held at most
// before); past it, and for a commit over MaxCommitAnswer of them, a
// commit is kept as logStandIn makes it.
const maxLogBytes = 64 << 20

// commits lists up to limit commits of ref's log (as params select them).
// lakeFS lists each commit's metadata whole, whatever its size, and whoever
// may commit on a branch gives it any: a page whose answer is over
// maxAnswerBody is asked again in halves, down to one commit (a commit
// over it alone is an error naming the commit before it), and a commit
// over MaxCommitAnswer of message and metadata (lakewap's take under 400
// KiB), or past maxLogBytes of them in the log, is kept without its
// metadata (logStandIn). Before, two hand commits of 33 MiB of metadata
// each made every read of the log fail, and no commit under a publish was
// announced (TestLimits63FatCommitsDoNotHideTheLogOfTheTarget).
func (c *Client) commits(ctx context.Context, repo, ref string, limit int, params apigen.LogCommitsParams) ([]Commit, error) {
	k := call{op: "log", repo: repo, ref: ref}
	var out []Commit
	var after *apigen.PaginationAfter
	amount, held := min(pageSize, limit), 0
	for len(out) < limit {
		amount = min(amount, limit-len(out))
		var pg page[apigen.Commit]
		err := c.send(ctx, k, http.StatusOK, &pg, func(ctx context.Context) (*http.Response, error) {
			p := params
			n := apigen.PaginationAmount(amount)
			p.After, p.Amount = after, &n
			return c.api.LogCommits(ctx, repo, ref, &p)
		})
		if errors.Is(err, errAnswerOverLimit) {
			if amount == 1 {
				at := "the first"
				if after != nil {
					at = "the one after " + string(*after)
				}
				return nil, fmt.Errorf("%w (%s commit of the log: one commit over %d bytes as lakeFS lists it)", err, at, maxAnswerBody)
			}
			amount /= 2
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range pg.Results {
			cm := commitFrom(r)
			n := commitBytes(cm)
			if n > MaxCommitAnswer || held+n > maxLogBytes {
				cm, n = logStandIn(cm, n), 0
			}
			held += n
			out = append(out, cm)
		}
		if !pg.Pagination.HasMore || pg.Pagination.NextOffset == "" || len(pg.Results) == 0 {
			break
		}
		after = ptr(apigen.PaginationAfter(pg.Pagination.NextOffset))
		amount = min(pageSize, amount*2)
	}
	return out[:min(len(out), limit)], nil
}

// commitBytes is what a commit's texts hold: its message, committer,
// metadata and parents.
func commitBytes(cm Commit) int {
	n := len(cm.ID) + len(cm.Message) + len(cm.Committer)
	for k, v := range cm.Metadata {
		n += len(k) + len(v)
	}
	for _, p := range cm.Parents {
		n += len(p)
	}
	return n
}

// logStandInBytes bounds the message and committer a stand-in keeps.
const logStandInBytes = 1024

// logStandIn is cm, n bytes of texts, as a log keeps a commit too large to
// keep whole: its id, date and parents, its message and committer
// clipped, its metadata left out, the message saying so. No attestation
// is read from it: it is not lakewap's (lakewap's publishes are under 400
// KiB), and is judged not attested. Its parents are kept, the first 16 of
// them (lakeFS's merges have two; a commit record takes any number).
func logStandIn(cm Commit, n int) Commit {
	parents := cm.Parents[:min(len(cm.Parents), 16)]
	return Commit{ID: cm.ID, CreationDate: cm.CreationDate, Parents: slices.Clone(parents),
		Committer: strings.Clone(schemas.Clip(cm.Committer, logStandInBytes)),
		Message: strings.Clone(schemas.Clip(cm.Message, logStandInBytes)) +
			fmt.Sprintf(" [lakewap: a commit of %d bytes of message and metadata, over what a log keeps; its %d metadata keys are left out]", n, len(cm.Metadata)),
		Metadata: map[string]string{}}
}

// Head returns the id of the commit ref points at (pipeline.Lake).
func (c *Client) Head(ctx context.Context, repo, ref string) (string, error) {
	if head, ok, err := c.branchHead(ctx, repo, ref); err != nil || ok {
		return head, err
	}
	cm, err := c.GetCommit(ctx, repo, ref)
	return cm.ID, err
}

// SealedOn reports whether commit, a seal this client made, sits on from
// through seals the caller recorded as lakewap's (runner.SealParenter;
// seals, the run's Run.Seals): its one parent is from (lakeFS is not
// asked), or a chain of commits of one parent each, every one of them in
// seals, reaches from. That chain is what a batch's audit step run again
// (after a restart, or a retry) leaves: its new seal on the seal the
// stopped attempt made and recorded. Neither a commit's committer nor its
// metadata tells lakewap's seal from a writer's commit: lakeFS's
// createCommitRecord (fs:CreateCommit on the repository, which the
// simplified ACL's Writers hold) writes a commit with any committer,
// parents, metadata and metarange
// (TestReview30ForgedSealRecordIsNotTakenForLakewaps). A commit this
// client did not make (madeCommits: one it only read by id, as the
// pre-merge hook reads any commit a call names, is not), one it made too
// long ago to remember, or a chain longer than pipeline.MaxSeals, makes it
// false. Only the chain's commits are asked for. earlier names the
// chain's seals below commit, newest first (none when commit's one parent
// is from): each committed what the branch had staged then, which the
// writer chose, so a path one of them deleted and a later one added again
// under the same checksum is at another address than from's though no
// diff of commit names it; the caller holds each of them to what commit
// is held to.
func (c *Client) SealedOn(ctx context.Context, repo, commit, from string, seals []string) (earlier []string, on bool, err error) {
	id, ok := c.made.parent(repo, commit)
	if !ok || id == "" {
		return nil, false, nil
	}
	for range pipeline.MaxSeals {
		if id == from {
			return earlier, true, nil
		}
		if !slices.Contains(seals, id) {
			return nil, false, nil
		}
		cm, err := c.GetCommit(ctx, repo, id)
		if err != nil {
			return nil, false, err
		}
		if len(cm.Parents) != 1 {
			return nil, false, nil
		}
		earlier = append(earlier, id)
		id = cm.Parents[0]
	}
	return nil, false, nil
}

// GetCommit returns the commit ref points at; ref may be a branch, a tag
// or a commit id.
func (c *Client) GetCommit(ctx context.Context, repo, ref string) (Commit, error) {
	if cm, ok := c.cached.get(repo, ref); ok {
		return cm, nil
	}
	if !isCommitID(ref) {
		return c.getCommit(ctx, repo, ref)
	}
	// A commit id names an immutable commit: read once, kept in the
	// commit cache (not with the commits this client made: SealedOn), and
	// read once while it is being read.
	return c.commitFlights.Do(ctx, repo+"\x00"+ref, func() (Commit, error) {
		cm, err := c.getCommit(ctx, repo, ref)
		if err == nil && cm.ID == ref {
			c.cached.put(repo, cm)
		}
		return cm, err
	})
}

func (c *Client) getCommit(ctx context.Context, repo, ref string) (Commit, error) {
	var out apigen.Commit
	err := c.send(ctx, call{op: "get commit", repo: repo, ref: ref, maxBody: MaxCommitAnswer,
		room: c.commitRoom, free: FreeCommitAnswer}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetCommit(ctx, repo, ref)
	})
	if err != nil {
		return Commit{}, err
	}
	return commitFrom(out), nil
}

// Revert adds a commit to branch that undoes commitID. For a merge commit,
// parentNumber (from 1) names the parent to revert relative to: 1 is the
// target's side, which undoes what the merge brought in. message and meta
// replace lakeFS's default ones when given.
func (c *Client) Revert(ctx context.Context, repo, branch, commitID string, parentNumber int, message string, meta map[string]string) error {
	body := apigen.RevertBranchJSONRequestBody{Ref: commitID, ParentNumber: parentNumber}
	if message != "" || len(meta) > 0 {
		o := &apigen.CommitOverrides{}
		if message != "" {
			o.Message = &message
		}
		if len(meta) > 0 {
			o.Metadata = &apigen.CommitOverrides_Metadata{AdditionalProperties: meta}
		}
		body.CommitOverrides = o
	}
	return c.send(ctx, call{op: "revert", repo: repo, ref: branch + "@" + commitID}, http.StatusNoContent, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.RevertBranch(ctx, repo, branch, body)
	})
}

func commitFrom(cm apigen.Commit) Commit {
	out := Commit{
		ID:           cm.Id,
		Message:      cm.Message,
		Committer:    cm.Committer,
		CreationDate: time.Unix(cm.CreationDate, 0).UTC(),
		Metadata:     map[string]string{},
		Parents:      cm.Parents,
	}
	if cm.Metadata != nil {
		maps.Copy(out.Metadata, cm.Metadata.AdditionalProperties)
	}
	return out
}

// branchHead returns the commit branch ref points at, read from lakeFS's
// branch listing, when ref names a branch the way lakeFS would resolve it:
// a plain name (no ~, ^ or @ modifier) that is not a full commit id (lakeFS
// resolves those as commits first), and that a branch has exactly. ok is
// false for anything else, which the caller leaves to lakeFS.
//
// Why a listing: lakeFS v1.84.0 reads a branch named in any other call
// (get commit, merge-base, diff) through its batched reads, which wait up
// to graveler.max_batch_delay (3 ms by default) for company; its branch
// listing reads the store at once. On the devstack a head took 3.5 ms as a
// get commit and 0.5 ms as a listing, the same lakeFS CPU. The listing is
// as fresh as the batched read: both read the store after the call came.
func (c *Client) branchHead(ctx context.Context, repo, ref string) (string, bool, error) {
	if ref == "" || strings.ContainsAny(ref, "~^@") || isCommitID(ref) {
		return "", false, nil
	}
	bs, err := list(ctx, c, call{op: "list branches", repo: repo, ref: ref}, 1,
		func(r apigen.Ref) Branch { return Branch{Name: r.Id, CommitID: r.CommitId} },
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListBranches(ctx, repo, &apigen.ListBranchesParams{Prefix: prefixParam(ref), After: after, Amount: amount})
		})
	if err != nil {
		return "", false, err
	}
	// Branches come in name order: ref itself, when it is one, is the
	// first whose name starts with ref.
	if len(bs) == 1 && bs[0].Name == ref && bs[0].CommitID != "" {
		return bs[0].CommitID, true, nil
	}
	return "", false, nil
}

// isCommitID reports whether ref is a full lakeFS commit id (64 hex digits).
func isCommitID(ref string) bool {
	if len(ref) != 64 {
		return false
	}
	for _, r := range ref {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}
