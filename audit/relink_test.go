package audit

import (
	"context"
	"errors"
	"io"
	"testing"
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
