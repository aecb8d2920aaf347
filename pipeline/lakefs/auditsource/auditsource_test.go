package auditsource

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// Against a real lakeFS: Changed is the diff alone (one call) and gives
// the changed files with their sizes; List gives the physical addresses
// the audit's cache keys files by (the engine asks it only with a cache,
// TestBatchScopeFromTheRequestsChanges); Merges.Commit carries the
// metadata the pre-merge hook reads of lakewap's own merges; Changes drops
// removals from the runner's diff.
func TestSourceOverLakeFS(t *testing.T) {
	ctx := context.Background()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: t.TempDir(), Repository: "lake"})
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.EnsureBranch(ctx, "lake", "b", "main"); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{"gold/t/batch=1/part-0.parquet": "0123456789", "gold/t/batch=1/part-1.parquet": "abc", "other/x": "x"} {
		if err := lake.Upload(ctx, "lake", "b", path, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	commit, err := lake.Commit(ctx, "lake", "b", "seal", map[string]string{"wap.batch_time": "2026-05-01T12:30:00.123456789Z"})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Lake: lake}
	var calls atomic.Int64
	changed, err := src.Changed(pipeline.WithCallCounter(ctx, &calls), "lake", "main", commit, "gold/t/")
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("Changed made %d lakeFS calls, want the diff alone", calls.Load())
	}
	want := map[string]int64{"gold/t/batch=1/part-0.parquet": 10, "gold/t/batch=1/part-1.parquet": 3}
	got := map[string]int64{}
	for _, o := range changed {
		got[o.Path] = o.Size
	}
	if !maps.Equal(got, want) {
		t.Errorf("changed files %v, want %v", got, want)
	}
	listed, err := src.List(ctx, "lake", commit, "gold/t/batch=1/")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Fatalf("listed %+v, want the two files", listed)
	}
	for _, o := range listed {
		if o.Address == "" || o.Size != want[o.Path] {
			t.Errorf("%s: address %q size %d; want an address and size %d", o.Path, o.Address, o.Size, want[o.Path])
		}
	}
	c, err := Merges{Lake: lake}.Commit(ctx, "lake", commit)
	if err != nil || c.Metadata["wap.batch_time"] != "2026-05-01T12:30:00.123456789Z" || len(c.Parents) != 1 || c.Committer == "" {
		t.Errorf("Merges.Commit = %+v, %v; want its metadata, parent and committer", c, err)
	}
	if _, err := (Merges{Lake: lake}).Commit(ctx, "lake", strings.Repeat("0", 64)); !errors.Is(err, audit.ErrUnknownCommit) {
		t.Errorf("an unknown commit: %v, want audit.ErrUnknownCommit", err)
	}
	cs := Changes([]pipeline.Change{{Path: "a", Size: 1}, {Path: "b", Removed: true}})
	if len(cs.Objects) != 1 || cs.Objects[0] != (audit.Object{Path: "a", Size: 1}) {
		t.Errorf("Changes = %+v, want a alone", cs.Objects)
	}
}
