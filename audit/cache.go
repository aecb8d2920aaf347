package audit

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// fileCache bounds the download cache: files in use by a run are pinned,
// a hit refreshes a file's time, and after each run the least recently
// used unpinned files go until the cache fits in max bytes.
//
// The cache's size is known from its last walk plus the bytes downloaded
// into it since (added): a run after which the cache still fits walks
// nothing, so the end of a run does not cost time that grows with the
// cache (a recheck in the publish turn ends with it). Bytes added while a
// walk runs may be counted twice, never missed: an early walk, not an
// overfull cache.
type fileCache struct {
	dir string
	max int64 // 0: unbounded

	mu    sync.Mutex
	inUse map[string]int
	known bool  // size was measured by a walk
	size  int64 // bytes in the cache: the last walk's, less what it freed, plus added since
	adds  int64 // bytes added in all (added)
	walks int   // walks of the directory, for tests
}

func newFileCache(dir string, max int64) *fileCache {
	return &fileCache{dir: dir, max: max, inUse: map[string]int{}}
}

// added counts n bytes downloaded into the cache.
func (c *fileCache) added(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.size += n
	c.adds += n
}

// pin keeps path from eviction until unpin; it is called before the file is
// looked at, so an eviction cannot remove it between the check and the use.
func (c *fileCache) pin(path string) {
	c.mu.Lock()
	c.inUse[path]++
	c.mu.Unlock()
}

func (c *fileCache) unpin(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if c.inUse[p]--; c.inUse[p] <= 0 {
			delete(c.inUse, p)
		}
	}
}

// touch marks a cache hit, for least-recently-used order (mtime: atime is
// often not kept).
func (c *fileCache) touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// evict removes least recently used files not in use until the cache holds
// at most max bytes, and returns how many bytes it freed.
func (c *fileCache) evict() (freed int64, err error) {
	if c.max <= 0 || c.dir == "" {
		return 0, nil
	}
	c.mu.Lock()
	fits, before := c.known && c.size <= c.max, c.adds
	if !fits {
		c.walks++
	}
	c.mu.Unlock()
	if fits {
		return 0, nil
	}
	var total int64
	defer func() { // total is what the walk found, less what was removed
		c.mu.Lock()
		c.known, c.size = err == nil, total+(c.adds-before)
		c.mu.Unlock()
	}()
	type entry struct {
		path string
		size int64
		mod  time.Time
	}
	var files []entry
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".part-") {
			return nil // a download in progress is not cache yet
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, entry{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil || total <= c.max {
		return 0, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		if total <= c.max {
			break
		}
		if c.inUse[f.path] > 0 {
			continue
		}
		if err := os.Remove(f.path); err == nil {
			total -= f.size
			freed += f.size
		}
	}
	return freed, nil
}
