package main

import (
	"context"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// The batch-scope listing is confined to the folder that holds every
// changed file, never wider than the table's prefix.
func TestCommonFolder(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		paths  []string
		want   string
	}{
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet", "gold/t/batch=1/part-1.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/a/x.parquet", "gold/t/batch=1/b/y.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/x.parquet", "gold/t/batch=2/y.parquet"}, "gold/t/"},
		{"gold/t/", []string{"gold/t/x.parquet"}, "gold/t/"},
		{"gold/t/b", []string{"gold/t/batch=1/x.parquet", "gold/t/bx/y.parquet"}, "gold/t/b"},
		{"", []string{"a/x", "b/y"}, ""},
		{"", []string{"x"}, ""},
	} {
		if got := commonFolder(tc.prefix, tc.paths); got != tc.want {
			t.Errorf("commonFolder(%q, %v) = %q, want %q", tc.prefix, tc.paths, got, tc.want)
		}
	}
}

// Without an audit cache the batch's changed files come from the diff
// alone: the listing only gave the physical addresses that the cache keys
// its files by. Both ways give the same files and sizes; the cached way
// lists once more.
func TestChangedListsOnlyForTheCache(t *testing.T) {
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
	commit, err := lake.Commit(ctx, "lake", "b", "seal", nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := func(s auditSource) ([]audit.Object, int64) {
		var calls atomic.Int64
		objs, err := s.Changed(pipeline.WithCallCounter(ctx, &calls), "lake", "main", commit, "gold/t/")
		if err != nil {
			t.Fatal(err)
		}
		return objs, calls.Load()
	}
	plain, plainCalls := changed(auditSource{lake: lake})
	cached, cachedCalls := changed(auditSource{lake: lake, addresses: true})
	if plainCalls != 1 || cachedCalls != 2 {
		t.Errorf("lakeFS calls: %d without the cache (want the diff alone), %d with it (want diff and listing)", plainCalls, cachedCalls)
	}
	want := map[string]int64{"gold/t/batch=1/part-0.parquet": 10, "gold/t/batch=1/part-1.parquet": 3}
	for _, objs := range [][]audit.Object{plain, cached} {
		got := map[string]int64{}
		for _, o := range objs {
			got[o.Path] = o.Size
		}
		if !maps.Equal(got, want) {
			t.Errorf("changed files %v, want %v", got, want)
		}
	}
	for _, o := range cached {
		if o.Address == "" {
			t.Errorf("%s: no physical address with the cache", o.Path)
		}
	}
}
