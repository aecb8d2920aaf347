package lakefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"time"
	"unsafe"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
	"github.com/treeverse/lakefs/pkg/api/apigen"
)

// Object is one object at a ref.
type Object struct {
	Path, Checksum  string
	Size            int64
	PhysicalAddress string
	Mtime           time.Time
	// contentType is the length of the content type lakeFS listed (not
	// kept: vetObject bounds it).
	contentType int
}

// Change is one path that differs between two refs (or a branch and its
// uncommitted state). Type is added, removed, changed (or conflict).
type Change struct {
	Path, Type string
	Size       int64
}

// Upload writes r to path on branch (uncommitted until a commit). The
// body is streamed, never held whole in memory.
func (c *Client) Upload(ctx context.Context, repo, branch, p string, r io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	copied := make(chan error, 1)
	go func() {
		part, err := mw.CreateFormFile("content", path.Base(p))
		if err == nil {
			_, err = io.Copy(part, r)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
		copied <- err
	}()
	k := call{op: "upload", repo: repo, ref: branch + ":" + p, transfer: true}
	err := c.send(ctx, k, http.StatusCreated, nil, func(ctx context.Context) (*http.Response, error) {
		resp, err := c.api.UploadObjectWithBody(ctx, repo, branch, &apigen.UploadObjectParams{Path: p}, mw.FormDataContentType(), pr)
		pr.Close() // unblocks the copier if the request ended before reading all of r
		return resp, err
	})
	if copyErr := <-copied; copyErr != nil && !errors.Is(copyErr, io.ErrClosedPipe) {
		// The caller's reader failed: not lakeFS's fault, not ours to retry.
		return &Error{Op: k.op, Repo: repo, Ref: k.ref, Message: "reading upload body", Cause: copyErr}
	}
	return err
}

// Download streams the object at path on ref into w.
func (c *Client) Download(ctx context.Context, repo, ref, p string, w io.Writer) error {
	return c.send(ctx, call{op: "download", repo: repo, ref: ref + ":" + p, transfer: true}, http.StatusOK, w, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetObject(ctx, repo, ref, &apigen.GetObjectParams{Path: p})
	})
}

// readErrMarker tells a failure reading the response (transient), a
// readErr, apart from a failure of the caller's writer (not ours to retry).
type readErrMarker struct{ r io.Reader }

type readErr struct{ error }

func (m *readErrMarker) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err != nil && err != io.EOF {
		err = readErr{err}
	}
	return n, err
}

// List lists every object under prefix at ref, recursively, without
// their user metadata (lakewap reads none of it).
func (c *Client) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	return listVetted(ctx, c, call{op: "list objects", repo: repo, ref: ref + ":" + prefix}, 0,
		objectFrom, vetObject,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListObjects(ctx, repo, ref, &apigen.ListObjectsParams{Prefix: prefixParam(prefix), After: after, Amount: amount, UserMetadata: ptr(false)})
		})
}

// Diff lists the objects under prefix that right changed since its merge
// base with left (lakeFS's default three-dot diff: what merging right into
// left would bring).
func (c *Client) Diff(ctx context.Context, repo, left, right, prefix string) ([]Change, error) {
	return listVetted(ctx, c, call{op: "diff", repo: repo, ref: left + "..." + right}, 0, changeFrom, vetChange,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffRefs(ctx, repo, left, right, &apigen.DiffRefsParams{After: after, Prefix: prefixParam(prefix), Amount: amount})
		})
}

// Touches reports whether right brings any change under prefix against
// its merge-base with left (the three-dot diff of Diff), asking for one
// entry.
func (c *Client) Touches(ctx context.Context, repo, left, right, prefix string) (bool, error) {
	changes, err := listVetted(ctx, c, call{op: "diff", repo: repo, ref: left + "..." + right}, 1, changeFrom, vetChange,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffRefs(ctx, repo, left, right, &apigen.DiffRefsParams{After: after, Prefix: prefixParam(prefix), Amount: amount})
		})
	return len(changes) > 0, err
}

// DifferingPaths names the paths under prefix whose entries differ between
// the commits from and to (Differences), at most limit of them (more:
// truncated is true): Removed, a path at from only; Added, at to only;
// neither, at both with other entries.
func (c *Client) DifferingPaths(ctx context.Context, repo, from, to, prefix string, limit int) (paths []pipeline.Change, truncated bool, err error) {
	changes, truncated, err := c.Differences(ctx, repo, from, to, prefix, limit)
	for _, ch := range changes {
		paths = append(paths, pipeline.Change{Path: ch.Path, Size: ch.Size, Removed: ch.Type == "removed", Added: ch.Type == "added"})
	}
	return paths, truncated, err
}

// Differences lists the objects under prefix whose entries differ between
// the commits from and to (lakeFS's two-dot diff: a comparison of the two
// trees by identity, whatever their ancestry): added, changed and removed,
// with paths and sizes, at most limit of them (more: truncated is true).
func (c *Client) Differences(ctx context.Context, repo, from, to, prefix string, limit int) (changes []Change, truncated bool, err error) {
	twoDot := "two_dot"
	changes, err = listVetted(ctx, c, call{op: "diff", repo: repo, ref: from + ".." + to}, limit+1, changeFrom, vetChange,
		func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.DiffRefs(ctx, repo, from, to, &apigen.DiffRefsParams{After: after, Prefix: prefixParam(prefix), Amount: amount, Type: &twoDot})
		})
	if len(changes) > limit {
		return changes[:limit], true, err
	}
	return changes, false, err
}

func objectFrom(o apigen.ObjectStats) Object {
	return Object{Path: o.Path, Checksum: o.Checksum, PhysicalAddress: o.PhysicalAddress, Mtime: time.Unix(o.Mtime, 0).UTC(), Size: deref(o.SizeBytes),
		contentType: len(deref(o.ContentType))}
}

const (
	// MaxPathBytes bounds the path of an entry of an object listing or a
	// diff: an object key is at most 1,024 bytes (S3, GCS; Azure Blob
	// names 1,024 characters), so a longer path is no file a reader through
	// lakeFS's S3 gateway, or of the storage namespace, reads as lakeFS
	// lists it. lakeFS's API refuses longer ones itself (its maximum of
	// 1,024, TestWritersLongEntriesAreRefusedNotLeftOut): the client does
	// not rely on it (an older server, an imported range).
	MaxPathBytes = 1024
	// MaxAddressBytes bounds an object's physical address: lakeFS's block
	// adapters make a scheme, a bucket or container (at most 63 bytes on
	// S3 and Azure, 222 on GCS) and an object key of at most 1,024 bytes;
	// lakeFS links only addresses it signed, or imports an object store's.
	MaxAddressBytes = 2048
	// MaxChecksumBytes bounds an object's checksum: the adapters make an
	// ETag or a digest of tens of bytes (a multipart ETag: 32 hex digits,
	// "-" and the part count); a writer claims any (linkPhysicalAddress
	// takes 4 KiB, TestWritersLongEntriesAreRefusedNotLeftOut).
	MaxChecksumBytes = 256
	// MaxContentTypeBytes bounds an object's content type, which lakeFS
	// lists always and a writer sets to anything (linkPhysicalAddress);
	// lakewap keeps none of it, but a page of the listing is read to 64
	// MiB at most, and lakeFS commits an entry of up to 40 MiB: a writer's
	// objects filling a page made every later listing of the table fail
	// (as their user metadata did, which listings no longer ask for:
	// TestWritersUserMetadataDoesNotFillTheListingsPages). A media type
	// with its parameters is tens of bytes.
	MaxContentTypeBytes = 1024
	// ListEntryBytes is what one entry of a listing holds on average at
	// most, the entry itself (88 bytes an Object) and its paths, addresses
	// and checksums: a listing holds at most Config.MaxListEntries times it
	// (512 MB for audit.max_list_objects' 1,000,000; an honest entry is
	// about 290 bytes), but for the allocator's rounding of each string (up
	// to an eighth). Within each entry's limits above a million entries
	// held 3.3 GB.
	ListEntryBytes = 512
	// namedBytes is how much of a refused path an error quotes.
	namedBytes = 96
)

// EntryError is a listing refused for one entry past its limit
// (ErrEntryOverLimit): Path is the entry's path, whole.
type EntryError struct {
	Path string
	msg  string
}

func (e *EntryError) Error() string { return e.msg }

func (e *EntryError) Unwrap() error { return ErrEntryOverLimit }

// entryError refuses a listing for what of the entry at path, n bytes
// long, past limit bytes (why: what makes the limit).
func entryError(what, path string, n, limit int, why string) error {
	return &EntryError{Path: path, msg: fmt.Sprintf("%v: %s %q is %d bytes, longer than the %d %s",
		ErrEntryOverLimit, what, schemas.Clip(path, namedBytes), n, limit, why)}
}

// RefusedAt reports whether err is a listing refused for an entry past its
// limit (an EntryError) that ref holds too, the same path refused there
// (one call, one entry): the entry is ref's, not only the listed ref's.
// It names the entry's path; a failed call is its error.
func (c *Client) RefusedAt(ctx context.Context, repo, ref string, err error) (string, bool, error) {
	var ee *EntryError
	if !errors.As(err, &ee) {
		return "", false, nil
	}
	_, lerr := listVetted(ctx, c, call{op: "list objects", repo: repo, ref: ref + ":" + ee.Path}, 1,
		objectFrom, vetObject,
		func(ctx context.Context, _ *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListObjects(ctx, repo, ref, &apigen.ListObjectsParams{Prefix: prefixParam(ee.Path), Amount: amount, UserMetadata: ptr(false)})
		})
	var at *EntryError
	if errors.As(lerr, &at) {
		return ee.Path, at.Path == ee.Path, nil
	}
	return ee.Path, false, lerr
}

// heldBy is err, saying so when the entry it refuses is at ref too (the
// merge-base named name): not the listed commit's doing.
func (c *Client) heldBy(ctx context.Context, repo, ref, name string, err error) error {
	if p, held, herr := c.RefusedAt(ctx, repo, ref, err); herr == nil && held {
		return fmt.Errorf("%w; the object %q is already on %s (%s), not this batch's: every listing of it is refused until it is removed from there (delete it on the target branch and commit)",
			err, schemas.Clip(p, namedBytes), name, ref)
	}
	return err
}

func vetPath(p string) error {
	if len(p) > MaxPathBytes {
		return entryError("the path", p, len(p), MaxPathBytes, "bytes an object key may be (S3, GCS, Azure Blob): no reader reads it as lakeFS lists it")
	}
	return nil
}

// vetObject is the bytes o holds, or why a listing of it is refused.
func vetObject(o Object) (int, error) {
	if err := vetPath(o.Path); err != nil {
		return 0, err
	}
	if len(o.PhysicalAddress) > MaxAddressBytes {
		return 0, entryError("the physical address of", o.Path, len(o.PhysicalAddress), MaxAddressBytes, "bytes of a bucket and an object key any block adapter of lakeFS makes")
	}
	if len(o.Checksum) > MaxChecksumBytes {
		return 0, entryError("the checksum of", o.Path, len(o.Checksum), MaxChecksumBytes, "bytes of an ETag or digest any block adapter of lakeFS makes")
	}
	if o.contentType > MaxContentTypeBytes {
		return 0, entryError("the content type of", o.Path, o.contentType, MaxContentTypeBytes, "bytes of a media type and its parameters")
	}
	return heldString(o.Path) + heldString(o.PhysicalAddress) + heldString(o.Checksum), nil
}

// vetChange is the bytes ch holds, or why a diff of it is refused.
func vetChange(ch Change) (int, error) {
	return heldString(ch.Path) + heldString(ch.Type), vetPath(ch.Path)
}

// heldString is the heap s takes as the decoder allocates it
// (schemas.HeldBytes): counted by their lengths, a writer's entries of
// strings just past a size class made a listing hold 8 to 11% over its
// budget (TestLimits63ListingBudgetCountsTheAllocatorsRounding).
func heldString(s string) int { return schemas.HeldBytes(len(s)) }

func changeFrom(d apigen.Diff) Change {
	return Change{Path: d.Path, Type: d.Type, Size: deref(d.SizeBytes)}
}

// page is one page of any lakeFS listing.
type page[R any] struct {
	Pagination apigen.Pagination `json:"pagination"`
	Results    []R               `json:"results"`
}

// list collects the pages of a listing as conv makes them, up to limit
// items (0: all of them, at most c.maxList, else an error wrapping
// ErrListOverLimit); get asks for up to amount items after the cursor.
func list[R, T any](ctx context.Context, c *Client, k call, limit int, conv func(R) T,
	get func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error),
) ([]T, error) {
	return listKept(ctx, c, k, limit, func(r R) (T, bool) { return conv(r), true }, get)
}

// listKept is list keeping only the entries conv says to keep, as each
// page is read; the entries it leaves out count towards c.maxList too.
func listKept[R, T any](ctx context.Context, c *Client, k call, limit int, conv func(R) (T, bool),
	get func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error),
) ([]T, error) {
	return listChecked(ctx, c, k, limit, conv, nil, get)
}

// listVetted is list with each entry vetted as its page is read (vet:
// the bytes it holds, or why it is refused): the listing holds at most
// c.maxListBytes of them, and stops at the first entry refused.
func listVetted[R, T any](ctx context.Context, c *Client, k call, limit int, conv func(R) T, vet func(T) (int, error),
	get func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error),
) ([]T, error) {
	return listChecked(ctx, c, k, limit, func(r R) (T, bool) { return conv(r), true }, vet, get)
}

func listChecked[R, T any](ctx context.Context, c *Client, k call, limit int, conv func(R) (T, bool), vet func(T) (int, error),
	get func(ctx context.Context, after *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error),
) ([]T, error) {
	var out []T
	var after *apigen.PaginationAfter
	seen, strs := 0, 0
	for {
		if limit == 0 && seen > c.maxList {
			return nil, c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref,
				Cause: fmt.Errorf("%w: more than %d entries, the most one may hold (audit.max_list_objects)", ErrListOverLimit, c.maxList)})
		}
		amount := apigen.PaginationAmount(pageSize)
		if limit > 0 {
			amount = apigen.PaginationAmount(min(pageSize, limit-len(out)))
		}
		var p page[R]
		err := c.send(ctx, k, http.StatusOK, &p, func(ctx context.Context) (*http.Response, error) {
			return get(ctx, after, &amount)
		})
		if err != nil {
			return nil, err
		}
		seen += len(p.Results)
		for _, r := range p.Results {
			v, ok := conv(r)
			if !ok {
				continue
			}
			if vet != nil {
				n, err := vet(v)
				if err != nil {
					return nil, c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Cause: err})
				}
				strs += n
			}
			out = append(out, v)
			// The entries themselves count too, as the slice holds them
			// (an Object is 88 bytes, the slice grown ahead of them): a
			// budget of their strings alone let a listing at the limit
			// hold 25 to 29% more than it.
			if vet != nil && strs+cap(out)*int(unsafe.Sizeof(v)) > c.maxListBytes {
				return nil, c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref,
					Cause: fmt.Errorf("%w: more than %d bytes of entries (their paths, addresses and checksums as allocated), the most one may hold (%d per entry of audit.max_list_objects)",
						ErrListOverLimit, c.maxListBytes, ListEntryBytes)})
			}
		}
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
		if !p.Pagination.HasMore || p.Pagination.NextOffset == "" || len(p.Results) == 0 {
			return out, nil
		}
		after = ptr(apigen.PaginationAfter(p.Pagination.NextOffset))
	}
}

func prefixParam(prefix string) *apigen.PaginationPrefix {
	if prefix == "" {
		return nil
	}
	return ptr(apigen.PaginationPrefix(prefix))
}

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// FirstUnder is the first object of ref whose path starts with prefix
// (path order), and false when none does: one call, one entry. A path
// sorts first of those it prefixes, so it looks one path up without
// listing what a writer put under it as a prefix.
func (c *Client) FirstUnder(ctx context.Context, repo, ref, prefix string) (Object, bool, error) {
	objs, err := listVetted(ctx, c, call{op: "list objects", repo: repo, ref: ref + ":" + prefix}, 1, objectFrom, vetObject,
		func(ctx context.Context, _ *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListObjects(ctx, repo, ref, &apigen.ListObjectsParams{Prefix: prefixParam(prefix), Amount: amount, UserMetadata: ptr(false)})
		})
	if err != nil || len(objs) == 0 {
		return Object{}, false, err
	}
	return objs[0], true, nil
}

// After is the first object of ref whose path sorts after the given one
// (any prefix), and false when none does: one call, one object.
func (c *Client) After(ctx context.Context, repo, ref, after string) (Object, bool, error) {
	objs, err := listVetted(ctx, c, call{op: "list objects", repo: repo, ref: ref + ":>" + after}, 1,
		objectFrom, vetObject,
		func(ctx context.Context, _ *apigen.PaginationAfter, amount *apigen.PaginationAmount) (*http.Response, error) {
			return c.api.ListObjects(ctx, repo, ref, &apigen.ListObjectsParams{After: ptr(apigen.PaginationAfter(after)), Amount: amount, UserMetadata: ptr(false)})
		})
	if err != nil || len(objs) == 0 {
		return Object{}, false, err
	}
	return objs[0], true, nil
}

// Relinked names the paths ref holds at another physical address than its
// merge-base with base, with the same claimed checksum and size: lakeFS's
// diffs and merges take them as unchanged (its identity is the claimed
// checksum and size, with user metadata and content type), yet merging ref
// can publish their bytes. The merge-base, not base itself: what base came
// to hold at another address since (another publish writing a file again
// with the same bytes) is not ref's doing, as the three-dot diff of ref
// does not name what base changed. Both are listed whole (at most
// Config.MaxListEntries each, else an error wrapping ErrListOverLimit),
// side by side a page at a time in path order, as lakeFS lists them: it
// holds two pages and the paths it names (within the listing's byte
// budget), where it held both listings and a map of one, more than twice
// the budget (TestLimits63RelinkedHoldsWithinTheListingBudget).
func (c *Client) Relinked(ctx context.Context, repo, ref, base string) ([]string, error) {
	mb, _, err := c.MergeBase(ctx, repo, ref, base)
	if err != nil {
		return nil, err
	}
	if mb == "" {
		return nil, fmt.Errorf("relinked paths of %s: no merge-base with %s", ref, base)
	}
	at, was := c.objectCursor(repo, ref), c.objectCursor(repo, mb)
	var out []string
	held := 0
	for {
		o, ok, err := at.peek(ctx)
		if err != nil {
			return nil, c.heldBy(ctx, repo, mb, "the merge-base with "+base, err)
		}
		if !ok {
			return out, nil
		}
		for {
			b, ok, err := was.peek(ctx)
			if err != nil {
				return nil, c.heldBy(ctx, repo, mb, "the merge-base with "+base, err)
			}
			if !ok || b.Path > o.Path {
				break
			}
			was.next()
			if b.Path == o.Path && b.PhysicalAddress != o.PhysicalAddress && b.Checksum == o.Checksum && b.Size == o.Size {
				if held += heldString(o.Path) + int(unsafe.Sizeof(o.Path)); held > c.maxListBytes {
					return nil, c.logged(at.k, time.Now(), &Error{Op: at.k.op, Repo: repo, Ref: at.k.ref,
						Cause: fmt.Errorf("%w: more than %d bytes of relinked paths, the most a listing may hold (%d per entry of audit.max_list_objects)",
							ErrListOverLimit, c.maxListBytes, ListEntryBytes)})
				}
				out = append(out, o.Path)
			}
		}
		at.next()
	}
}

// cursor walks a listing of every object of a ref a page at a time, each
// entry vetted (vetObject), the pages in strict path order, at most
// c.maxList entries (else an error wrapping ErrListOverLimit).
type cursor struct {
	c         *Client
	k         call
	repo, ref string
	page      []Object
	i, seen   int
	after     *apigen.PaginationAfter
	last      string
	done      bool
}

func (c *Client) objectCursor(repo, ref string) *cursor {
	return &cursor{c: c, k: call{op: "list objects", repo: repo, ref: ref + ":"}, repo: repo, ref: ref}
}

// peek is the cursor's entry, reading the next page when the one read is
// done; false past the last.
func (cur *cursor) peek(ctx context.Context) (Object, bool, error) {
	for cur.i >= len(cur.page) {
		if cur.done {
			return Object{}, false, nil
		}
		if err := cur.read(ctx); err != nil {
			return Object{}, false, err
		}
	}
	return cur.page[cur.i], true, nil
}

func (cur *cursor) next() { cur.i++ }

func (cur *cursor) read(ctx context.Context) error {
	c, k := cur.c, cur.k
	if cur.seen > c.maxList {
		return c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref,
			Cause: fmt.Errorf("%w: more than %d entries, the most one may hold (audit.max_list_objects)", ErrListOverLimit, c.maxList)})
	}
	amount := apigen.PaginationAmount(pageSize)
	var p page[apigen.ObjectStats]
	err := c.send(ctx, k, http.StatusOK, &p, func(ctx context.Context) (*http.Response, error) {
		return c.api.ListObjects(ctx, cur.repo, cur.ref, &apigen.ListObjectsParams{After: cur.after, Amount: &amount, UserMetadata: ptr(false)})
	})
	if err != nil {
		return err
	}
	cur.seen += len(p.Results)
	cur.page, cur.i = cur.page[:0], 0
	for _, r := range p.Results {
		o := objectFrom(r)
		if _, err := vetObject(o); err != nil {
			return c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Cause: err})
		}
		if cur.last != "" && o.Path <= cur.last {
			return c.logged(k, time.Now(), &Error{Op: k.op, Repo: k.repo, Ref: k.ref,
				Cause: fmt.Errorf("the listing is not in path order: %q after %q", schemas.Clip(o.Path, namedBytes), schemas.Clip(cur.last, namedBytes))})
		}
		cur.last = o.Path
		cur.page = append(cur.page, o)
	}
	if !p.Pagination.HasMore || p.Pagination.NextOffset == "" || len(p.Results) == 0 {
		cur.done = true
	} else {
		cur.after = ptr(apigen.PaginationAfter(p.Pagination.NextOffset))
	}
	return nil
}
