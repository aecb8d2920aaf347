package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// parentLake is the fake lake that knows its seals' parents (as the lakeFS
// client does) and answers Relinked with fixed paths, counting the calls.
type parentLake struct {
	*fakeLake
	parent   string // every seal's one parent; "" the branch point
	relinked []string
	mu       sync.Mutex
	asked    int
}

func (l *parentLake) SealedOn(_ context.Context, _, _, from string) (bool, error) {
	return l.parent == from, nil
}

func (l *parentLake) Relinked(context.Context, string, string, string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked++
	return l.relinked, nil
}

// A sealed commit whose branch holds commits of its own before the seal is
// compared with its base by address (Relinker): a path outside the tables
// and allowed paths at other bytes under the same claimed identity aborts
// the batch outside_tables; one under an allowed path does not. A seal
// made straight on the branch point asks nothing.
func TestRelinkedPathsOfAWritersCommitsAreOutsideTables(t *testing.T) {
	for _, c := range []struct {
		name      string
		parent    string
		relinked  []string
		want      string
		wantAsked int
	}{
		{"a writer's commit relinks another dataset's file", "writer-commit", []string{"zzzz/ledger/manifest"}, schemas.TypeBatchAborted, 1},
		{"a writer's commit relinks an allowed path", "writer-commit", []string{"zzzz/billing/marker"}, schemas.TypeBatchPublished, 1},
		{"the seal sits on the branch point", "", []string{"zzzz/ledger/manifest"}, schemas.TypeBatchPublished, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			lake := &parentLake{fakeLake: newFakeLake(), relinked: c.relinked}
			f := newRunnerFixtureWith(t, func(cfg *Config) {
				cfg.Lake = lake
				cfg.Datasets = func(n string) (DatasetSpec, bool) {
					return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour,
						TablePaths: []string{"gold/billing/"}, AllowedPaths: []string{"zzzz/billing/"}}, n == "billing"
				}
			})
			f.lake = lake.fakeLake
			if c.parent == "" {
				// The branch point the run records is the seal's parent.
				lake.parent = "head-of-main" // the fake's head, where the run branched
			} else {
				lake.parent = c.parent
			}
			lake.fakeLake.changed = []string{"gold/billing/part-0.csv"}
			f.land(t, "b1")
			f.await(t, "b1", c.want)
			if r, _ := f.run("billing", "b1"); c.want == schemas.TypeBatchAborted && r.Reason != schemas.ReasonOutsideTables {
				t.Errorf("aborted %s (%s); want %s", r.Reason, r.Detail, schemas.ReasonOutsideTables)
			}
			lake.mu.Lock()
			defer lake.mu.Unlock()
			if lake.asked != c.wantAsked {
				t.Errorf("Relinked asked %d times; want %d", lake.asked, c.wantAsked)
			}
		})
	}
}
