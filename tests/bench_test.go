package tests

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/tracing/otlptest"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// benchRig is one embedded stack (kfake + the real lakeFS server) with an
// in-process daemon, started once per sub-benchmark and kept for all its
// rounds (the parent benchmark closes it).
type benchRig struct {
	env *harness.Env
	reg *prometheus.Registry // the daemon's metrics
	obj []byte               // the failover benchmark's one object
	tmp string

	// Every batch writes rows of its own (objects): billing ids no earlier
	// batch of the rig used, so the demo's table-wide unique check passes
	// on a table that grows with every round.
	db   *sql.DB
	seq  atomic.Int64
	pool chan []byte
	// failing makes every object fail billing_id_not_null (ids ending in 0
	// are NULL), and every batch end aborted.
	failing bool
	// changelog is the daemon's changelog topic (changelogWrites).
	changelog string
}

// newBenchRig starts a rig; cleanup goes to parent so that the rig outlives
// the sub-benchmark's first (b.N = 1) round.
//
// The rig's stack has one topic more than lakewap's, floorInputTopic, which
// no daemon reads: BenchmarkFloorSequence's upstream writes there (floor
// set), and its own handler reads it.
func newBenchRig(parent testing.TB, tmp string, floor bool) (*benchRig, error) {
	topics := append(harness.StackTopics(), devstack.Topic{Name: floorInputTopic})
	stack, err := devstack.Start(context.Background(), devstack.Options{WorkDir: tmp, Repository: "lake", Topics: topics})
	if err != nil {
		return nil, err
	}
	parent.Cleanup(func() { _ = stack.Close() })
	cfg := harness.DemoConfig(stack, tmp)
	cfg.Runner.MaxInFlight = 64
	// The demo's checks at their own scopes: unique, not_null, range and
	// accepted_values over the whole table (incremental: the batch's rows,
	// and for unique the keys of the files whose key ranges can overlap
	// the batch's), has_rows over the batch. Every batch writes rows of its
	// own (benchRig.object), as upstream batches do.
	//
	// No audit cache: the raw sequence downloads each object.
	cfg.Audit.CacheDir = ""
	// LAKEWAP_BENCH_LINEAGE=1 sends OpenLineage events to an in-process
	// receiver, to measure what lineage costs per batch.
	if os.Getenv("LAKEWAP_BENCH_LINEAGE") == "1" {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
		parent.Cleanup(srv.Close)
		cfg.Lineage.URL = srv.URL
	}
	// LAKEWAP_BENCH_TRACING=1 sends OpenTelemetry spans to an in-process
	// OTLP receiver, to measure what tracing costs per batch.
	if os.Getenv("LAKEWAP_BENCH_TRACING") == "1" {
		cfg.Tracing = config.Tracing{OTLPEndpoint: otlptest.Start(parent).Addr, Insecure: true}
	}
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	d, err := daemon.New(ctx, cfg, daemon.Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard, Registry: reg})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	parent.Cleanup(func() { cancel(); <-done })
	envCfg := cfg
	if floor {
		c := *cfg
		c.Kafka.InputTopic = stack.Topic(floorInputTopic)
		envCfg = &c
	}
	env, err := harness.New(ctx, stack, envCfg, tmp)
	if err != nil {
		return nil, err
	}
	parent.Cleanup(env.Close)
	db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
	if err != nil {
		return nil, err
	}
	parent.Cleanup(func() { _ = db.Close() })
	return &benchRig{env: env, reg: reg, tmp: tmp, db: db, changelog: cfg.Kafka.ChangelogTopic}, nil
}

// changelogWrites is how many records the daemon has written to its
// changelog so far (the next offsets of its partitions, summed).
func changelogWrites(b *testing.B, rig *benchRig) int64 {
	c, err := kafka.NewClient(rig.env.Stack.KafkaBrokers, kafka.Security{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_, next, err := c.Offsets(context.Background(), rig.changelog)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, o := range next {
		n += o
	}
	return n
}

// rowsPerObject is the rows of each benchmarked batch's one object.
const rowsPerObject = 100

// distinctRows is harness.GoodBillingRows for rows [from, from+100):
// billing ids INV-<10 digits of i>, unique across the rig's objects.
const distinctRows = `SELECT 'INV-' || lpad(i::VARCHAR, 10, '0') AS billing_id, 'CUST-' || (i %% 97)::VARCHAR AS customer_id,
  (100 + i * 37 %% 50000)::BIGINT AS amount_cents, ['EUR','USD','GBP'][1 + i %% 3] AS currency,
  TIMESTAMP '2026-11-29 02:00:00' + to_seconds(i %% 86400) AS billed_at
FROM range(%d, %d) t(i)`

// object is the next batch's object: from the pool made before the timed
// part (prefill), or made now when it is empty.
func (r *benchRig) object() ([]byte, error) {
	select {
	case obj := <-r.pool:
		return obj, nil
	default:
	}
	if r.db == nil {
		return r.obj, nil
	}
	from := r.seq.Add(1) * rowsPerObject
	f := filepath.Join(r.tmp, fmt.Sprintf("rows-%d.parquet", from))
	rows := fmt.Sprintf(distinctRows, from, from+rowsPerObject)
	if r.failing {
		rows = "SELECT * REPLACE (CASE WHEN billing_id LIKE '%0' THEN NULL ELSE billing_id END AS billing_id) FROM (" + rows + ")"
	}
	if _, err := r.db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", rows, f)); err != nil {
		return nil, err
	}
	defer os.Remove(f)
	return os.ReadFile(f)
}

// prefill makes the objects of the next n batches, outside the timer.
func (r *benchRig) prefill(b *testing.B, n int) {
	b.StopTimer()
	defer b.StartTimer()
	pool := make(chan []byte, n)
	for range n {
		obj, err := r.object()
		if err != nil {
			b.Fatal(err)
		}
		pool <- obj
	}
	r.pool = pool
}

// rigs hands each sub-benchmark its rig, started on first use.
type rigs struct {
	parent *testing.B
	floor  bool // newBenchRig's floor
	mu     sync.Mutex
	by     map[string]*benchRig
}

func newRigs(b *testing.B) *rigs { return &rigs{parent: b, by: map[string]*benchRig{}} }

func (r *rigs) get(b *testing.B, name string, setup func(*benchRig) error) *benchRig {
	b.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	key := b.Name() + "/" + name
	if rig := r.by[key]; rig != nil {
		return rig
	}
	b.StopTimer()
	defer b.StartTimer()
	rig, err := newBenchRig(r.parent, r.parent.TempDir(), r.floor)
	if err != nil {
		b.Fatal(err)
	}
	if setup != nil {
		if err := setup(rig); err != nil {
			b.Fatal(err)
		}
	}
	r.by[key] = rig
	return rig
}

// smallParquet is the one small object each benchmarked batch writes: 100
// rows of the demo's good billing table.
func smallParquet(dir string) ([]byte, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	f := filepath.Join(dir, "small.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (%s WHERE i < 100) TO '%s' (FORMAT parquet)", harness.GoodBillingRows, f)); err != nil {
		return nil, err
	}
	return os.ReadFile(f)
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// cpuUsed is the CPU time (user and system) this process and the stack's
// lakeFS server have used so far.
func cpuUsed(b *testing.B, s *devstack.Stack) (self, lakeFS time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	lakeFS, err := s.LakeFSCPU()
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), lakeFS
}

// drive runs b.N*inflight batches with inflight workers, each starting its
// next batch as soon as its last one ended, and reports batches/s, p50-ms
// and p99-ms of the per-batch latency, and the CPU each batch cost this
// process (cpu-ms: the daemon, kfake and the writers, or the raw
// sequence) and the stack's lakeFS server (lakefs-cpu-ms). CPU per batch
// varies less than throughput with other load on a shared machine.
func drive(b *testing.B, inflight int, s *devstack.Stack, one func(ctx context.Context, id string) error) {
	ctx := context.Background()
	total := int64(b.N * inflight)
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	b.ResetTimer()
	start := time.Now()
	self0, lake0 := cpuUsed(b, s)
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				id := fmt.Sprintf("%d-%d", time.Now().UnixNano(), i)
				t0 := time.Now()
				if err := one(ctx, id); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	self1, lake1 := cpuUsed(b, s)
	b.StopTimer()
	perBatch := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(len(lat)) }
	b.ReportMetric(perBatch(self1-self0), "cpu-ms")
	b.ReportMetric(perBatch(lake1-lake0), "lakefs-cpu-ms")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "batches/s")
	b.ReportMetric(0, "ns/op")
}

// wapBatch is one batch through lakewap as upstream and a writer see it:
// BatchLanded produced, BranchReady consumed, the object uploaded to the
// branch, WriteComplete produced, BatchPublished consumed.
func wapBatch(ctx context.Context, rig *benchRig, id string) error {
	env := rig.env
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := env.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, Producer: "bench", OccurredAt: now}); err != nil {
		return err
	}
	ev, err := env.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	if err != nil {
		return err
	}
	path := "gold/billing_fact/batch=" + id + "/part-0.parquet"
	obj, err := rig.object()
	if err != nil {
		return err
	}
	if err := env.Lake.Upload(ctx, "lake", ev.(schemas.BranchReady).Branch, path, bytes.NewReader(obj)); err != nil {
		return err
	}
	if err := env.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}); err != nil {
		return err
	}
	ev, err = env.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	if err != nil {
		return err
	}
	want := schemas.TypeBatchPublished
	if rig.failing {
		want = schemas.TypeBatchAborted
	}
	if ev.EventType() != want {
		return fmt.Errorf("batch %s: %+v, want %s", id, ev, want)
	}
	return nil
}

// reportLakeCalls reports the daemon's lakeFS calls per published batch
// (lakewap_lakefs_calls_per_batch); the writer's upload is not lakewap's.
func reportLakeCalls(b *testing.B, reg prometheus.Gatherer) {
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "lakewap_lakefs_calls_per_batch" {
			continue
		}
		var sum float64
		var n uint64
		for _, m := range f.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			n += m.GetHistogram().GetSampleCount()
		}
		if n > 0 {
			b.ReportMetric(sum/float64(n), "lakefs-calls/batch")
		}
	}
}

// reportMergeTime reports the mean duration of lakewap's publish steps
// (the merge, and a look at the target when one is needed) since before.
func reportMergeTime(b *testing.B, reg prometheus.Gatherer, before [2]float64) {
	now := publishSteps(b, reg)
	if n := now[1] - before[1]; n > 0 {
		b.ReportMetric(1000*(now[0]-before[0])/n, "merge-ms")
	}
}

// publishSteps is the sum (seconds) and count of the publish steps so far.
func publishSteps(b *testing.B, reg prometheus.Gatherer) [2]float64 {
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var out [2]float64
	for _, f := range fams {
		if f.GetName() != "lakewap_step_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "step" && l.GetValue() == "publish" {
					out[0] += m.GetHistogram().GetSampleSum()
					out[1] += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// BenchmarkWAPCycle measures lakewap end to end, from BatchLanded produced
// to BatchPublished consumed, including the writer's upload after
// BranchReady, with 1, 8 and 64 batches in flight. Each batch writes one
// 100-row Parquet object of rows no other batch has and is audited by the
// demo's five checks at their own scopes (four over the whole table).
func BenchmarkWAPCycle(b *testing.B) {
	rs := newRigs(b)
	for _, inflight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			rig := rs.get(b, "", nil)
			rig.prefill(b, b.N*inflight)
			before, writes := publishSteps(b, rig.reg), changelogWrites(b, rig)
			drive(b, inflight, rig.env.Stack, func(ctx context.Context, id string) error { return wapBatch(ctx, rig, "bench-"+id) })
			b.ReportMetric(float64(changelogWrites(b, rig)-writes)/float64(b.N*inflight), "changelog-writes/batch")
			reportLakeCalls(b, rig.reg)
			reportMergeTime(b, rig.reg, before)
		})
	}
}

// BenchmarkWAPCycleAuditFails is BenchmarkWAPCycle with every batch's
// object failing billing_id_not_null: each batch ends aborted, its branch
// kept. A failing audit's p50 and CPU per batch compare with a passing
// one's (BenchmarkWAPCycle, same inflight).
func BenchmarkWAPCycleAuditFails(b *testing.B) {
	rs := newRigs(b)
	for _, inflight := range []int{1, 8} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			rig := rs.get(b, "", func(r *benchRig) error { r.failing = true; return nil })
			rig.prefill(b, b.N*inflight)
			drive(b, inflight, rig.env.Stack, func(ctx context.Context, id string) error { return wapBatch(ctx, rig, "fail-"+id) })
		})
	}
}

// rawRig is what the raw sequence needs besides the stack: one lock per
// target (merges into main taken one at a time) and a DuckDB for the hand
// query.
type rawRig struct {
	*benchRig
	mainLock sync.Mutex
	db       *sql.DB
	calls    atomic.Int64
	merging  atomic.Int64 // time spent in merges, ns
}

// rawHandQuery computes the demo suite's figures over one object in one
// query: rows, rows with a null billing_id or customer_id, duplicate
// billing_ids, negative amounts, unknown currencies.
const rawHandQuery = `SELECT count(*), count(*) FILTER (WHERE billing_id IS NULL OR customer_id IS NULL),
	count(billing_id) - count(DISTINCT billing_id), count(*) FILTER (WHERE amount_cents < 0),
	count(*) FILTER (WHERE currency IS NOT NULL AND CAST(currency AS VARCHAR) NOT IN ('EUR', 'USD', 'GBP'))
	FROM read_parquet(?)`

// rawBatch is the same work done by hand with the lakeFS client: create the
// branch, upload, commit, download the object and run one hand-written
// DuckDB query for the same checks, merge into main under a per-target
// lock, delete the branch.
func rawBatch(ctx context.Context, r *rawRig, id string) error {
	l := r.env.Lake
	ctx = pipeline.WithCallCounter(ctx, &r.calls)
	branch := "raw-" + id
	path := "gold/billing_fact/batch=" + id + "/part-0.parquet"
	if _, err := l.EnsureBranch(ctx, "lake", branch, "main"); err != nil {
		return err
	}
	obj, err := r.object()
	if err != nil {
		return err
	}
	if err := l.Upload(ctx, "lake", branch, path, bytes.NewReader(obj)); err != nil {
		return err
	}
	commit, err := l.Commit(ctx, "lake", branch, "raw", nil)
	if err != nil {
		return err
	}
	local := filepath.Join(r.tmp, id+".parquet")
	f, err := os.Create(local)
	if err != nil {
		return err
	}
	err = l.Download(ctx, "lake", commit, path, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	defer os.Remove(local)
	if err != nil {
		return err
	}
	var rows, nulls, dups, negative, unknown int64
	if err := r.db.QueryRowContext(ctx, rawHandQuery, local).Scan(&rows, &nulls, &dups, &negative, &unknown); err != nil {
		return err
	}
	if rows < 1 || nulls != 0 || dups != 0 || negative != 0 {
		return fmt.Errorf("raw batch %s fails its checks: rows %d nulls %d dups %d negative %d", id, rows, nulls, dups, negative)
	}
	r.mainLock.Lock()
	t0 := time.Now()
	_, err = l.Merge(ctx, "lake", commit, "main", "raw merge", map[string]string{pipeline.MetaBatchID: id})
	r.merging.Add(int64(time.Since(t0)))
	r.mainLock.Unlock()
	if err != nil {
		return err
	}
	return l.DeleteBranch(ctx, "lake", branch)
}

// BenchmarkRawLakeFSSequence is BenchmarkWAPCycle's work done by hand,
// without Kafka, state or retries; same batches in flight.
func BenchmarkRawLakeFSSequence(b *testing.B) {
	rs := newRigs(b)
	raws := map[string]*rawRig{}
	for _, inflight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			rig := rs.get(b, "", nil)
			r := raws[b.Name()]
			if r == nil {
				db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {}) // db is closed with the parent
				r = &rawRig{benchRig: rig, db: db}
				raws[b.Name()] = r
			}
			rig.prefill(b, b.N*inflight)
			before, merging := r.calls.Load(), r.merging.Load()
			drive(b, inflight, rig.env.Stack, func(ctx context.Context, id string) error { return rawBatch(ctx, r, id) })
			n := float64(b.N * inflight)
			b.ReportMetric(float64(r.calls.Load()-before)/n, "lakefs-calls/batch")
			b.ReportMetric(float64(r.merging.Load()-merging)/n/1e6, "merge-ms")
		})
	}
	for _, r := range raws {
		_ = r.db.Close()
	}
}

// growHistory adds n empty commits to main, one after another, dated a
// day back (a second apart), as an old history is.
func growHistory(ctx context.Context, rig *benchRig, n int) error {
	s := rig.env.Stack
	api, err := apigen.NewClientWithResponses(strings.TrimRight(s.LakeFSEndpoint, "/")+"/api/v1",
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(s.AccessKeyID, s.SecretAccessKey)
			return nil
		}))
	if err != nil {
		return err
	}
	allow := true
	start := time.Now().Add(-24 * time.Hour).Unix()
	for i := range n {
		date := start + int64(i)
		resp, err := api.CommitWithResponse(ctx, s.Repository, "main", &apigen.CommitParams{},
			apigen.CommitJSONRequestBody{Message: fmt.Sprintf("history %d", i), AllowEmpty: &allow, Date: &date})
		if err != nil {
			return err
		}
		if resp.StatusCode() != http.StatusCreated {
			return fmt.Errorf("history commit %d: HTTP %d %s", i, resp.StatusCode(), resp.Body)
		}
	}
	return nil
}

// BenchmarkWAPCycleLongHistory runs BenchmarkWAPCycle's batch, one in
// flight, alternately on a fresh repository and on one whose main already
// has 10,000 commits, and reports both p50s and their ratio. It also times
// the "already published?" look that a restored or retried publish makes
// (merge-base of the sealed commit and the target, then the target's
// commits since publishing started) for the batches just published.
func BenchmarkWAPCycleLongHistory(b *testing.B) {
	const history = 10_000
	rs := newRigs(b)
	b.Run("inflight=1", func(b *testing.B) {
		ctx := context.Background()
		fresh := rs.get(b, "fresh", nil)
		long := rs.get(b, "long", func(r *benchRig) error { return growHistory(ctx, r, history) })
		var lat, look [2][]time.Duration
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			for j, rig := range []*benchRig{fresh, long} {
				id := fmt.Sprintf("hist-%d-%d", j, i)
				t0 := time.Now()
				if err := wapBatch(ctx, rig, id); err != nil {
					b.Fatal(err)
				}
				lat[j] = append(lat[j], time.Since(t0))
				b.StopTimer()
				ev, err := rig.env.Watcher.Await(ctx, id, schemas.TypeBatchPublished)
				if err != nil {
					b.Fatal(err)
				}
				pub := ev.(schemas.BatchPublished)
				merge, err := rig.env.Lake.GetCommit(ctx, "lake", pub.CommitID)
				if err != nil || len(merge.Parents) < 2 {
					b.Fatalf("publish commit %s of %s: %v %+v", pub.CommitID, id, err, merge)
				}
				t0 = time.Now()
				p, err := rig.env.Lake.Published(ctx, "lake", "main", merge.Parents[1], pub.PublishedAt.Add(-time.Second))
				look[j] = append(look[j], time.Since(t0))
				if err != nil || !p.OnTarget || p.Merge != pub.CommitID {
					b.Fatalf("look for %s: %v %+v, want merge %s", id, err, p, pub.CommitID)
				}
				b.StartTimer()
			}
		}
		b.StopTimer()
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		f, l := percentile(lat[0], 0.5), percentile(lat[1], 0.5)
		b.ReportMetric(ms(f), "fresh-p50-ms")
		b.ReportMetric(ms(l), "long-p50-ms")
		b.ReportMetric(float64(l)/float64(f), "long/fresh")
		b.ReportMetric(ms(percentile(look[0], 0.5)), "fresh-look-ms")
		b.ReportMetric(ms(percentile(look[1], 0.5)), "long-look-ms")
		b.ReportMetric(0, "ns/op")
	})
}
