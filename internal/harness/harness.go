// Package harness is the embedded stack seen from outside lakewap: an
// upstream producer, a writer and a downstream consumer of results over a
// devstack, and the demo's billing dataset. The demo and the end-to-end
// tests use it to drive a daemon like users do. Only cmd/ and tests import it.
package harness

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// Env is the embedded stack seen from outside lakewap (see the package doc).
type Env struct {
	Stack   *devstack.Stack
	Cfg     *config.Config
	Lake    *lakefs.Client
	Codec   *schemas.Codec
	Writer  *kafka.Writer // to the input topic, as upstream writes
	Watcher *Watcher
	Tmp     string
	kafka   *kafka.Client
}

// DemoConfig is the billing dataset of the demo and the tests, on stack.
// lakewap signs in as the stack's lakewap user where it has one (ACL), else
// as the admin.
func DemoConfig(s *devstack.Stack, workDir string) *config.Config {
	one, zero, no := 1.0, 0.0, false
	key := devstack.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}
	if s.Lakewap.AccessKeyID != "" {
		key = s.Lakewap
	}
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: s.KafkaBrokers, CreateTopics: &no, Partitions: 3,
			CommitInterval: config.Duration(200 * time.Millisecond)},
		LakeFS: config.LakeFS{Endpoint: s.LakeFSEndpoint, AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey,
			UIURL: s.LakeFSEndpoint},
		Audit: config.Audit{WorkDir: filepath.Join(workDir, "audit"), CacheDir: filepath.Join(workDir, "audit-cache"), MemoryLimit: "1GB", Threads: 2},
		Datasets: map[string]config.Dataset{"billing": {Repository: s.Repository, Target: "main",
			WriteTimeout: config.Duration(5 * time.Minute)}},
	}
	ds := cfg.Datasets["billing"]
	ds.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/billing_fact/", Format: "parquet"}}
	ds.Suite.Checks = []audit.Check{
		{Name: "billing_id_not_null", Kind: "not_null", Table: "billing_fact", Columns: []string{"billing_id", "customer_id"}},
		{Name: "billing_id_unique", Kind: "unique", Table: "billing_fact", Columns: []string{"billing_id"}},
		{Name: "amount_not_negative", Kind: "range", Table: "billing_fact", Column: "amount_cents", Min: &zero},
		{Name: "has_rows", Kind: "row_count", Table: "billing_fact", Min: &one, Scope: "batch"},
		{Name: "known_currency", Kind: "accepted_values", Table: "billing_fact", Column: "currency", Values: []string{"EUR", "USD", "GBP"}, Severity: "warn"},
	}
	cfg.Datasets["billing"] = ds
	cfg.Defaults()
	// The stack's actual names: unchanged on kfake, unique per stack when
	// many stacks share one real Kafka cluster.
	k := &cfg.Kafka
	k.GroupID, k.InputTopic, k.ResultsTopic = s.GroupID(k.GroupID), s.Topic(k.InputTopic), s.Topic(k.ResultsTopic)
	k.DeadLetterTopic, k.ChangelogTopic = s.Topic(k.DeadLetterTopic), s.Topic(k.ChangelogTopic)
	k.RequestsTopic = s.Topic(k.RequestsTopic)
	return cfg
}

// StackTopics are lakewap's topics by their default names: devstack maps
// them to the stack's actual names.
func StackTopics() []devstack.Topic {
	return []devstack.Topic{{Name: "wap.events"}, {Name: "wap.requests"}, {Name: "wap.results"}, {Name: "wap.dlq"}, {Name: "wap.runs", Compacted: true}}
}

// New connects producer, writer and result watcher to a stack.
func New(ctx context.Context, s *devstack.Stack, cfg *config.Config, tmp string) (*Env, error) {
	lake, err := lakefs.New(lakefs.Config{Endpoint: s.LakeFSEndpoint, AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey})
	if err != nil {
		return nil, err
	}
	// Upstream uses the registry when lakewap does: the Confluent wire format.
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		return nil, err
	}
	// Its own client: a real broker outlives stacks (and topics).
	client, err := kafka.NewClient(s.KafkaBrokers, kafka.Security{})
	if err != nil {
		return nil, err
	}
	e := &Env{Stack: s, Cfg: cfg, Lake: lake, Codec: codec, Tmp: tmp, kafka: client,
		Writer: client.Writer(kafka.WriterConfig{Topic: cfg.Kafka.InputTopic, Attempts: 10})}
	e.Watcher, err = WatchResults(ctx, cfg, codec)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) Close() {
	_ = e.Writer.Close()
	e.kafka.Close()
	e.Watcher.Close()
}

// Produce sends an input event as upstream would: key = batch id.
func (e *Env) Produce(ctx context.Context, ev schemas.Event) error {
	return e.ProduceWithHeaders(ctx, ev, nil)
}

// ProduceWithHeaders is Produce with more headers (a traceparent, say).
func (e *Env) ProduceWithHeaders(ctx context.Context, ev schemas.Event, extra map[string]string) error {
	v, err := e.Codec.Encode(ctx, e.Cfg.Kafka.InputTopic, ev)
	if err != nil {
		return err
	}
	var hs []kafka.Header
	for k, val := range schemas.Headers(ev) {
		hs = append(hs, kafka.Header{Key: k, Value: []byte(val)})
	}
	for k, val := range extra {
		hs = append(hs, kafka.Header{Key: k, Value: []byte(val)})
	}
	return e.Writer.Write(ctx, kafka.Message{Key: []byte(ev.Batch()), Value: v, Headers: hs})
}

// WriteParquet plays the writer: query's rows become one Parquet object at
// path on branch, through lakeFS.
func (e *Env) WriteParquet(ctx context.Context, branch, path, query string) error {
	f := filepath.Join(e.Tmp, strings.ReplaceAll(branch+"-"+path, "/", "_"))
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, f)); err != nil {
		return fmt.Errorf("generate parquet: %w", err)
	}
	defer os.Remove(f)
	r, err := os.Open(f)
	if err != nil {
		return err
	}
	defer r.Close()
	return e.Lake.Upload(ctx, e.Stack.Repository, branch, path, r)
}

// CountRows downloads the Parquet objects under prefix at ref and counts
// their rows, optionally only those matching where.
func (e *Env) CountRows(ctx context.Context, ref, prefix, where string) (int64, error) {
	objs, err := e.Lake.List(ctx, e.Stack.Repository, ref, prefix)
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp(e.Tmp, "count-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var files []string
	for i, o := range objs {
		if !strings.HasSuffix(o.Path, ".parquet") {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
		f, err := os.Create(p)
		if err != nil {
			return 0, err
		}
		err = e.Lake.Download(ctx, e.Stack.Repository, ref, o.Path, f)
		f.Close()
		if err != nil {
			return 0, err
		}
		files = append(files, "'"+p+"'")
	}
	if len(files) == 0 {
		return 0, nil
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	q := fmt.Sprintf("SELECT count(*) FROM read_parquet([%s])", strings.Join(files, ","))
	if where != "" {
		q += " WHERE " + where
	}
	var n int64
	err = db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

// Watcher reads every partition of the results topic from the start
// and keeps what it decoded, like a downstream consumer.
type Watcher struct {
	stop   func()
	mu     sync.Mutex
	cond   chan struct{}
	events []schemas.Event
}

// WatchResults watches the results topic of cfg, decoding with codec.
func WatchResults(ctx context.Context, cfg *config.Config, codec *schemas.Codec) (*Watcher, error) {
	t, err := opclient.Of(cfg, "")
	if err != nil {
		return nil, err
	}
	// A broker short of CPU answers a topic made moments ago with errors
	// that pass (Apache Kafka 4.4.0 on a loaded machine: UNKNOWN_SERVER_ERROR
	// for a partition's offsets, a Metadata round trip past its deadline):
	// asked again until ctx ends, as a downstream consumer would.
	var first map[int]int64
	ob := backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: backoff.Equal}.New()
	for {
		first, _, err = t.Offsets(ctx, cfg.Kafka.ResultsTopic)
		if err == nil {
			break
		}
		slog.Default().Warn("reading the results topic's offsets failed; asking again", "err", err)
		if !ob.Wait(ctx) {
			t.Close()
			return nil, fmt.Errorf("results topic: %w", err)
		}
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := &Watcher{cond: make(chan struct{}), stop: func() { cancel(); <-done; t.Close() }}
	go func() {
		defer close(done)
		// A failed read (kafka-go hands out a broker's error code on a
		// fetch, and a connection it could not set up in three tries)
		// ends ReadPartitions: the watcher reads on from each partition's
		// next offset. Before, it stopped for good, and every Await after
		// it waited for its context.
		next := maps.Clone(first)
		b := backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: backoff.Equal}.New()
		for {
			err := t.ReadPartitions(wctx, cfg.Kafka.ResultsTopic, next, nil, func(m kafka.Message) bool {
				next[m.Partition] = m.Offset + 1 // fn is called by one goroutine at a time
				ev, err := codec.Decode(wctx, m.Value)
				if err != nil {
					slog.Default().Warn("undecodable result event", "err", err)
					return false
				}
				w.mu.Lock()
				w.events = append(w.events, ev)
				close(w.cond)
				w.cond = make(chan struct{})
				w.mu.Unlock()
				return false
			})
			if err == nil || wctx.Err() != nil {
				return // stopped
			}
			slog.Default().Warn("reading the results topic failed; reading on", "err", err)
			if !b.Wait(wctx) {
				return
			}
		}
	}()
	return w, nil
}

// Await returns the first result event of batch with one of types.
func (w *Watcher) Await(ctx context.Context, batch string, types ...string) (schemas.Event, error) {
	ev, err := w.AwaitFunc(ctx, func(ev schemas.Event) bool { return ev.Batch() == batch && slices.Contains(types, ev.EventType()) })
	if err != nil {
		return nil, fmt.Errorf("waiting for %v of batch %s: %w", types, batch, err)
	}
	return ev, nil
}

// AwaitFunc returns the first result event match accepts. Each wake-up
// looks only at the events that came since the last: with many waiters
// (64 batches in flight in the benchmarks) a rescan of every event on each
// new one cost the test process more CPU than the daemon's state machine.
func (w *Watcher) AwaitFunc(ctx context.Context, match func(schemas.Event) bool) (schemas.Event, error) {
	for seen := 0; ; {
		w.mu.Lock()
		for ; seen < len(w.events); seen++ {
			if ev := w.events[seen]; match(ev) {
				w.mu.Unlock()
				return ev, nil
			}
		}
		ch := w.cond
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// All returns every event received for batch.
func (w *Watcher) All(batch string) []schemas.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(w.events), func(ev schemas.Event) bool { return ev.Batch() != batch })
}

// Close stops reading.
func (w *Watcher) Close() { w.stop() }
