package auditsource

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline"
)

// TestMergeHazardCoversEveryMergeLakeFSGetsWrong merges random batches on
// the real lakeFS server and compares each merge with the three-way merge
// of the foundation F, the sealed commit S and the head H (a path takes
// the side that changed it; both changing it differently is a conflict).
// Paths are few and contents two, so identities collide as often as
// lakeFS's name-blind comparison needs. Whenever the recheck of S onto H
// finds no merge_hazard, lakeFS's merge must be that three-way merge
// (before hazardsBothAdded it could keep S's entry at a path both added
// outside the tables, where H's had the identity of F's next path). The
// test also counts the merges lakeFS got wrong, so that it
// shows the hazard was met.
func TestMergeHazardCoversEveryMergeLakeFSGetsWrong(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	empty := l1HeadOf(t, s)
	e := newDeriveEngine(t, s)
	paths := []string{"a/x", relinkPrefix + "k0.csv", relinkPrefix + "k1.csv", relinkPrefix + "k2.csv", "gold/u/a", "zz/a", "zz/b", "zz/c"}
	contents := []string{"id,x\n1,a\n", "id,x\n2,b\n"}
	rng := rand.New(rand.NewPCG(21, 40))
	type tree map[string]int // path -> content index
	mutate := func(base tree) tree {
		out := tree{}
		for p, c := range base {
			out[p] = c
		}
		for equalTrees(out, base) {
			for _, p := range paths {
				switch rng.IntN(4) {
				case 0: // leave it
				case 1:
					delete(out, p)
				default:
					out[p] = rng.IntN(len(contents))
				}
			}
		}
		return out
	}
	build := func(branch, from string, want, have tree) string {
		t.Helper()
		if _, err := s.lake.EnsureBranch(ctx, "lake", branch, from); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			c, ok := want[p]
			h, had := have[p]
			switch {
			case ok && (!had || h != c):
				if err := s.lake.Upload(ctx, "lake", branch, p, strings.NewReader(contents[c])); err != nil {
					t.Fatal(err)
				}
			case !ok && had:
				if resp, err := s.api.DeleteObjectWithResponse(ctx, "lake", branch, &apigen.DeleteObjectParams{Path: p}); err != nil || resp.StatusCode() != http.StatusNoContent {
					t.Fatalf("delete %s: %v", p, err)
				}
			}
		}
		return s.commit(t, branch, branch)
	}
	// The checksum lakeFS computes for each content.
	checksums := map[string]int{}
	for c, body := range contents {
		p := fmt.Sprintf("content/%d", c)
		if err := s.lake.Upload(ctx, "lake", "main", p, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		objs, err := s.src.List(ctx, "lake", "main", p)
		if err != nil || len(objs) != 1 {
			t.Fatalf("list %s: %+v %v", p, objs, err)
		}
		checksums[objs[0].Checksum] = c
	}
	wrong, flagged, trials := 0, 0, 40
	for i := range trials {
		f := tree{}
		for len(f) == 0 {
			for _, p := range paths {
				if rng.IntN(2) == 0 {
					f[p] = rng.IntN(len(contents))
				}
			}
		}
		sTree, hTree := mutate(f), mutate(f)
		fc := build(fmt.Sprintf("f%d", i), empty, f, tree{})
		sc := build(fmt.Sprintf("s%d", i), fc, sTree, f)
		hc := build(fmt.Sprintf("h%d", i), fc, hTree, f)
		changes, err := s.lake.Changes(ctx, "lake", hc, sc)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sc, BaseRef: hc, BaseName: "main",
			Onto: true, Changes: Changes(changes)})
		if err != nil {
			t.Fatal(err)
		}
		hazard := false
		for _, c := range rep.Checks {
			if c.Kind == audit.KindMergeHazard && c.Status != "pass" {
				hazard = true
			}
		}
		m, err := s.lake.Merge(ctx, "lake", sc, fmt.Sprintf("h%d", i), "merge", nil)
		if errors.Is(err, pipeline.ErrMergeConflict) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		onM, err := s.src.List(ctx, "lake", m, "")
		if err != nil {
			t.Fatal(err)
		}
		got := tree{}
		for _, o := range onM {
			c, ok := checksums[o.Checksum]
			if !ok {
				t.Fatalf("trial %d: %s on the merge has checksum %s, of neither content", i, o.Path, o.Checksum)
			}
			got[o.Path] = c
		}
		var diffs []string
		for _, p := range paths {
			want, conflict := threeWay(f, sTree, hTree, p)
			g, held := got[p]
			w, wantHeld := want.c, want.held
			if conflict {
				diffs = append(diffs, fmt.Sprintf("%s: a conflict, merged as %v/%d", p, held, g))
				continue
			}
			if held != wantHeld || (held && g != w) {
				diffs = append(diffs, fmt.Sprintf("%s: merged %v/%d, want %v/%d", p, held, g, wantHeld, w))
			}
		}
		if len(diffs) > 0 {
			wrong++
		}
		if hazard {
			flagged++
			continue
		}
		if len(diffs) > 0 {
			t.Errorf("trial %d: merge_hazard passed and lakeFS's merge differs from the three-way merge: %v\nF %v\nS %v\nH %v", i, diffs, f, sTree, hTree)
		}
	}
	t.Logf("%d trials: lakeFS's merge differed from the three-way merge in %d, merge_hazard refused %d", trials, wrong, flagged)
	if wrong == 0 {
		t.Errorf("no trial met the hazard: the test shows nothing")
	}
}

type entry struct {
	c    int
	held bool
}

// threeWay is p's entry in the three-way merge of s and h from f, and
// whether it is a conflict.
func threeWay(f, s, h map[string]int, p string) (entry, bool) {
	at := func(t map[string]int) entry {
		c, ok := t[p]
		return entry{c, ok}
	}
	fe, se, he := at(f), at(s), at(h)
	switch {
	case se == fe:
		return he, false
	case he == fe:
		return se, false
	case se == he:
		return se, false
	}
	return entry{}, true
}

func equalTrees(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for p, c := range a {
		if d, ok := b[p]; !ok || d != c {
			return false
		}
	}
	return true
}
