package audit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// Where two readings differ, refuse. lakeFS's diffs and merges compare
// entries by identity (size, checksum, user metadata, content type), and a
// writer claims the checksum (stageObject, linkPhysicalAddress). A path
// the sealed commit holds at another physical address than the base (the
// target's head) while claiming the same checksum and size is, to lakeFS,
// unchanged: no diff names it, so the batch's changes (scope: batch,
// unaudited_objects, stored_sizes, foreign_addresses) do not see it, yet
// a merge can take the batch's entry (a branch merged into the batch's
// branch brings it; merging the batch publishes it when the target did not
// touch that range) and readers get its bytes. Such a relinked object
// fails the check relinked_objects, which names the paths, unless its
// bytes are the base's (both are downloaded and compared) and it lies
// under the repository's data prefix (address.go): then it is an honest
// re-upload, and which entry lakeFS keeps does not matter. Outside the
// prefix (another repository's data, a bucket the writer can rewrite after
// the publish) equal bytes today prove nothing: the download cache, the
// statistics, the query memo and the derived listings (derive.go) take an
// address's bytes as fixed, so such an object fails whatever its bytes.

// KindRelinked is the kind of the result that names relinked objects.
const KindRelinked = "relinked_objects"

// maxRelinkedCompared bounds the relinked objects one audit downloads to
// compare (twice each, within audit.max_bytes in all); past it they are
// refused uncompared. Honest batches have none: an upload of the same
// bytes keeps the committed entry.
const maxRelinkedCompared = 100

// relinked checks, for each table of the suite, that no object the ref
// holds under its path is at another address than at the base with the
// same claimed checksum and size, unless its bytes are the same.
func (r *run) relinked(ctx context.Context) []schemas.CheckResult {
	if r.req.BaseRef == "" || r.req.BaseRef == r.req.Ref {
		return nil
	}
	var out []schemas.CheckResult
	var cleared []string
	// The tables cleared let listings of the merge of the ref onto the
	// base be derived (derive.go).
	defer func() { r.e.derived.clear(r.req.Repository, r.req.Ref, r.req.BaseRef, cleared) }()
	compared, bytes := 0, int64(0)
	prefix := "" // the repository's data prefix, once learnt
	for _, t := range r.req.Suite.Tables {
		res := schemas.CheckResult{Name: KindRelinked + "(" + t.Name + ")", Kind: KindRelinked, Table: t.Name, Severity: SeverityError,
			Threshold: "no object under " + t.Path + " at another physical address than on " + r.baseName() + " with the same claimed checksum and size, unless its bytes are the same"}
		cands, err := r.relinkCandidates(ctx, t)
		if err != nil {
			res.Status, res.Message = schemas.StatusError, "list "+t.Path+" at the audited commit and at "+r.baseName()+": "+err.Error()
			if r.infra == nil && !errors.As(err, new(errOverBudget)) {
				r.infra = fmt.Errorf("%w: %s: %w", ErrInfrastructure, res.Name, err)
			}
			out = append(out, res)
			continue
		}
		var differ, outside []string
		uncompared := 0
		namespaced := false // each candidate's address was checked against the data prefix
		if len(cands) > 0 {
			namespaced, err = r.relinkedPrefix(ctx, &prefix)
			if err != nil {
				r.failedToRead(&res, "where lakeFS stores the objects of "+r.req.Repository, err)
				out = append(out, res)
				continue
			}
		}
		for _, c := range cands {
			o, b := c[0], c[1]
			if prefix != "" && !strings.HasPrefix(o.Address, prefix) {
				outside = append(outside, o.Path)
				continue
			}
			if compared >= maxRelinkedCompared || bytes+2*o.Size > r.e.opts.MaxBytes {
				differ = append(differ, o.Path)
				uncompared++
				continue
			}
			compared++
			bytes += 2 * o.Size
			same, err := r.sameBytes(ctx, o, b)
			if err != nil {
				r.failedToRead(&res, "compare the bytes of "+o.Path+" at the audited commit and at "+r.baseName(), err)
				break
			}
			if !same {
				differ = append(differ, o.Path)
			}
		}
		if res.Status == schemas.StatusError {
			out = append(out, res)
			continue
		}
		if len(differ) == 0 && len(outside) == 0 {
			if namespaced || len(cands) == 0 {
				cleared = append(cleared, t.Path)
			}
			continue // nothing to say: the report keeps its shape
		}
		res.Status = schemas.StatusFail
		var observed, message []string
		if len(differ) > 0 {
			slices.Sort(differ)
			observed = append(observed, fmt.Sprintf("%d objects at new bytes claiming %s's checksum and size: %s", len(differ), r.baseName(), listed(differ, maxUnauditedPaths)))
			m := "lakeFS compares objects by the checksum a writer claims: it takes these as unchanged, so the batch's changes do not name them, while merging the batch can publish their new bytes"
			if uncompared > 0 {
				m += fmt.Sprintf(" (%d not compared: over %d objects or audit.max_bytes)", uncompared, maxRelinkedCompared)
			}
			message = append(message, m)
		}
		if len(outside) > 0 {
			slices.Sort(outside)
			observed = append(observed, fmt.Sprintf("%d objects claiming %s's checksum and size stored outside %s: %s", len(outside), r.baseName(), schemas.Clip(prefix, 256), listed(outside, maxUnauditedPaths)))
			message = append(message, "stored outside the repository's storage namespace, at a physical address lakeFS did not give: whatever their bytes now, their owner can change them after the publish, while the audit's kept readings take an address's bytes as fixed")
		}
		res.Observed, res.Message = strings.Join(observed, "; "), strings.Join(message, "; ")
		out = append(out, res)
	}
	return out
}

// relinkedPrefix learns the repository's data prefix into *prefix when
// the Source is Namespaced and the base has a name to ask through (as
// foreign_addresses does), and says whether candidates can be checked
// against it. Without it they are compared by bytes only, and the table is
// not cleared for derived listings (derive.go).
func (r *run) relinkedPrefix(ctx context.Context, prefix *string) (bool, error) {
	if *prefix != "" {
		return true, nil
	}
	ns, ok := r.e.opts.Source.(Namespaced)
	if !ok || r.req.BaseName == "" {
		return false, nil
	}
	p, err := r.dataPrefix(ctx, ns)
	if err != nil {
		return false, err
	}
	*prefix = p
	return p != "", nil
}

// relinkCandidates are the objects under t's path that the ref holds at
// another address than the base with the same claimed checksum and size,
// each with the base's, by path.
func (r *run) relinkCandidates(ctx context.Context, t Table) ([][2]Object, error) {
	at, err := r.listRead(ctx, r.req.Ref, t.Path)
	if err != nil {
		return nil, err
	}
	base, err := r.listRead(ctx, r.req.BaseRef, t.Path)
	if err != nil {
		return nil, err
	}
	var out [][2]Object
	candidate := func(o, b Object) {
		if b.Address != o.Address && b.Checksum == o.Checksum && b.Size == o.Size {
			out = append(out, [2]Object{o, b})
		}
	}
	if pathOrdered(at) && pathOrdered(base) {
		// Both in path order, as listed: one walk (this runs for every
		// file of a table at every audit).
		j := 0
		for _, o := range at {
			for j < len(base) && base[j].Path < o.Path {
				j++
			}
			if j < len(base) && base[j].Path == o.Path {
				candidate(o, base[j])
			}
		}
	} else {
		byPath := indexPaths(base)
		for _, o := range at {
			if b, ok := byPath.get(o.Path); ok {
				candidate(o, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]Object) int { return strings.Compare(a[0].Path, b[0].Path) })
	return out, nil
}

// sameBytes downloads o at the ref and b at the base and says whether
// their bytes are the same; more bytes than the claimed size are not.
func (r *run) sameBytes(ctx context.Context, o, b Object) (bool, error) {
	if err := r.reading(ctx); err != nil {
		return false, err
	}
	sum := func(ref string, obj Object) ([]byte, bool, error) {
		w := &cappedHash{h: sha256.New(), left: obj.Size}
		err := r.e.opts.Source.Download(ctx, r.req.Repository, ref, obj.Path, w)
		if errors.Is(err, errOverClaim) || w.over {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return w.h.Sum(nil), w.left == 0, nil
	}
	so, okO, err := sum(r.req.Ref, o)
	if err != nil || !okO {
		return false, err
	}
	sb, okB, err := sum(r.req.BaseRef, b)
	if err != nil || !okB {
		return false, err
	}
	return string(so) == string(sb), nil
}

var errOverClaim = errors.New("more bytes than the claimed size")

// cappedHash hashes at most left bytes; more fail the write.
type cappedHash struct {
	h    hash.Hash
	left int64
	over bool
}

func (c *cappedHash) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		c.over = true
		return 0, errOverClaim
	}
	c.left -= int64(len(p))
	return c.h.Write(p)
}
