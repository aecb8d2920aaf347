package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// fakeBlockstore answers StoredSize by address: the claimed size plus
// extra, or err; it records the addresses asked.
type fakeBlockstore struct {
	extra   int64
	extraAt map[string]int64 // by address, on top of extra
	err     error
	sizes   map[string]int64 // address -> stored size (the truth)

	mu    sync.Mutex
	asked []string
}

func (b *fakeBlockstore) StoredSize(_ context.Context, address string) (int64, error) {
	b.mu.Lock()
	b.asked = append(b.asked, address)
	b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	return b.sizes[address] + b.extra + b.extraAt[address], nil
}

// A writer can stage an object claiming fewer bytes than are stored at its
// address: the audit reads the claimed prefix through lakeFS, readers of
// the blockstore read the rest. With a blockstore, the check stored_sizes
// compares each changed object the audit read with what is stored, and
// only those: main's unchanged files are not asked.
func TestStoredSizesAreTheClaimedSizes(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(1001, 100))
	objs, err := src.List(context.Background(), "repo", "b1", "gold/billing/")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	var part2 Object
	for _, o := range objs {
		sizes[o.Address] = o.Size
		if o.Path == "gold/billing/part-2.parquet" {
			part2 = o
		}
	}
	claimed := fmt.Sprintf("gold/billing/part-2.parquet (claimed %d bytes", part2.Size)
	for _, tc := range []struct {
		name       string
		bs         *fakeBlockstore
		status     string // of stored_sizes; "" when it says nothing
		observed   string
		infra      bool
		wantPassed bool
	}{
		{name: "stored as claimed", bs: &fakeBlockstore{}, wantPassed: true},
		{name: "more stored than claimed", bs: &fakeBlockstore{extra: 13}, status: schemas.StatusFail,
			observed: "1 changed objects not stored with their claimed size: " + claimed + fmt.Sprintf(", stored %d)", part2.Size+13)},
		{name: "less stored than claimed", bs: &fakeBlockstore{extra: -1}, status: schemas.StatusFail,
			observed: "1 changed objects not stored with their claimed size: " + claimed + fmt.Sprintf(", stored %d)", part2.Size-1)},
		{name: "nothing stored", bs: &fakeBlockstore{err: fmt.Errorf("stat x: %w", ErrNotStored)}, status: schemas.StatusFail,
			observed: "1 changed objects not stored with their claimed size: " + claimed + ", nothing stored)"},
		{name: "not readable", bs: &fakeBlockstore{err: os.ErrPermission}, status: schemas.StatusError,
			observed: "1 changed objects whose stored size could not be read: gold/billing/part-2.parquet"},
		{name: "blockstore unavailable", bs: &fakeBlockstore{err: fmt.Errorf("%w: 503 Slow Down", ErrInfrastructure)}, infra: true},
		{name: "no blockstore", wantPassed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2}
			if tc.bs != nil {
				tc.bs.sizes = sizes
				opts.Blockstore = tc.bs
			}
			e, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
				BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}}})
			if tc.infra {
				if !errors.Is(err, ErrInfrastructure) || !strings.Contains(err.Error(), "part-2.parquet") {
					t.Fatalf("Run: %v, want an infrastructure error naming the object", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got *schemas.CheckResult
			for i, c := range rep.Checks {
				if c.Kind == KindStoredSize {
					got = &rep.Checks[i]
				}
			}
			switch {
			case tc.status == "" && got != nil:
				t.Errorf("stored_sizes said %+v", *got)
			case tc.status != "" && got == nil:
				t.Errorf("no stored_sizes result: %+v", rep.Checks)
			case got != nil && (got.Status != tc.status || got.Observed != tc.observed):
				t.Errorf("stored_sizes %s %q, want %s %q", got.Status, got.Observed, tc.status, tc.observed)
			}
			if rep.Passed != tc.wantPassed {
				t.Errorf("passed %v, want %v: %+v", rep.Passed, tc.wantPassed, rep.Checks)
			}
			if tc.bs != nil && (len(tc.bs.asked) != 1 || tc.bs.asked[0] != part2.Address) {
				t.Errorf("asked the blockstore for %v, want only the changed object's %s", tc.bs.asked, part2.Address)
			}
		})
	}
}

// A Delta table's log is read through lakeFS too: a commit claiming a
// prefix of what is stored hides actions from lakewap that Delta readers
// of the blockstore replay. The batch's new log files are compared like
// its data files.
func TestStoredSizesOfADeltaLog(t *testing.T) {
	src := deltaFixture(t)
	src.write(t, "b1", "gold/events/part-c.parquet", deltaRows(200, 7, false))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, deltaAdd("part-c.parquet"))
	objs, err := src.List(context.Background(), "repo", "b1", "gold/events/")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	byPath := map[string]Object{}
	for _, o := range objs {
		sizes[o.Address] = o.Size
		byPath[o.Path] = o
	}
	commit := byPath["gold/events/_delta_log/00000000000000000002.json"]
	bs := &fakeBlockstore{sizes: sizes, extraAt: map[string]int64{commit.Address: 40}}
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2, Blockstore: bs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rep, err := e.Run(context.Background(), Request{Dataset: "events", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "events", Path: "gold/events/", Format: FormatDelta}}, Checks: []Check{idsNotNull}}})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Checks[len(rep.Checks)-1]
	want := fmt.Sprintf("1 changed objects not stored with their claimed size: %s (claimed %d bytes, stored %d)", commit.Path, commit.Size, commit.Size+40)
	if rep.Passed || c.Kind != KindStoredSize || c.Status != schemas.StatusFail || c.Observed != want {
		t.Errorf("passed %v, last check %s %s %q; want fail %q", rep.Passed, c.Kind, c.Status, c.Observed, want)
	}
	asked := slices.Sorted(slices.Values(bs.asked))
	if wantAsked := slices.Sorted(slices.Values([]string{commit.Address, byPath["gold/events/part-c.parquet"].Address})); !slices.Equal(asked, wantAsked) {
		t.Errorf("asked the blockstore for %v, want the new commit and data file %v", asked, wantAsked)
	}
}
