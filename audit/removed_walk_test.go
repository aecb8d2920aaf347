package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// removedFiles finds the same files walking listings in path order as
// looking each file up by path and address: random foundations, with
// files kept, readdressed, removed and added by the batch, the unchanged
// files in path order or not.
func TestRemovedFilesWalkEqualsLookup(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 11))
	tb := Table{Name: "t", Path: "t/"}
	for round := range 300 {
		var found []Object
		for i := range 1 + rnd.IntN(30) {
			found = append(found, Object{Path: fmt.Sprintf("t/%03d", 2*i), Address: fmt.Sprintf("a%d", rnd.IntN(3)), Size: int64(rnd.IntN(3))}) // size 0: not a table file
		}
		it := &incTable{}
		for _, o := range found {
			switch rnd.IntN(4) {
			case 0: // removed
			case 1: // rewritten at another address
				o.Address += "x"
				it.old = append(it.old, o)
			case 2: // rewritten by the batch
				o.Address += "b"
				it.batch = append(it.batch, o)
			default:
				it.old = append(it.old, o)
			}
		}
		if rnd.IntN(3) == 0 {
			it.batch = append(it.batch, Object{Path: fmt.Sprintf("t/%03d", 2*rnd.IntN(40)+1), Address: "new", Size: 1})
		}
		if round%4 == 0 {
			rnd.Shuffle(len(it.old), func(i, j int) { it.old[i], it.old[j] = it.old[j], it.old[i] })
		}
		r := &run{e: &Engine{opts: Options{Source: listOnly(found), MaxListObjects: 1000}}, req: Request{Repository: "r"}, inc: &increment{foundation: "f"}}
		got, err := r.removedFiles(context.Background(), tb, it)
		if err != nil {
			t.Fatal(err)
		}
		held := map[[2]string]bool{}
		for _, o := range append(slices.Clone(it.old), it.batch...) {
			held[[2]string{o.Path, o.Address}] = true
		}
		var want []string
		for _, o := range tableFiles(tb.Path, found) {
			if !held[[2]string{o.Path, o.Address}] {
				want = append(want, o.Path+"@"+o.Address)
			}
		}
		gotS := each(got, func(o Object) string { return o.Path + "@" + o.Address })
		if !slices.Equal(gotS, want) {
			t.Fatalf("round %d: removed %v, by lookup %v\nfound %v\nold %v\nbatch %v", round, gotS, want, found, it.old, it.batch)
		}
	}
}

// listOnly is a Source that lists objs.
type listOnlySource struct {
	Source
	objs []Object
}

func listOnly(objs []Object) Source { return listOnlySource{objs: objs} }

func (l listOnlySource) List(context.Context, string, string, string) ([]Object, error) {
	return slices.Clone(l.objs), nil
}
