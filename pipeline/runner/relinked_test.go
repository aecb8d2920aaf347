package runner

import (
	"context"
	"slices"
	"strings"
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
	// earlier: the seals SealedOn names below the seal (a stopped step's),
	// whose diffs against the branch point name earlierChanged.
	earlier        []string
	earlierChanged []string
	mu             sync.Mutex
	asked          int
}

func (l *parentLake) SealedOn(_ context.Context, _, _, from string, _ []string) ([]string, bool, error) {
	if l.parent != from {
		return nil, false, nil
	}
	return l.earlier, true, nil
}

func (l *parentLake) Changes(ctx context.Context, repo, base, ref string) ([]Change, error) {
	if slices.Contains(l.earlier, ref) {
		out := make([]Change, len(l.earlierChanged))
		for i, p := range l.earlierChanged {
			out[i] = Change{Path: p, Removed: true}
		}
		return out, nil
	}
	return l.fakeLake.Changes(ctx, repo, base, ref)
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

// A seal on the seals of stopped audit steps of its batch (SealedOn names
// them) is held to the tables-only rule with each of them: a stopped seal
// that deleted another dataset's file, which the writer then staged again
// under the same checksum (no diff of the last seal names it), aborts the
// batch outside_tables naming it; a stopped seal of the batch's own table
// files does not, and nothing is compared by address for either.
func TestEarlierSealsOfTheBatchAreHeldToTheTablesOnlyRule(t *testing.T) {
	for _, c := range []struct {
		name    string
		changed []string
		want    string
	}{
		{"a stopped seal deleted another dataset's file", []string{"gold/billing/part-0.csv", "zzzz/ledger/manifest"}, schemas.TypeBatchAborted},
		{"a stopped seal of the batch's own files", []string{"gold/billing/part-0.csv"}, schemas.TypeBatchPublished},
	} {
		t.Run(c.name, func(t *testing.T) {
			lake := &parentLake{fakeLake: newFakeLake(), parent: "head-of-main", earlier: []string{"stopped-seal"}, earlierChanged: c.changed}
			f := newRunnerFixtureWith(t, func(cfg *Config) {
				cfg.Lake = lake
				cfg.Datasets = func(n string) (DatasetSpec, bool) {
					return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour,
						TablePaths: []string{"gold/billing/"}, AllowedPaths: []string{"zzzz/billing/"}}, n == "billing"
				}
			})
			f.lake = lake.fakeLake
			lake.fakeLake.changed = []string{"gold/billing/part-0.csv"}
			f.land(t, "b1")
			f.await(t, "b1", c.want)
			if r, _ := f.run("billing", "b1"); c.want == schemas.TypeBatchAborted && (r.Reason != schemas.ReasonOutsideTables || !strings.Contains(r.Detail, "zzzz/ledger/manifest")) {
				t.Errorf("aborted %s (%s); want %s naming zzzz/ledger/manifest", r.Reason, r.Detail, schemas.ReasonOutsideTables)
			}
			lake.mu.Lock()
			defer lake.mu.Unlock()
			if lake.asked != 0 {
				t.Errorf("Relinked asked %d times; want none", lake.asked)
			}
		})
	}
}
