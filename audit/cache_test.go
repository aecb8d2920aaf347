package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

func writeAged(t *testing.T, dir, name string, size int, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Eviction removes the least recently used files first, never a file a run
// has pinned, and stops as soon as the cache fits.
func TestCacheEvictsLeastRecentlyUsedUnpinned(t *testing.T) {
	dir := t.TempDir()
	oldest := writeAged(t, dir, "a.parquet", 400, 4*time.Hour)
	old := writeAged(t, dir, "b.parquet", 400, 3*time.Hour)
	mid := writeAged(t, dir, "c.parquet", 400, 2*time.Hour)
	recent := writeAged(t, dir, "d.parquet", 400, time.Hour)
	partial := writeAged(t, dir, ".part-123", 400, 5*time.Hour)
	c := newFileCache(dir, 1000)
	c.pin(oldest)
	freed, err := c.evict()
	if err != nil {
		t.Fatal(err)
	}
	// 1600 bytes of cache (the partial download does not count) must drop
	// to 1000: b and c go; a is pinned, d is the most recent.
	if freed != 800 || !exists(oldest) || exists(old) || exists(mid) || !exists(recent) || !exists(partial) {
		t.Errorf("freed %d; left a=%v b=%v c=%v d=%v part=%v", freed, exists(oldest), exists(old), exists(mid), exists(recent), exists(partial))
	}
	c.unpin([]string{oldest})
	c.touch(oldest) // a hit makes it the most recent
	c.max = 500     // a and d (800 bytes) no longer fit: the older goes
	if freed, _ := c.evict(); freed != 400 || !exists(oldest) || exists(recent) {
		t.Errorf("after a hit on a: freed %d, a=%v d=%v; want d evicted", freed, exists(oldest), exists(recent))
	}
}

// An engine with a bounded cache keeps it within the bound across runs and
// still audits correctly when a later run must fetch evicted files again.
func TestRunKeepsCacheWithinBound(t *testing.T) {
	src := fixture(t)
	cache := t.TempDir()
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), CacheDir: cache, CacheMaxBytes: 1, MemoryLimit: "512MB", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	checks := []Check{{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(1)}}
	for i := range 2 {
		rep := audit(t, e, "b1", checks...)
		if c := only(t, rep); c.Status != schemas.StatusPass {
			t.Fatalf("run %d: %s %q %s", i, c.Status, c.Observed, c.Message)
		}
		var total int64
		_ = filepath.Walk(cache, func(_ string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				total += info.Size()
			}
			return nil
		})
		if total > 1 {
			t.Errorf("run %d left %d bytes in a cache bounded to 1", i, total)
		}
	}
	// Everything was evicted after the first run, so the second downloaded again.
	if n := src.totalDownloads(); n != 4 {
		t.Errorf("%d downloads over two runs, want 4 (2 per run with nothing kept)", n)
	}
}

// claimingSource lists every object with the same checksum, as a writer
// can make lakeFS do (stageObject takes checksum and size from the client).
type claimingSource struct{ *dirSource }

func (s claimingSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	objs, err := s.dirSource.List(ctx, repo, ref, prefix)
	for i := range objs {
		objs[i].Checksum = "claimed"
	}
	return objs, err
}

func (s claimingSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	return s.List(ctx, repo, ref, prefix)
}

// An object claiming the checksum and size of one already in the cache is
// read from its own bytes: the cache is keyed by where the bytes are.
func TestCacheIgnoresClaimedChecksum(t *testing.T) {
	src := claimingSource{newDirSource(t)}
	write := func(ref, content string) {
		p := filepath.Join(src.root, ref, "gold", "t", "part-0.csv")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main", "id,v\n10,a\n") // another size: not relinked by the batches (relinked_objects)
	write("good", "id,v\n1,a\n")
	write("bad", "id,v\n,aa\n") // same size, a NULL id
	e := newEngine(t, src, t.TempDir())
	check := Check{Kind: KindNotNull, Table: "t", Columns: []string{"id"}, Scope: "batch"}
	run := func(ref string) schemas.CheckResult {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: ref, BaseRef: "main",
			Suite: Suite{Tables: []Table{{Name: "t", Path: "gold/t/", Format: "csv"}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatalf("Run(%s): %v", ref, err)
		}
		return only(t, rep)
	}
	if c := run("good"); c.Status != schemas.StatusPass {
		t.Fatalf("good: %s %s", c.Status, c.Observed)
	}
	if c := run("bad"); c.Status != schemas.StatusFail {
		t.Errorf("bad rows claiming the good object's checksum and size: %s %s; want fail", c.Status, c.Observed)
	}
}

// The end of a run walks the cache only when it may not fit: after a walk
// that found it within its bound, runs that download nothing into it, or
// less than the room left, walk nothing; one that takes it over walks it
// and evicts. Before, every run's end walked the whole directory, a cost
// that grew with the cache (a recheck in the publish turn ends with it).
func TestCacheWalkedOnlyWhenItMayNotFit(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeAged(t, dir, fmt.Sprintf("f%02d.parquet", i), 10, time.Duration(50-i)*time.Minute)
	}
	c := newFileCache(dir, 1000) // 500 bytes in it
	for range 3 {
		if freed, err := c.evict(); err != nil || freed != 0 {
			t.Fatalf("evict: %d %v", freed, err)
		}
	}
	c.added(400) // 900: still fits
	if _, err := c.evict(); err != nil {
		t.Fatal(err)
	}
	if c.walks != 1 {
		t.Errorf("%d walks of a cache that fits and gained 400 of its 500 bytes of room, want 1", c.walks)
	}
	writeAged(t, dir, "big.parquet", 600, 0) // as a download does it: file, then added
	c.added(600)
	freed, err := c.evict()
	if err != nil || c.walks != 2 || freed != 100 || exists(filepath.Join(dir, "big.parquet")) == false {
		t.Errorf("after going over: walks %d, freed %d, err %v; want a walk freeing the oldest 100 bytes", c.walks, freed, err)
	}
	if exists(filepath.Join(dir, "f00.parquet")) {
		t.Error("the least recently used file is still there")
	}
	if _, err := c.evict(); err != nil || c.walks != 2 {
		t.Errorf("walks %d after an eviction left it fitting, want 2", c.walks)
	}
}

// BenchmarkRunEndWithACache is the end of a run that downloaded nothing
// into a cache of 10,000 files that fits its bound (the eviction pass).
func BenchmarkRunEndWithACache(b *testing.B) {
	dir := b.TempDir()
	for i := range 10_000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.parquet", i)), make([]byte, 100), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c := newFileCache(dir, 1<<30)
	for b.Loop() {
		if _, err := c.evict(); err != nil {
			b.Fatal(err)
		}
	}
}
