package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Object is a file in a lakeFS repository.
type Object struct {
	Path string
	// Checksum is the content checksum lakeFS lists. A writer chooses it
	// (stageObject, linkPhysicalAddress), so nothing that decides what an
	// audit reads may depend on it.
	Checksum string
	// Address is where lakeFS keeps the bytes (the physical address). A
	// new write gets a new address, so the address, not the checksum,
	// names the content in the download cache; empty disables caching.
	Address string
	Size    int64
	// at is the ref to read the object at when it is not its view's (an
	// audit onto the target reads the target's files and the batch's).
	at string
}

// Source is what the engine needs from lakeFS.
type Source interface {
	// List returns the objects under prefix at ref.
	List(ctx context.Context, repo, ref, prefix string) ([]Object, error)
	// Changed returns the objects under prefix added or changed on ref
	// against base (removed objects are not returned), with their paths
	// and sizes; the engine lists the addresses it needs for its cache.
	Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error)
	// Download writes the content of path at ref to w.
	Download(ctx context.Context, repo, ref, path string, w io.Writer) error
}

// tableFiles keeps the objects under prefix that are table data: writers
// leave markers such as _SUCCESS and directories such as _temporary/ or
// _delta_log/ (skipped as Spark and Hive skip them), and lakeFS keeps
// _lakefs_actions/ in the repository. Spark also skips names ending in
// ._COPYING_ (a copy in progress): read, its rows were audited and not
// what Spark users read; skipped, it is an unaudited object.
func tableFiles(prefix string, objs []Object) []Object {
	return slices.DeleteFunc(slices.Clone(objs), func(o Object) bool {
		rel := strings.TrimPrefix(o.Path, prefix)
		// A part of rel (split at "/") starts with "_" or "." (without
		// splitting: this runs for every file of a table at every audit).
		hidden := strings.HasPrefix(rel, "_") || strings.HasPrefix(rel, ".") || strings.Contains(rel, "/_") || strings.Contains(rel, "/.")
		return o.Size == 0 || rel == "" || strings.HasSuffix(rel, "._COPYING_") || hidden
	})
}

// fetch is one object to bring to a local file.
type fetch struct {
	ref string
	obj Object
}

var safeExt = regexp.MustCompile(`^\.[A-Za-z0-9]{1,10}$`)

// cacheName names an object's local copy by where its bytes are: a hash of
// the repository and the physical address, the size, and the extension,
// which DuckDB reads compression from (.gz, .zst). What a writer claims
// about the object (its checksum) is not part of it: an object staged with
// another object's checksum and size still has its own address, so it
// misses the cache and its own bytes are downloaded.
func cacheName(repo string, o Object) string {
	h := sha256.Sum256([]byte(repo + "\x00" + o.Address))
	return hex.EncodeToString(h[:]) + "-" + strconv.FormatInt(o.Size, 10) + localExt(o.Path)
}

// localExt is the extension a local copy keeps. Local names are made of
// safe characters only: DuckDB expands *, ? and [ in file names as globs.
func localExt(p string) string {
	if ext := path.Ext(p); safeExt.MatchString(ext) {
		return ext
	}
	return ""
}

// downloader brings objects to local files: into the cache directory by
// physical address when the object has one (and a cache directory is set),
// otherwise into the run's work directory.
type downloader struct {
	src      Source
	repo     string
	cacheDir string
	workDir  string
	parallel int
	cache    *fileCache   // pins cache files in use
	pinned   func(string) // records a pinned file for the run to unpin
	// files numbers the work-dir files across runs and fetchAll calls:
	// a name reused would replace a file a view reads.
	files *atomic.Int64
	// made records each work-dir file named, for the run to remove.
	made func(string)
	// before, when set, is called before any download (run.reading).
	before func(context.Context) error
}

// fetchAll downloads fs with at most d.parallel downloads at a time and
// returns the local file of each, in order. The first error cancels the rest.
func (d downloader) fetchAll(ctx context.Context, fs []fetch) ([]string, error) {
	local := each(fs, d.local)
	return local, d.getAll(ctx, fs, local)
}

// local names the local copy of f: the cache's file of its address, or a
// new file of the engine's files directory. Nothing is downloaded (getAll). Only a
// file read at a commit goes to the cache: a download is by ref and path,
// and at a branch that moved after its listing it brings another
// address's bytes, which the cache would keep under the listed address
// for every later audit of a commit holding it
// (TestReview44BranchReadsDoNotKeyBytesByAnotherAddress).
func (d downloader) local(f fetch) string {
	if !d.cached(f) {
		p := filepath.Join(d.workDir, strconv.FormatInt(d.files.Add(1), 10)+localExt(f.obj.Path))
		if d.made != nil {
			d.made(p)
		}
		return p
	}
	return filepath.Join(d.cacheDir, cacheName(d.repo, f.obj))
}

// cached says whether f's local copy is the cache's file of its address:
// with a cache, for an object with an address read at a commit.
func (d downloader) cached(f fetch) bool {
	return d.cacheDir != "" && f.obj.Address != "" && IsCommitID(f.ref)
}

// getAll downloads each of fs to its local file (named by local), with at
// most d.parallel downloads at a time. The first error cancels the rest.
func (d downloader) getAll(ctx context.Context, fs []fetch, local []string) error {
	if d.before != nil && len(fs) > 0 {
		if err := d.before(ctx); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards firstErr
		firstErr error
	)
	sem := make(chan struct{}, max(d.parallel, 1))
	for i, f := range fs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := d.get(ctx, f, local[i])
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("download %s@%s: %w", f.obj.Path, f.ref, err)
				cancel()
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		// The caller's context ended before any download failed.
		firstErr = ctx.Err()
	}
	return firstErr
}

// get brings f to local: a cache file already there (whole) is used as it
// is, and kept from eviction until the run ends.
func (d downloader) get(ctx context.Context, f fetch, local string) error {
	if !d.cached(f) {
		return d.download(ctx, f, local)
	}
	d.cache.pin(local) // before the stat: eviction must not race the use
	d.pinned(local)
	if st, err := os.Stat(local); err == nil && st.Size() == f.obj.Size {
		d.cache.touch(local)
		return nil
	}
	if err := d.download(ctx, f, local); err != nil {
		return err
	}
	d.cache.added(f.obj.Size)
	return nil
}

// download streams the object into a temporary file beside dst and renames
// it into place, so a reader never sees a partial file and two runs that
// fetch the same object at once both end with a whole one.
func (d downloader) download(ctx context.Context, f fetch, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	// No more bytes than listed: a download past its size is refused as
	// it comes, not after it filled the disk.
	err = d.src.Download(ctx, d.repo, f.ref, f.obj.Path, &limitedWriter{w: tmp, left: f.obj.Size})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if st, err := os.Stat(tmp.Name()); err != nil {
		return err
	} else if st.Size() != f.obj.Size {
		return fmt.Errorf("%w: got %d bytes, listed as %d", errShortDownload, st.Size(), f.obj.Size)
	}
	return os.Rename(tmp.Name(), dst)
}

var errShortDownload = errors.New("download size differs from listing")

// limitedWriter fails a write past left bytes.
type limitedWriter struct {
	w    io.Writer
	left int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%w: more bytes than the listed size", errShortDownload)
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}
