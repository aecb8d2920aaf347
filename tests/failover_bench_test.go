package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// failoverConfig: two daemons in one group, 64 steps in flight each,
// batch-scope checks (every batch is audited on its own files only).
const failoverConfig = `lakefs:
  endpoint: %s
  access_key_id: %s
  secret_access_key: ${TEST_LAKEFS_SECRET}
audit: {work_dir: %s, threads: 1, memory_limit: 512MB}
runner: {max_in_flight: 64, retry_budget: 5m, shutdown_grace: 5s}
log: {format: text, level: info}
datasets:
  billing:
    repository: %s
    write_timeout: 10m
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {name: billing_id_not_null, kind: not_null, table: billing_fact, columns: [billing_id, customer_id], scope: batch}
      - {name: billing_id_unique, kind: unique, table: billing_fact, columns: [billing_id], scope: batch}
      - {name: amount_not_negative, kind: range, table: billing_fact, column: amount_cents, min: 0, scope: batch}
      - {name: has_rows, kind: row_count, table: billing_fact, min: 1, scope: batch}
`

// BenchmarkTwoInstancesFailover runs two lakewap processes in one consumer
// group, drives 500 batches with 64 in flight, kills one instance with
// SIGKILL when half of them are published, and reports the throughput.
// Every batch must be published exactly once: one merge commit per batch id
// on main, and one distinct BatchPublished event id per batch (re-sent
// copies carry the same id). Meant for Apache Kafka
// (LAKEWAP_TEST_KAFKA_BROKERS from scripts/kafka.sh); on kfake it runs too
// and says so in its metric name.
func BenchmarkTwoInstancesFailover(b *testing.B) {
	const batches, inflight = 500, 64
	tmp := b.TempDir()
	stack, err := devstack.Start(context.Background(), devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	must(b, err)
	b.Cleanup(func() { _ = stack.Close() })
	cfg := harness.DemoConfig(stack, tmp)
	y := procKafkaYAML(stack, cfg) + fmt.Sprintf(failoverConfig,
		stack.LakeFSEndpoint, stack.AccessKeyID, filepath.Join(tmp, "audit"), stack.Repository)
	cfgPath := filepath.Join(tmp, "lakewap.yaml")
	must(b, os.WriteFile(cfgPath, []byte(y), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(b, err)
	b.Cleanup(env.Close)
	obj, err := smallParquet(tmp)
	must(b, err)
	rig := &benchRig{env: env, obj: obj, tmp: tmp}

	a := startProc(b, stack, cfgPath, "")
	c := startProc(b, stack, cfgPath, "")
	waitFor(b, func() bool { return a.logHas("partition restored") && c.logHas("partition restored") })

	var next, done atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	killed := make(chan struct{})
	var killOnce sync.Once
	ids := make([]string, batches)
	for i := range ids {
		ids[i] = fmt.Sprintf("fo-%d-%03d", time.Now().UnixNano(), i)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= batches {
					return
				}
				t0 := time.Now()
				if err := wapBatch(ctx, rig, ids[i]); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
				if done.Add(1) == batches/2 {
					killOnce.Do(func() {
						_ = a.cmd.Process.Signal(syscall.SIGKILL)
						close(killed)
					})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case <-killed:
		<-a.exited
		if !a.killedBySIGKILL() {
			b.Errorf("instance A ended with %v, not SIGKILL", a.err)
		}
	default:
		b.Fatal("instance A was never killed")
	}
	select {
	case <-c.exited:
		b.Fatalf("instance B died: %v", c.err)
	default:
	}

	// Exactly once: merge commits per batch id on main, distinct
	// BatchPublished event ids per batch.
	log, err := env.Lake.Log(ctx, stack.Repository, "main", 10*batches)
	must(b, err)
	merges := map[string]int{}
	for _, cm := range log {
		if id := cm.Metadata[pipeline.MetaBatchID]; id != "" && len(cm.Parents) > 1 {
			merges[id]++
		}
	}
	copies, distinct := 0, map[string]bool{}
	for _, id := range ids {
		if merges[id] != 1 {
			b.Errorf("batch %s has %d merge commits on main, want 1", id, merges[id])
		}
		eventIDs := map[string]bool{}
		for _, ev := range env.Watcher.All(id) {
			if p, ok := ev.(schemas.BatchPublished); ok {
				copies++
				eventIDs[p.EventID] = true
				distinct[p.EventID] = true
			}
		}
		if len(eventIDs) != 1 {
			b.Errorf("batch %s has %d distinct BatchPublished ids, want 1", id, len(eventIDs))
		}
	}
	if len(distinct) != batches {
		b.Errorf("%d distinct BatchPublished ids for %d batches", len(distinct), batches)
	}
	b.ReportMetric(float64(batches)/elapsed.Seconds(), "batches/s")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(distinct)), "distinct-published-ids")
	b.ReportMetric(float64(copies-len(distinct)), "resent-copies")
	b.ReportMetric(0, "ns/op")
	b.Logf("kafka backend %s: %d batches in %v, A killed at %d published", stack.KafkaBackend, batches, elapsed.Round(time.Millisecond), batches/2)
}
