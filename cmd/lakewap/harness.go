package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"
	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// stackEnv is the embedded stack seen from outside lakewap: an upstream
// producer, a writer and a downstream consumer of results. The demo and the
// end-to-end tests use it to drive a daemon like users do.
type stackEnv struct {
	stack   *devstack.Stack
	cfg     *config.Config
	lake    *lakefs.Client
	codec   *schemas.Codec
	writer  *kafka.Writer
	watcher *resultWatcher
	tmp     string
}

// demoConfig is the billing dataset of the demo and the tests, on stack.
func demoConfig(s *devstack.Stack, workDir string) *config.Config {
	one, zero := 1.0, 0.0
	no := false
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: s.KafkaBrokers, CreateTopics: &no, Partitions: 3,
			CommitInterval: config.Duration(200 * time.Millisecond)},
		LakeFS: config.LakeFS{Endpoint: s.LakeFSEndpoint, AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey,
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
	return cfg
}

// stackTopics lists cfg's topics by base name: devstack.Options.Topics maps
// them to the stack's actual names.
func stackTopics(cfg *config.Config) []devstack.Topic {
	k := cfg.Kafka
	if k.InputTopic == "" {
		k.InputTopic, k.ResultsTopic, k.DeadLetterTopic, k.ChangelogTopic = "wap.events", "wap.results", "wap.dlq", "wap.runs"
	}
	return []devstack.Topic{{Name: k.InputTopic}, {Name: k.ResultsTopic}, {Name: k.DeadLetterTopic}, {Name: k.ChangelogTopic, Compacted: true}}
}

// newStackEnv connects producer, writer and result watcher to a stack.
func newStackEnv(ctx context.Context, s *devstack.Stack, cfg *config.Config, tmp string) (*stackEnv, error) {
	lake, err := lakefs.New(lakefs.Config{Endpoint: s.LakeFSEndpoint, AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey})
	if err != nil {
		return nil, err
	}
	// Upstream uses the registry when lakewap does: the Confluent wire format.
	codec, err := newCodec(cfg.Kafka.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	e := &stackEnv{stack: s, cfg: cfg, lake: lake, codec: codec, tmp: tmp,
		// Its own transport: kafka-go's default one caches a broker's topic
		// list for seconds, and a real broker outlives stacks (and topics).
		writer: &kafka.Writer{Addr: kafka.TCP(s.KafkaBrokers...), Topic: cfg.Kafka.InputTopic, Balancer: &kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, Transport: &kafka.Transport{}}}
	e.watcher, err = watchResults(ctx, s.KafkaBrokers, cfg.Kafka.ResultsTopic, codec)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *stackEnv) Close() {
	_ = e.writer.Close()
	e.writer.Transport.(*kafka.Transport).CloseIdleConnections()
	e.watcher.Close()
}

// produce sends an input event as upstream would: key = batch id.
func (e *stackEnv) produce(ctx context.Context, ev schemas.Event) error {
	v, err := e.codec.Encode(ctx, e.cfg.Kafka.InputTopic, ev)
	if err != nil {
		return err
	}
	var hs []kafka.Header
	for k, val := range schemas.Headers(ev) {
		hs = append(hs, kafka.Header{Key: k, Value: []byte(val)})
	}
	return e.writer.WriteMessages(ctx, kafka.Message{Key: []byte(ev.Batch()), Value: v, Headers: hs})
}

// writeParquet plays the writer: query's rows become one Parquet object at
// path on branch, through lakeFS.
func (e *stackEnv) writeParquet(ctx context.Context, branch, path, query string) error {
	f := filepath.Join(e.tmp, strings.ReplaceAll(branch+"-"+path, "/", "_"))
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
	return e.lake.Upload(ctx, e.stack.Repository, branch, path, r)
}

// countRows downloads the Parquet objects under prefix at ref and counts
// their rows, optionally only those matching where.
func (e *stackEnv) countRows(ctx context.Context, ref, prefix, where string) (int64, error) {
	objs, err := e.lake.List(ctx, e.stack.Repository, ref, prefix)
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp(e.tmp, "count-")
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
		err = e.lake.Download(ctx, e.stack.Repository, ref, o.Path, f)
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

// resultWatcher reads every partition of the results topic from the start
// and keeps what it decoded, like a downstream consumer.
type resultWatcher struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	cond    chan struct{}
	events  []schemas.Event
	byBatch map[string][]schemas.Event // the same events by batch id
	readers []*kafka.Reader
}

func watchResults(ctx context.Context, brokers []string, topic string, codec *schemas.Codec) (*resultWatcher, error) {
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		return nil, err
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("results topic %s: %w", topic, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	w := &resultWatcher{cancel: cancel, cond: make(chan struct{}), byBatch: map[string][]schemas.Event{}}
	for _, p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.ID, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 50 * time.Millisecond})
		w.readers = append(w.readers, r)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				m, err := r.ReadMessage(wctx)
				if err != nil {
					return
				}
				ev, err := codec.Decode(wctx, m.Value)
				if err != nil {
					slog.Default().Warn("undecodable result event", "err", err)
					continue
				}
				w.mu.Lock()
				w.events = append(w.events, ev)
				w.byBatch[ev.Batch()] = append(w.byBatch[ev.Batch()], ev)
				close(w.cond)
				w.cond = make(chan struct{})
				w.mu.Unlock()
			}
		}()
	}
	return w, nil
}

// await returns the first result event of batch with one of types.
func (w *resultWatcher) await(ctx context.Context, batch string, types ...string) (schemas.Event, error) {
	for {
		w.mu.Lock()
		for _, ev := range w.byBatch[batch] {
			for _, t := range types {
				if ev.EventType() == t {
					w.mu.Unlock()
					return ev, nil
				}
			}
		}
		ch := w.cond
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %v of batch %s: %w", types, batch, ctx.Err())
		case <-ch:
		}
	}
}

// all returns every event received for batch.
func (w *resultWatcher) all(batch string) []schemas.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []schemas.Event
	for _, ev := range w.events {
		if ev.Batch() == batch {
			out = append(out, ev)
		}
	}
	return out
}

func (w *resultWatcher) Close() {
	w.cancel()
	for _, r := range w.readers {
		_ = r.Close()
	}
	w.wg.Wait()
}
