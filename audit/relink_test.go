package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// mapSource lists fixed objects by ref (unit tests of the merge model).
type mapSource map[string][]Object

func (m mapSource) List(_ context.Context, _, ref, _ string) ([]Object, error) { return m[ref], nil }
func (m mapSource) Changed(context.Context, string, string, string, string) ([]Object, error) {
	return nil, errors.New("not asked")
}
func (m mapSource) Download(context.Context, string, string, string, io.Writer) error {
	return errors.New("not asked")
}

// foundationHistory says every merge-base is "f".
type foundationHistory struct{}

func (foundationHistory) MergeBase(context.Context, string, string, string) (string, error) {
	return "f", nil
}
func (foundationHistory) Commit(context.Context, string, string) (CommitInfo, error) {
	return CommitInfo{}, errors.New("not asked")
}

// The recheck's model of the merge takes what the batch changed as lakeFS
// does, by claimed checksum and size: a path the batch holds at a new
// address with the foundation's checksum and size is unchanged to lakeFS,
// which keeps the target's version, so the recheck reads the target's.
// (Before, it compared addresses and read the batch's version, which the
// merge does not publish.)
func TestMergedObjectsTakesWhatTheBatchChangedByIdentity(t *testing.T) {
	p, q, k := "gold/t/p.csv", "gold/t/q.csv", "gold/t/k.csv"
	src := mapSource{
		"f": {{Path: p, Checksum: "c", Size: 10, Address: "a1"}, {Path: q, Checksum: "q1", Size: 5, Address: "q1"}, {Path: k, Checksum: "k", Size: 3, Address: "k"}},
		"s": {{Path: p, Checksum: "c", Size: 10, Address: "a2"}, {Path: q, Checksum: "q2", Size: 5, Address: "q2"}, {Path: k, Checksum: "k", Size: 3, Address: "k"}},
		"t": {{Path: p, Checksum: "d", Size: 12, Address: "a3"}, {Path: q, Checksum: "q1", Size: 5, Address: "q1"}, {Path: k, Checksum: "k", Size: 3, Address: "k"}},
	}
	r := &run{e: &Engine{opts: Options{Source: src, History: foundationHistory{}, MaxListObjects: 100}}, req: Request{Repository: "r", Ref: "s", BaseRef: "t", Onto: true}}
	got, err := r.mergedObjects(context.Background(), Table{Name: "t", Path: "gold/t/"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{k: "t", p: "t", q: "s"}
	if len(got) != len(want) {
		t.Fatalf("merged %+v, want %v (path: ref read at)", got, want)
	}
	for _, o := range got {
		if want[o.Path] != o.at {
			t.Errorf("%s read at %q, want %q (merged %+v)", o.Path, o.at, want[o.Path], got)
		}
	}
}

// bytesSource lists fixed objects by ref and serves bytes by address; its
// repository's data prefix is mem://lake/ (Namespaced).
type bytesSource struct {
	objs  map[string][]Object
	bytes map[string]string // address -> bytes
}

func (s bytesSource) List(_ context.Context, _, ref, _ string) ([]Object, error) {
	return s.objs[ref], nil
}
func (s bytesSource) Changed(context.Context, string, string, string, string) ([]Object, error) {
	return nil, nil
}
func (s bytesSource) Download(_ context.Context, _, ref, path string, w io.Writer) error {
	for _, o := range s.objs[ref] {
		if o.Path == path {
			_, err := io.WriteString(w, s.bytes[o.Address])
			return err
		}
	}
	return errors.New("no such object")
}
func (s bytesSource) DataPrefix(context.Context, string, string) (string, error) {
	return "mem://lake/", nil
}

// A relinked object whose bytes equal the base's is an honest re-upload
// only when lakeFS stored it: at an address outside the repository's
// storage namespace (another repository's data, a bucket the writer can
// rewrite after the publish), its bytes can change later while the
// download cache, the statistics, the query memo and the derived listings
// take an address's bytes as fixed. relinked_objects fails it, naming it
// and saying why, and the table is not cleared for derivation. (Before,
// equal bytes passed wherever they lay, and the table was cleared.)
func TestRelinkedObjectOutsideTheStorageNamespaceIsRefused(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	head, inside, outside := id(1), id(2), id(3)
	p := "gold/t/batch=1/part-0.csv"
	rows := "id\n1\n2\n"
	o := func(addr string) Object { return Object{Path: p, Address: addr, Checksum: "c", Size: int64(len(rows))} }
	src := bytesSource{
		objs:  map[string][]Object{head: {o("mem://lake/data/a")}, inside: {o("mem://lake/data/b")}, outside: {o("s3://writers-bucket/p")}},
		bytes: map[string]string{"mem://lake/data/a": rows, "mem://lake/data/b": rows, "s3://writers-bucket/p": rows},
	}
	e, err := New(Options{Source: src, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	suite := Suite{Tables: []Table{{Name: "t", Path: "gold/t/", Format: "csv"}}}
	check := func(ref string) []schemas.CheckResult {
		r := &run{e: e, req: Request{Repository: "lake", Suite: suite, Ref: ref, BaseRef: head, BaseName: "main"}, log: e.opts.Logger}
		return r.relinked(context.Background())
	}
	if res := check(inside); len(res) != 0 {
		t.Errorf("the same bytes at another address of the namespace: %+v", res)
	}
	if !e.derived.covers("lake", inside, head, "gold/t/") {
		t.Error("the same bytes at another address of the namespace: the table is not cleared")
	}
	res := check(outside)
	if len(res) != 1 || res[0].Status != schemas.StatusFail || !strings.Contains(res[0].Observed, p) || !strings.Contains(res[0].Message, "storage namespace") {
		t.Errorf("the same bytes at %s, outside mem://lake/: %+v", "s3://writers-bucket/p", res)
	}
	if e.derived.covers("lake", outside, head, "gold/t/") {
		t.Error("a table holding an object outside the storage namespace is cleared for derivation")
	}
}
