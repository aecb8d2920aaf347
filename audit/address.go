package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// What is merged lives where lakeFS put it. A writer may stage an object
// at any physical address (stageObject, linkPhysicalAddress): a file of
// another repository, or, on an object store, a key in a bucket the writer
// owns and can rewrite after the publish. The audit reads those bytes as
// readers would today, but main would hold data lakewap does not own. So
// every object a batch changes under a table's path must lie under the
// repository's data prefix (its storage namespace as the blockstore names
// it); anything else fails the check foreign_addresses, which names the
// paths, and the batch is aborted.
//
// Whether an object's claimed size is its stored size cannot be asked of
// lakeFS's API (it serves the claimed size): the check stored_sizes asks
// the blockstore (storedsize.go).

// KindForeignAddress is the kind of the result that names objects staged
// outside the repository's storage namespace.
const KindForeignAddress = "foreign_addresses"

// Namespaced is a Source that knows where lakeFS puts a repository's
// objects: DataPrefix is the storage namespace as the blockstore qualifies
// it (local://<root>/<namespace>/, s3://bucket/prefix/), learnt through
// branch. Without it the check does not run.
type Namespaced interface {
	DataPrefix(ctx context.Context, repo, branch string) (string, error)
}

// foreignAddresses checks, for each table the audit read, that the objects
// the ref changes under its path (against the base) that the audit read
// lie under the repository's data prefix. Objects it did not read are
// unaudited's.
func (r *run) foreignAddresses(ctx context.Context) []schemas.CheckResult {
	ns, ok := r.e.opts.Source.(Namespaced)
	if !ok || r.req.BaseRef == "" || r.req.BaseRef == r.req.Ref || r.req.BaseName == "" {
		return nil
	}
	var out []schemas.CheckResult
	prefix := ""
	for _, t := range r.req.Suite.Tables {
		res := schemas.CheckResult{Name: KindForeignAddress + "(" + t.Name + ")", Kind: KindForeignAddress, Table: t.Name, Severity: SeverityError,
			Threshold: "every changed object under " + t.Path + " stored under the repository's storage namespace"}
		addr, err := r.readAtRef(ctx, t)
		if err != nil {
			r.failedToRead(&res, "the addresses of the objects read under "+t.Path, err)
			out = append(out, res)
			continue
		}
		if len(addr) == 0 {
			continue
		}
		changed, err := r.changedRead(ctx, t.Path, addr)
		if err == nil && prefix == "" {
			prefix, err = r.dataPrefix(ctx, ns)
		}
		if err != nil {
			r.failedToRead(&res, "where lakeFS stores the objects of "+r.req.Repository, err)
			out = append(out, res)
			continue
		}
		var foreign []string
		for _, o := range changed {
			if !strings.HasPrefix(o.Address, prefix) {
				foreign = append(foreign, o.Path)
				if r.foreign == nil {
					r.foreign = map[string]bool{}
				}
				r.foreign[o.Path] = true
			}
		}
		if len(foreign) == 0 {
			continue
		}
		slices.Sort(foreign)
		res.Status = schemas.StatusFail
		res.Observed = fmt.Sprintf("%d changed objects stored outside %s: %s", len(foreign), schemas.Clip(prefix, 256), listed(foreign, maxUnauditedPaths))
		res.Message = "staged at a physical address lakeFS did not give: another repository's data, or bytes their owner can change after the publish"
		out = append(out, res)
	}
	return out
}

// changedRead are the objects the ref changes under prefix (against the
// base) that the audit read there (read: readAtRef), with their addresses.
func (r *run) changedRead(ctx context.Context, prefix string, read map[string]Object) ([]Object, error) {
	changed, err := r.changed(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, c := range changed {
		if o, ok := read[c.Path]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// readAtRef are the objects of table t the audit read at the ref, with
// their physical addresses, by path: the files of its views and, for a
// Delta table, its log and the change data files it compared. A file read
// from the batch's changes without a download cache has no address (a
// diff gives none): it takes the one the ref's listing gives the same path
// and size (the listing the query memo takes them from too, kept per
// commit). Before, such a file was left out,
// and an incremental audit without a cache judged no address at all.
func (r *run) readAtRef(ctx context.Context, t Table) (map[string]Object, error) {
	key := strings.ToLower(t.Name)
	read := map[string]Object{}
	var listed *pathIndex
	for _, s := range []string{schemaMain, schemaBatch, schemaInterim} {
		v := r.views[viewKey{s, key}]
		if v == nil || v.broken {
			continue
		}
		objs := v.objects
		if v.delta != nil && v.ref == r.req.Ref {
			objs = append(append(slices.Clone(objs), v.delta.log...), v.delta.cdcObjects()...)
		}
		for _, o := range objs {
			if o.at != "" && o.at != r.req.Ref {
				continue
			}
			if o.Address == "" {
				if listed == nil {
					l, err := r.listRead(ctx, r.req.Ref, t.Path)
					if err != nil {
						return nil, fmt.Errorf("list table %s at %s: %w", t.Name, r.req.Ref, err)
					}
					x := indexPaths(l)
					listed = &x
				}
				lo, ok := listed.get(o.Path)
				if !ok || lo.Size != o.Size {
					// Fail closed: a file read that the listing of the same
					// commit does not hold as read has no address to judge.
					return nil, fmt.Errorf("table %s: %s read at %s (%d bytes) is not in the listing of that commit as read", t.Name, o.Path, r.req.Ref, o.Size)
				}
				o.Address = lo.Address
			}
			if o.Address != "" {
				read[o.Path] = o
			}
		}
	}
	return read, nil
}

// dataPrefix is the repository's data prefix, asked once per engine.
func (r *run) dataPrefix(ctx context.Context, ns Namespaced) (string, error) {
	if p, ok := r.e.dataPrefixes.get(r.req.Repository); ok {
		return p, nil
	}
	p, err := ns.DataPrefix(ctx, r.req.Repository, r.req.BaseName)
	if err != nil {
		return "", err
	}
	r.e.dataPrefixes.put(r.req.Repository, p)
	return p, nil
}
