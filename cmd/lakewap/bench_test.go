package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// benchStack is one embedded stack with an in-process daemon for
// benchmarks; the stack's start is outside the measured time.
func benchStack(b *testing.B) (*stackEnv, []byte) {
	b.Helper()
	tmp := b.TempDir()
	stack, err := devstack.Start(context.Background(), devstack.Options{WorkDir: tmp, Repository: "lake", Topics: stackTopics(&config.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stack.Close() })
	cfg := demoConfig(stack, tmp)
	cfg.Runner.MaxInFlight = 64
	// Batch scope: every benchmarked batch writes the same rows, and a
	// whole-table audit would grow with each iteration.
	ds := cfg.Datasets["billing"]
	for i := range ds.Checks {
		ds.Checks[i].Scope = "batch"
	}
	cfg.Datasets["billing"] = ds
	ctx, cancel := context.WithCancel(context.Background())
	d, err := newDaemon(ctx, cfg, daemonOptions{Logger: slog.New(slog.DiscardHandler), Console: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	env, err := newStackEnv(ctx, stack, cfg, tmp)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(env.Close)
	return env, smallParquet(b, tmp)
}

// smallParquet is the one small object each benchmarked batch writes.
func smallParquet(b *testing.B, dir string) []byte {
	b.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	f := filepath.Join(dir, "small.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (%s WHERE i < 100) TO '%s' (FORMAT parquet)", goodBillingRows, f)); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func reportLatency(b *testing.B, lat []time.Duration, batches int) {
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(batches)/b.Elapsed().Seconds(), "batches/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkWAPCycle measures lakewap from WriteComplete produced to
// BatchPublished consumed, with 1, 8 and 64 batches in flight; each batch
// writes one small Parquet object (landing and writing are not timed).
func BenchmarkWAPCycle(b *testing.B) {
	for _, inflight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			env, obj := benchStack(b)
			ctx := context.Background()
			var lat []time.Duration
			var mu sync.Mutex
			round := 0
			for b.Loop() {
				round++
				b.StopTimer()
				ids := make([]string, inflight)
				for i := range ids {
					ids[i] = fmt.Sprintf("bench-%d-%d", round, i)
					ev := schemas.BatchLanded{BatchID: ids[i], Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, Producer: "bench", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
					if err := env.produce(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				for _, id := range ids {
					ev, err := env.watcher.await(ctx, id, schemas.TypeBranchReady)
					if err != nil {
						b.Fatal(err)
					}
					path := "gold/billing_fact/batch=" + id + "/part-0.parquet"
					if err := env.lake.Upload(ctx, "lake", ev.(schemas.BranchReady).Branch, path, bytes.NewReader(obj)); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				var wg sync.WaitGroup
				for _, id := range ids {
					wg.Go(func() {
						start := time.Now()
						if err := env.produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}); err != nil {
							b.Error(err)
							return
						}
						ev, err := env.watcher.await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
						if err != nil || ev.EventType() != schemas.TypeBatchPublished {
							b.Errorf("batch %s: %v %+v", id, err, ev)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(start))
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			reportLatency(b, lat, len(lat))
		})
	}
}

// BenchmarkRawLakeFSSequence is the same work done by hand with the lakeFS
// client: create branch, upload, commit, merge into main, delete branch.
func BenchmarkRawLakeFSSequence(b *testing.B) {
	for _, inflight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			env, obj := benchStack(b)
			ctx := context.Background()
			var lat []time.Duration
			var mu sync.Mutex
			round := 0
			for b.Loop() {
				round++
				var wg sync.WaitGroup
				for i := range inflight {
					wg.Go(func() {
						id := fmt.Sprintf("raw-%d-%d", round, i)
						branch := "raw-" + id
						start := time.Now()
						err := rawSequence(ctx, env, branch, "gold/billing_fact/batch="+id+"/part-0.parquet", obj)
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(start))
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			reportLatency(b, lat, len(lat))
		})
	}
}

func rawSequence(ctx context.Context, env *stackEnv, branch, path string, obj []byte) error {
	l := env.lake
	if _, err := l.EnsureBranch(ctx, "lake", branch, "main"); err != nil {
		return err
	}
	if err := l.Upload(ctx, "lake", branch, path, bytes.NewReader(obj)); err != nil {
		return err
	}
	commit, err := l.Commit(ctx, "lake", branch, "raw", nil)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		_, err = l.Merge(ctx, "lake", commit, "main", "raw merge", map[string]string{pipeline.MetaBatchID: branch})
		if err == nil || attempt > 50 || !lakefs.Retryable(err) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	return l.DeleteBranch(ctx, "lake", branch)
}
