package audit

import (
	"container/list"
	"context"
	"slices"
	"sync"

	"github.com/lakewap/lakewap/schemas"
)

// Listings of commits. A commit id names exact content, so the objects
// under a prefix at a commit are a fact that does not change: the engine
// keeps the listings it made of commits (never of branches) and answers
// the same listing again from memory. So the recheck of a batch, and the
// audits of batches in flight onto the same head of the target, list a
// table once per commit.
//
// A listing of a commit it has not listed is made whole, by lakeFS, or,
// for lakewap's own merge of a sealed commit onto the target's head and for
// lakewap's own seal of a batch's branch, derived from the listings of the
// commits it was made of, under conditions that make it sound (derive.go). It is not derived from just any other commit's
// listing and lakeFS's diff of the two commits (what 4dfe245 did, 65 -> 23
// ms of lakeFS's CPU per batch at 64 in flight): lakeFS's diffs, and its
// merges, compare entries by identity (size, checksum, user metadata,
// content type), not by physical address, and a writer claims the checksum
// (linkPhysicalAddress). A path linked to new bytes claiming an old object's
// checksum and size is named by no diff, so a derived listing kept the old
// address and the audit read the old, audited bytes (from its download
// cache) while the merge published the new ones
// (pipeline/lakefs/auditsource/relink_attack_test.go). Checking the bytes'
// MD5 when they are downloaded does not close it: such an object can reach
// a batch by a merge into its branch (same identity: the merge takes the
// source's entry) without any diff naming it, so nothing ever downloads it.
// An own merge's derivation closes it with relinked_objects, which compared
// the bytes of every such path of the sealed commit with the head's.

const (
	// listingCacheObjects bounds the objects the kept listings hold in
	// all (about 300 bytes each), listingCacheBytes their bytes
	// (objectBytes): a writer chooses each object's path, checksum and
	// address, up to the lakeFS client's bounds (1,024, 256 and 2,048
	// bytes), and 400,000 such objects were 1.3 GB
	// (TestListingCacheIsBoundedByItsBytes).
	listingCacheObjects = 400_000
	listingCacheBytes   = 128 << 20
	// objectOverhead is what an Object holds besides its strings' bytes
	// (four string headers and a size, rounded up).
	objectOverhead = 80
	// maxListings bounds the listings kept (each use moves one in a list
	// of them).
	maxListings = 4096
)

// listingCache keeps listings of commits, least recently used first out.
type listingCache struct {
	mu       sync.Mutex
	max      int
	objects  int
	maxBytes int                      // listingCacheBytes
	bytes    int                      // objectBytes of the kept listings' objects
	m        map[string]*list.Element // repo \x00 commit \x00 prefix
	order    *list.List               // of *keptListing, least recently used first
}

type keptListing struct {
	key  string
	objs []Object
	// tables is tableFiles(prefix, objs), once asked for: objs itself when
	// it keeps every object (most tables), else its own slice, counted.
	tables []Object
	done   bool
	bytes  int // objectBytes of objs, and of tables when counted
}

// objectBytes is what objs hold: their strings' bytes and objectOverhead
// each.
func objectBytes(objs []Object) (n int) {
	for _, o := range objs {
		// Each string as the heap holds it (its size class): by their
		// lengths, a writer's strings of 65 bytes (80 held) made the kept
		// listings hold 14% over their bound
		// (TestLimits63ListingCacheCountsTheAllocatorsRounding).
		n += schemas.HeldBytes(len(o.Path)) + schemas.HeldBytes(len(o.Checksum)) + schemas.HeldBytes(len(o.Address)) + schemas.HeldBytes(len(o.at)) + objectOverhead
	}
	return n
}

// size is the objects k holds.
func (k *keptListing) size() int {
	if k.done && len(k.tables) != len(k.objs) {
		return len(k.objs) + len(k.tables)
	}
	return len(k.objs)
}

func newListingCache(max int) *listingCache {
	return &listingCache{max: max, maxBytes: listingCacheBytes, m: map[string]*list.Element{}, order: list.New()}
}

func listingKey(repo, commit, prefix string) string { return repo + "\x00" + commit + "\x00" + prefix }

// get returns a copy of the listing of prefix at commit.
func (c *listingCache) get(repo, commit, prefix string) ([]Object, bool) {
	objs, ok := c.shared(repo, commit, prefix)
	return slices.Clone(objs), ok
}

// shared is get without the copy: the caller only reads it.
func (c *listingCache) shared(repo, commit, prefix string) ([]Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[listingKey(repo, commit, prefix)]
	if !ok {
		return nil, false
	}
	c.order.MoveToBack(el)
	return el.Value.(*keptListing).objs, true
}

// tableFiles is tableFiles(prefix, the kept listing of prefix at commit),
// shared (the caller only reads it): filtered once per kept listing, not at
// every audit of a table of thousands of files.
func (c *listingCache) tableFiles(repo, commit, prefix string) ([]Object, bool) {
	c.mu.Lock()
	el, ok := c.m[listingKey(repo, commit, prefix)]
	if !ok {
		c.mu.Unlock()
		return nil, false
	}
	kl := el.Value.(*keptListing)
	if kl.done {
		c.mu.Unlock()
		return kl.tables, true
	}
	objs := kl.objs
	c.mu.Unlock()
	files := tableFiles(prefix, objs)
	if len(files) == len(objs) {
		files = objs // nothing left out: no second copy
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[listingKey(repo, commit, prefix)]; ok && el.Value.(*keptListing) == kl && !kl.done {
		kl.tables, kl.done = files, true
		c.objects += kl.size() - len(kl.objs)
		if len(files) != len(kl.objs) {
			// A second slice of the same objects: its headers alone (the
			// strings are the listing's).
			extra := len(files) * objectOverhead
			kl.bytes += extra
			c.bytes += extra
		}
	}
	return files, true
}

func (c *listingCache) put(repo, commit, prefix string, objs []Object) {
	size := objectBytes(objs)
	if len(objs) > c.max || size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := listingKey(repo, commit, prefix)
	if el, ok := c.m[k]; ok {
		c.objects -= el.Value.(*keptListing).size()
		c.bytes -= el.Value.(*keptListing).bytes
		c.order.Remove(el)
	}
	c.m[k] = c.order.PushBack(&keptListing{key: k, objs: slices.Clone(objs), bytes: size})
	c.objects += len(objs)
	c.bytes += size
	for (c.objects > c.max || c.bytes > c.maxBytes || c.order.Len() > maxListings) && c.order.Len() > 0 {
		old := c.order.Remove(c.order.Front()).(*keptListing)
		c.objects -= old.size()
		c.bytes -= old.bytes
		delete(c.m, old.key)
	}
}

// listCommit lists prefix at commit (a commit id): from the cache,
// derived (a merge lakewap made, derive.go), or by lakeFS.
func (r *run) listCommit(ctx context.Context, commit, prefix string) ([]Object, error) {
	repo := r.req.Repository
	for {
		if objs, ok := r.e.listings.get(repo, commit, prefix); ok {
			return objs, nil
		}
		fl, lead := r.e.flights.lead(repo, commit, prefix)
		if lead {
			defer fl.end()
			break
		}
		select {
		case <-fl.ended:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if objs, ok := r.derive(ctx, commit, prefix); ok {
		r.e.listings.put(repo, commit, prefix, objs)
		return objs, nil
	}
	objs, err := r.e.opts.Source.List(ctx, repo, commit, prefix)
	if err != nil {
		return nil, err
	}
	r.e.listings.put(repo, commit, prefix, objs)
	return objs, nil
}

// listFlights are the listings of commits being made, so that a listing
// derived ahead (deriveAhead) and a run that needs it meanwhile make it
// once: the run waits for the one being made, and makes it itself when
// that one ends without it.
type listFlights struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// listFlight is one listing being made: ended is closed when its maker ends it.
type listFlight struct {
	f     *listFlights
	k     string
	ended chan struct{}
}

// lead makes the caller the maker of the listing of prefix at commit (lead
// true: it calls end when done), or returns the flight of the one making
// it now (lead false).
func (f *listFlights) lead(repo, commit, prefix string) (fl listFlight, lead bool) {
	if f == nil {
		return listFlight{}, true
	}
	k := listingKey(repo, commit, prefix)
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.m[k]; ok {
		return listFlight{ended: ch}, false
	}
	fl = listFlight{f: f, k: k, ended: make(chan struct{})}
	f.m[k] = fl.ended
	return fl, true
}

func (fl listFlight) end() {
	if fl.f == nil {
		return
	}
	fl.f.mu.Lock()
	delete(fl.f.m, fl.k)
	fl.f.mu.Unlock()
	close(fl.ended)
}
