package audit

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync"
)

// Listings of commits. A commit id names exact content, so the objects
// under a prefix at a commit are a fact that does not change: the engine
// keeps the listings it made of commits (never of branches) and answers
// the same listing again from memory. A listing of a commit it has not
// listed is derived, when it can be, from the last listing it made of the
// same prefix: lakeFS's two-dot diff between the two commits under the
// prefix (a comparison of their trees, whatever their ancestry) says which
// paths were added, changed or removed; the added and changed ones are
// listed again, folder by folder, for their physical addresses. Anything
// that does not add up (a diff over maxDerivedChanges entries, changed
// files in more than maxDerivedFolders folders, a changed path the folder
// listing does not hold) and the commit is listed whole. So an incremental
// audit, and the recheck of a batch onto the moved target, cost lakeFS
// what changed since the last audit instead of the table's size.

// Difference is one path that differs between two commits.
type Difference struct {
	Path    string
	Removed bool
}

// Differ is a Source that compares two commits' trees (lakeFS's two-dot
// diff). Without it every listing of a commit is made whole.
type Differ interface {
	// Differences lists the paths under prefix whose objects differ
	// between the commits from and to, at most limit of them (more:
	// truncated).
	Differences(ctx context.Context, repo, from, to, prefix string, limit int) (diff []Difference, truncated bool, err error)
}

const (
	// listingCacheObjects bounds the objects the kept listings hold in
	// all (an object's entry shares its strings with the listing it was
	// derived from: about 100 bytes each).
	listingCacheObjects = 400_000
	// maxListings bounds the listings kept (each use moves one in a list
	// of them).
	maxListings = 4096
	// maxDerivedChanges bounds the diff a listing is derived from.
	maxDerivedChanges = 1000
	// maxDerivedFolders bounds the folders listed for the addresses of a
	// derived listing's added and changed files.
	maxDerivedFolders = 8
)

// listingCache keeps listings of commits, least recently used first out.
type listingCache struct {
	mu      sync.Mutex
	max     int
	objects int
	m       map[string][]Object // repo \x00 commit \x00 prefix
	order   []string            // least recently used first
	last    map[string]string   // repo \x00 prefix: the commit listed last
}

func newListingCache(max int) *listingCache {
	return &listingCache{max: max, m: map[string][]Object{}, last: map[string]string{}}
}

func listingKey(repo, commit, prefix string) string { return repo + "\x00" + commit + "\x00" + prefix }

// get returns a copy of the listing of prefix at commit.
func (c *listingCache) get(repo, commit, prefix string) ([]Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := listingKey(repo, commit, prefix)
	objs, ok := c.m[k]
	if !ok {
		return nil, false
	}
	c.touch(k)
	return slices.Clone(objs), true
}

// latest is the commit whose listing of prefix was kept last, and it.
func (c *listingCache) latest(repo, prefix string) (string, []Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commit, ok := c.last[repo+"\x00"+prefix]
	if !ok {
		return "", nil, false
	}
	objs, ok := c.m[listingKey(repo, commit, prefix)]
	return commit, objs, ok // shared: the caller only reads it
}

func (c *listingCache) touch(k string) {
	if i := slices.Index(c.order, k); i >= 0 {
		c.order = append(c.order[:i], c.order[i+1:]...)
	}
	c.order = append(c.order, k)
}

func (c *listingCache) put(repo, commit, prefix string, objs []Object) {
	if len(objs) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := listingKey(repo, commit, prefix)
	if old, ok := c.m[k]; ok {
		c.objects -= len(old)
	}
	c.m[k] = slices.Clone(objs)
	c.objects += len(objs)
	c.touch(k)
	c.last[repo+"\x00"+prefix] = commit
	for (c.objects > c.max || len(c.order) > maxListings) && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.objects -= len(c.m[old])
		delete(c.m, old)
	}
}

// listCommit lists prefix at commit (a commit id): from the cache, derived
// from the last listing of prefix, or whole.
func (r *run) listCommit(ctx context.Context, commit, prefix string) ([]Object, error) {
	repo := r.req.Repository
	if objs, ok := r.e.listings.get(repo, commit, prefix); ok {
		return objs, nil
	}
	objs, ok := r.derive(ctx, commit, prefix)
	if !ok {
		var err error
		if objs, err = r.e.opts.Source.List(ctx, repo, commit, prefix); err != nil {
			return nil, err
		}
	}
	r.e.listings.put(repo, commit, prefix, objs)
	return objs, nil
}

// derive is the listing of prefix at commit made from the last kept
// listing of prefix and the two commits' differences, or false.
func (r *run) derive(ctx context.Context, commit, prefix string) ([]Object, bool) {
	from, base, ok := r.e.listings.latest(r.req.Repository, prefix)
	if !ok {
		return nil, false
	}
	return DeriveListing(ctx, r.e.opts.Source, r.req.Repository, from, base, commit, prefix)
}

// DeriveListing is the listing of prefix at commit made from base, the
// listing of prefix at the commit from, and lakeFS's two-dot diff of the
// two commits: the removed paths dropped, the added and changed ones
// listed again folder by folder. It reports false, and the caller lists
// commit whole, when src is no Differ or anything does not add up.
func DeriveListing(ctx context.Context, src Source, repo, from string, base []Object, commit, prefix string) ([]Object, bool) {
	differ, ok := src.(Differ)
	if !ok {
		return nil, false
	}
	diff, truncated, err := differ.Differences(ctx, repo, from, commit, prefix, maxDerivedChanges)
	if err != nil || truncated {
		return nil, false
	}
	byPath := make(map[string]Object, len(base)+len(diff))
	for _, o := range base {
		byPath[o.Path] = o
	}
	var folders []string
	changed := map[string]bool{}
	for _, d := range diff {
		if !strings.HasPrefix(d.Path, prefix) {
			return nil, false
		}
		delete(byPath, d.Path) // removed, or until its folder's listing gives it again
		if d.Removed {
			continue
		}
		changed[d.Path] = true
		dir := path.Dir(d.Path) + "/"
		if !strings.HasPrefix(dir, prefix) {
			dir = prefix // a file right under a prefix that is no folder
		}
		if !slices.Contains(folders, dir) {
			folders = append(folders, dir)
		}
	}
	if len(folders) > maxDerivedFolders {
		return nil, false
	}
	for _, dir := range folders {
		listed, err := src.List(ctx, repo, commit, dir)
		if err != nil {
			return nil, false
		}
		for _, o := range listed {
			if changed[o.Path] {
				byPath[o.Path] = o
				delete(changed, o.Path)
			}
		}
	}
	if len(changed) > 0 {
		return nil, false // the diff names a file its folder does not hold
	}
	out := make([]Object, 0, len(byPath))
	for _, o := range byPath {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	return out, true
}
