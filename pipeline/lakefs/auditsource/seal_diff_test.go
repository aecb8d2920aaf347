package auditsource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/audit"
)

// sealDiffCounter is the Source counting the two-dot diffs asked of
// lakeFS that pairs picks.
type sealDiffCounter struct {
	Source
	mu    atomic.Int64
	pairs func(from, to string) bool
}

func (c *sealDiffCounter) Differences(ctx context.Context, repo, from, to, prefix string, limit int) ([]audit.Difference, bool, error) {
	if c.pairs != nil && c.pairs(from, to) {
		c.mu.Add(1)
	}
	return c.Source.Differences(ctx, repo, from, to, prefix, limit)
}

// The runner audits a seal against the commit its batch branch was made
// from and hands the audit its diff of the two (lakeFS's three-dot diff,
// removals included). When that commit is the seal's one parent, the
// derivation of the seal's listing takes its two-dot diff from there
// instead of asking lakeFS again. Differential: random staged writes
// (added, rewritten, deleted, linked again to the same or to other bytes
// claiming the same identity), and some branches given a writer's commit
// before the seal (then the parent is not the audit's base: its diff is
// not taken for the seal's); the engine's listing of every seal is
// lakeFS's. Before, every
// seal's derivation asked lakeFS for the two-dot diff.
func TestOwnSealListingTakesTheAuditsDiff(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	rnd := rand.New(rand.NewPCG(21, 64))
	var head, sealed string
	src := &sealDiffCounter{Source: s.src}
	src.pairs = func(_, to string) bool { return to == sealed }
	tmp := t.TempDir()
	e, err := audit.New(audit.Options{Source: src, History: testHistory{s}, WorkDir: tmp, CacheDir: filepath.Join(tmp, "cache"), Threads: 1, MemoryLimit: "512MB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	w := randomWrites{s: s, rnd: rnd, choices: 5, contents: []string{"id,x\n1,a\n", "id,x\n2,b\n", "id,x\n3,c\n"},
		paths: []string{"a.csv", "b1/c.csv", "b1/d.csv", "b2/e.csv", "b2/f/g.csv"}}
	w.seed(t)
	taken, writers := 0, 0
	for round := range 16 {
		head = l1HeadOf(t, s)
		if _, err := e.Listing(ctx, "lake", head, relinkPrefix); err != nil {
			t.Fatal(err)
		}
		branch := fmt.Sprintf("r%d", round)
		if _, err := s.lake.EnsureBranch(ctx, "lake", branch, head); err != nil {
			t.Fatal(err)
		}
		writer := round%4 == 3
		for step := range 2 {
			w.stage(t, branch)
			if step == 0 && writer {
				s.commit(t, branch, "the writer's own commit")
				writers++
			}
		}
		sealed = s.seal(t, e, branch)
		changes, err := s.lake.Changes(ctx, "lake", head, sealed)
		if err != nil {
			t.Fatal(err)
		}
		before := src.mu.Load()
		d0, _ := e.DerivedListings()
		if _, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: head, BaseName: "main",
			Changes: Changes(changes)}); err != nil {
			t.Fatal(err)
		}
		asked := src.mu.Load() > before
		d1, _ := e.DerivedListings()
		if !writer && asked {
			t.Errorf("round %d: lakeFS was asked for a two-dot diff to the seal; want the audit's diff taken", round)
		}
		if !writer && d1 > d0 {
			taken++ // derived (not declined: changes spread over the whole prefix are listed whole)
		}
		if _, ok := s.engineListsAsLakeFS(t, e, sealed); !ok {
			t.Fatalf("round %d: the engine's listing of seal %s is not lakeFS's", round, sealed[:8])
		}
		s.publish(t, e, sealed, head, false, false)
	}
	t.Logf("%d seals derived from the audit's diff, %d had a writer's commit", taken, writers)
	if taken == 0 {
		t.Error("no seal's listing was derived from the audit's diff")
	}
}
