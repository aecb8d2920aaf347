// Package daemon is lakewap's running daemon: it wires config, Kafka,
// lakeFS, DuckDB and the notifiers together, serves the HTTP endpoints
// (metrics, health, the pre-merge webhook) and shuts down in reverse order.
// It is the only package that imports every part; cmd/lakewap parses
// flags and calls it.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/ingest"
	"github.com/lakewap/lakewap/internal/buildinfo"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/lineage"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/internal/tracing"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/pipeline/lakefs/auditsource"
	"github.com/lakewap/lakewap/pipeline/runner"
	"github.com/lakewap/lakewap/schemas"
)

// Options are what a caller (lakewap run, the demo, tests) adds to the config.
type Options struct {
	Logger   *slog.Logger
	Console  io.Writer // console sink output when notify.console is on
	Registry *prometheus.Registry
	// Observe is passed to the runner (the demo's timeline).
	Observe func(before, after pipeline.Run)
	// NotifyRetry is how soon a sink that still owes a notification
	// (Slack down) is notified again; 0 is the machine's default (1m).
	NotifyRetry time.Duration
	// JanitorInterval, if set, is the time between the janitor's sweeps in
	// place of the config's (at least 1m): tests that need a sweep.
	JanitorInterval time.Duration
	// Failpoint, if set, is the runner's (tests that stop a step at a named
	// point); otherwise LAKEWAP_FAILPOINT arms the crash tests' one.
	Failpoint func(name string)
}

// Daemon is lakewap's running parts; stopped in reverse order of start.
type Daemon struct {
	cfg           *config.Config
	log           *slog.Logger
	lake          *lakefs.Client
	engine        *audit.Engine
	audits        *audit.Service // shared by the runner and the pre-merge webhook
	runner        *runner.Runner
	consumer      *consumer.Consumer
	resultsWriter *kafka.Writer
	notify        *notify.Dispatcher
	kafka         *kafka.Client // closed last: its transport's connections refresh every topic's metadata until then
	changelog     *consumer.Changelog
	http          *http.Server
	httpLn        net.Listener
	refusals      *kafka.Refusals // what lakewap's topics refused of its writes, for /readyz
	janitor       *janitor.Janitor
	sweepEvery    time.Duration // the janitor's interval: the config's, or Options.JanitorInterval
	lineage       *lineage.Emitter
	tracer        *tracing.Tracer
	reg           *prometheus.Registry
}

// New connects to Kafka and lakeFS, builds the parts of cfg and serves its
// HTTP listener; Run consumes.
func New(ctx context.Context, cfg *config.Config, o Options) (*Daemon, error) {
	log, reg := cmp.Or(o.Logger, slog.New(slog.DiscardHandler)), o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	d := &Daemon{cfg: cfg, log: log, reg: reg, refusals: kafka.NewRefusals()}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()

	var err error
	var wrap func(http.RoundTripper) http.RoundTripper
	if cfg.Tracing.OTLPEndpoint != "" {
		if d.tracer, err = tracing.New(ctx, cfg.TracingOptions(buildinfo.Read().Version)); err != nil {
			return nil, err
		}
		wrap = d.tracer.Transport
	}
	d.lake, err = Lake(cfg, log, reg, wrap)
	if err != nil {
		return nil, err
	}

	if err := reg.Register(refusalCollector{d}); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	kp, err := connectKafka(ctx, cfg, d.refusals)
	d.kafka, d.changelog = kp.client, kp.store // nil, or closed with the daemon's other parts
	if err != nil {
		return nil, err
	}
	if err := d.startAudits(); err != nil {
		return nil, err
	}
	k := cfg.Kafka
	// Three attempts: the Dispatcher retries on top, within its budget.
	d.resultsWriter = kp.client.Writer(kafka.WriterConfig{Topic: cmp.Or(k.ResultsTopic, notify.DefaultResultsTopic), Attempts: 3})
	results, err := notify.NewKafkaResults(d.resultsWriter, kp.codec)
	if err != nil {
		return nil, fmt.Errorf("results sink: %w", err)
	}
	results.MaxMessageBytes, results.Refusals = k.ResultsMaxMessageBytes, d.refusals
	disp, err := newDispatcher(cfg, results, o.Console, log, reg)
	if err != nil {
		return nil, err
	}
	d.notify = disp

	rc := cfg.RunnerConfig()
	stateKey, err := cfg.StateKey()
	if err != nil {
		return nil, err
	}
	// What the config leaves unsigned (the changelog's records, the
	// publishes' attestations) is said at every start.
	for _, w := range cfg.Unguarded() {
		log.Warn(w)
	}
	store, err := runstore.New(runstore.Config{Inner: kp.store, Key: stateKey, Datasets: rc.Datasets, Logger: log, Registerer: reg,
		// Records are loaded at assignment, when the consumer exists.
		Partitions: func() int {
			if d.consumer == nil {
				return 0
			}
			return d.consumer.Partitions(k.InputTopic)
		},
		// A Load takes the partition only while this member still owns it
		// in the group generation it was assigned in.
		Fence: func(ctx context.Context, partition int) error {
			if d.consumer == nil {
				return errors.New("no consumer: the partition is assigned by none")
			}
			return d.consumer.Fence(ctx, partition)
		}})
	if err != nil {
		return nil, err
	}
	rc.Lake, rc.Auditor, rc.Notifier, rc.Store = d.lake, auditor{d.audits}, notifier{disp}, store
	rc.Logger, rc.Observe, rc.Failpoint = log, o.Observe, failpointFromEnv(log)
	rc.Attest = attester(cfg, d.engine, d.lake)
	if cfg.Audit.IncrementalOn() {
		// What makes the next audit full is announced; with every audit
		// full there is nothing to say.
		rc.Unattested = unattestedFinder(cfg, d.lake)
	}
	if cfg.Lineage.On() {
		if d.lineage, err = newLineage(ctx, cfg, kp.client, log, reg); err != nil {
			return nil, err
		}
		rc.Observe = observeBoth(o.Observe, d.lineage.Observe)
	}
	if d.tracer != nil {
		rc.Tracer = d.tracer
		rc.Observe = observeBoth(rc.Observe, d.tracer.Observe)
	}
	if o.Failpoint != nil {
		rc.Failpoint = o.Failpoint
	}
	if o.NotifyRetry > 0 {
		rc.Policy.NotifyRetry = o.NotifyRetry
	}
	rc.Registerer, rc.DatasetNames = reg, slices.Sorted(maps.Keys(cfg.Datasets))
	if d.runner, err = runner.New(rc); err != nil {
		return nil, err
	}
	build := buildinfo.Read()
	if err := build.Register(reg); err != nil {
		return nil, err
	}
	if err := registerSigningKeys(reg, cfg); err != nil {
		return nil, err
	}
	if d.janitor, err = NewJanitor(cfg, d.lake, log, reg); err != nil {
		return nil, fmt.Errorf("janitor: %w", err)
	}
	d.sweepEvery = cmp.Or(o.JanitorInterval, cfg.Janitor.Interval.Std())

	cc := k.Consumer(kp.sec)
	cc.Registerer, cc.Refusals = reg, d.refusals
	operators, err := cfg.OperatorKeys()
	if err != nil {
		return nil, err
	}
	var cluster string // signatures name it: a request signed for another cluster is not carried out
	if len(operators) > 0 {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cluster, err = kp.client.ClusterID(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("kafka: the cluster id, which operators' signatures name: %w", err)
		}
		if err := (schemas.RequestScope{Cluster: cluster, Deployment: k.DeploymentID}).Check(); err != nil {
			return nil, fmt.Errorf("operators: %w", err)
		}
	}
	ic := ingest.Config{Codec: kp.codec, Rules: cfg.InputRules(), Counted: d.runner.CountInput,
		RequestsTopic: k.RequestsTopic, InputTopic: k.InputTopic, Operators: operators, Cluster: cluster, Deployment: k.DeploymentID,
		// The consumer exists once the stage does: ask it lazily.
		Partitions: func(topic string) int {
			if d.consumer == nil {
				return 0
			}
			return d.consumer.Partitions(topic)
		}}
	if d.tracer != nil {
		ic.Process = d.tracer.Process
	}
	in := ingest.Wrap(ic, d.runner)
	if d.consumer, err = consumer.New(cc, in, log); err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}

	if cfg.HTTP.Listen != "" {
		if err := d.serveHTTP(cfg.HTTP.Listen); err != nil {
			return nil, fmt.Errorf("http.listen: %w", err)
		}
	}
	ok = true
	return d, nil
}

// kafkaParts are the daemon's connection to Kafka.
type kafkaParts struct {
	sec    kafka.Security
	client *kafka.Client
	codec  *schemas.Codec
	store  *consumer.Changelog
}

// connectKafka prepares k's security, transport and codec, creates the
// topics unless kafka.create_topics is false (then checks they exist), and
// opens the run changelog.
func connectKafka(ctx context.Context, cfg *config.Config, refusals *kafka.Refusals) (kp kafkaParts, err error) {
	k := cfg.Kafka
	if kp.sec, err = k.Security(); err != nil {
		return kp, err
	}
	if kp.client, err = kafka.NewClient(k.Brokers, kp.sec); err != nil {
		return kp, err
	}
	kp.client.RecordRefusals(refusals)
	if k.CreateTopics == nil || *k.CreateTopics {
		err = kp.client.EnsureTopics(ctx, cfg.TopicSpecs()...)
	} else {
		err = kp.client.CheckTopics(ctx, cfg.TopicSpecs()...)
	}
	var missing *kafka.MissingTopicError
	var small *kafka.SmallTopicError
	switch {
	case errors.As(err, &missing):
		// A consumer group subscribed to a missing topic rejoins forever,
		// assigned nothing: stop here instead, naming the field.
		return kp, fmt.Errorf("%s: topic %q does not exist, and kafka.create_topics is false: create it, or let lakewap create it",
			k.TopicField(missing.Topic), missing.Topic)
	case errors.As(err, &small):
		// Each write over it would be refused on every attempt, and the
		// partition that made it would wait for ever.
		return kp, fmt.Errorf("%s: %w", k.TopicField(small.Topic), small)
	case err != nil:
		return kp, fmt.Errorf("kafka topics: %w", err)
	}
	if kp.codec, err = k.Codec(); err != nil {
		return kp, err
	}
	if kp.store, err = consumer.NewChangelog(consumer.ChangelogConfig{Brokers: k.Brokers, Topic: k.ChangelogTopic, Security: kp.sec, Refusals: refusals}); err != nil {
		return kp, fmt.Errorf("kafka changelog: %w", err)
	}
	return kp, nil
}

// startAudits opens the audit engine over lakeFS and the audit service the
// runner and the pre-merge webhook share.
func (d *Daemon) startAudits() (err error) {
	opts := engineOptions(d.cfg, d.lake, auditsource.Source{Lake: d.lake}, d.log)
	opts.Failpoint = failpointFromEnv(d.log) // after_stats, stats_half_written
	if d.engine, err = audit.New(opts); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	d.audits, err = audit.NewService(audit.ServiceOptions{Engine: d.engine, Datasets: d.cfg.AuditDatasets(),
		Head: func(ctx context.Context, repo, ref string) (string, error) {
			c, err := d.lake.GetCommit(ctx, repo, ref)
			return c.ID, err
		},
		Concurrency: d.cfg.HTTP.WebhookConcurrency, Budget: d.cfg.Runner.StepTimeout.Std(), Registerer: d.reg, Logger: d.log})
	return err
}

// newDispatcher fans result events out to the Kafka results sink and the
// configured console and Slack sinks, along notify.routes.
func newDispatcher(cfg *config.Config, results *notify.KafkaResults, console io.Writer, log *slog.Logger, reg prometheus.Registerer) (*notify.Dispatcher, error) {
	sinks, routes, err := cfg.Sinks(results, cmp.Or[io.Writer](console, os.Stdout), reg, log)
	if err != nil {
		return nil, err
	}
	disp, err := notify.NewDispatcher(routes, sinks, notify.Options{Logger: log, Registerer: reg,
		Budget: cfg.Notify.SlackBudgetOrDefault(), BestEffortWait: cfg.Notify.BestEffortWait.Std()})
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	return disp, nil
}

// Run consumes until ctx ends, then shuts down: the consumer stops fetching
// and hands its partitions back (the runner gets Grace to finish steps),
// offsets are committed, then the rest closes.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.close()
	if j := d.cfg.Janitor; j.On() { // stopped, a sweep in progress awaited, before the rest closes
		jctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); d.janitor.Run(jctx, d.sweepEvery, j.DryRun) }()
		defer func() { stop(); <-done }()
	}
	if err := d.consumer.Run(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// HTTPAddr is the address the HTTP listener serves (http.listen with its
// port resolved), or "" without one.
func (d *Daemon) HTTPAddr() string {
	if d.httpLn == nil {
		return ""
	}
	return d.httpLn.Addr().String()
}

// Engine is the daemon's audit engine (system tests run suites of their own
// through it, over the daemon's view of lakeFS).
func (d *Daemon) Engine() *audit.Engine { return d.engine }

// Runs are the runs this instance holds (its partitions'), as /runs shows them.
func (d *Daemon) Runs() []pipeline.Run { return d.runner.Runs() }

// Assigned says whether the consumer holds its partitions, with their runs
// restored (/readyz's Kafka half).
func (d *Daemon) Assigned() bool { return d.consumer.Ready() }

func (d *Daemon) close() {
	if d.http != nil {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.http.Shutdown(shut)
		cancel()
	}
	if d.runner != nil {
		d.runner.Close()
	}
	if d.notify != nil {
		// Slack messages still going out in the background are awaited
		// (each ends within notify.slack_budget), not cut by the exit.
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Notify.SlackBudgetOrDefault()+time.Second)
		if err := d.notify.Close(ctx); err != nil {
			d.log.Warn("stopping with notifications unsent", "error", err.Error())
		}
		cancel()
	}
	if d.resultsWriter != nil {
		_ = d.resultsWriter.Close()
	}
	if d.lineage != nil {
		d.lineage.Close() // after the runner: nothing observes any more
	}
	if d.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.tracer.Shutdown(ctx) // sends the spans still queued
		cancel()
	}
	if d.engine != nil {
		_ = d.engine.Close()
	}
	if d.janitor != nil {
		d.janitor.Close()
	}
	if d.changelog != nil {
		d.changelog.Close()
	}
	if d.kafka != nil {
		d.kafka.Close()
	}
}

func (d *Daemon) serveHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Each read endpoint is GET (and so HEAD) only: the mux answers any
	// other method 405 with Allow before the handler runs. The webhook
	// refuses all but POST itself, in a hook answer lakeFS logs.
	mux := http.NewServeMux()
	// On loopback, what takes no token answers only loopback Host values
	// (loopbackHostOnly): a page in a local browser reaches the port too.
	open := func(h http.Handler) http.Handler { return h }
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		open = loopbackHostOnly
	}
	mux.Handle("GET /metrics", open(metricsHandler(d.reg)))
	if mode := d.cfg.HTTP.WebhookMode(); mode != config.WebhookOff {
		premerge, err := d.preMergeHandler()
		if err != nil {
			ln.Close()
			return err
		}
		if mode == config.WebhookOpen {
			d.log.Warn("the pre-merge webhook is served without a token (http.webhook: open): anyone who reaches " +
				addr + " can make lakewap audit")
			premerge = open(premerge)
		}
		mux.Handle(PreMergePath, premerge)
	}
	if err := d.mountRuns(mux, ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	mux.Handle("GET /healthz", open(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })))
	mux.Handle("GET /readyz", open(readyHandler(d.lake.Healthy, d.Assigned, d.stalling, d.log, time.Now)))
	d.httpLn = ln
	d.http = newHTTPServer(mux, d.cfg.Runner.StepTimeout.Std())
	lim := serveLimited(d.http, ln, maxConns)
	go func() { _ = d.http.Serve(lim) }()
	d.log.Info("http listening", "addr", ln.Addr().String())
	return nil
}

// readyHandler answers /readyz: whether lakeFS answers its health check
// (healthy), the partitions are assigned and restored, and no topic of
// lakewap's refused its records within kafka.RefusalFor (refusing: a
// max.message.bytes lowered, an ACL taken away; the writer retries for
// ever and the partition behind it waits, so only an operator can help,
// and the answer names the topic and the broker's reason). Anyone who
// reaches the port may call it: calls share one health check at a time and
// its answer for readyFor, so they cannot make lakewap call lakeFS as
// often as they call /readyz. The check does not end with the call that
// made it (a caller hanging up would make the answer a failure).
func readyHandler(healthy func(context.Context) error, assigned func() bool, refusing func() []kafka.Refusal, log *slog.Logger, now func() time.Time) http.Handler {
	var (
		mu      sync.Mutex
		checked time.Time
		last    error
	)
	check := func(r *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if t := now(); checked.IsZero() || t.Sub(checked) >= readyFor || t.Before(checked) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 3*time.Second)
			last = healthy(ctx)
			cancel()
			checked = now()
			if last != nil {
				log.Warn("not ready: lakeFS does not answer", "err", last)
			}
		}
		return last
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The details (internal URLs, lakeFS's error text) go to the log,
		// not to whoever can reach the port.
		if err := check(r); err != nil {
			http.Error(w, "lakefs: not reachable (details in the lakewap log)", http.StatusServiceUnavailable)
			return
		}
		if !assigned() {
			http.Error(w, "kafka: partitions not assigned and restored yet", http.StatusServiceUnavailable)
			return
		}
		if refs := refusing(); len(refs) > 0 {
			var b strings.Builder
			for _, ref := range refs {
				fmt.Fprintf(&b, "kafka: topic %s refuses lakewap's records: %s", ref.Topic, ref.Reason)
				if ref.Bytes > 0 {
					fmt.Fprintf(&b, " (a record of %d bytes; raise its max.message.bytes)", ref.Bytes)
				}
				b.WriteString("\n")
			}
			http.Error(w, strings.TrimSuffix(b.String(), "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// stalling lists the refusals of the topics whose records lakewap retries
// for ever, holding up a partition: results, changelog, dead letters. The
// lineage topic is best effort (its events are dropped and logged): a
// refusal there is no reason to stop lakeFS's hook calls reaching lakewap.
func (d *Daemon) stalling() []kafka.Refusal {
	k := d.cfg.Kafka
	return slices.DeleteFunc(d.refusals.Refusing(), func(r kafka.Refusal) bool {
		return r.Topic != k.ResultsTopic && r.Topic != k.ChangelogTopic && r.Topic != k.DeadLetterTopic
	})
}

// refusalCollector shows on /metrics what /readyz answers of topics that
// refuse lakewap's records (alert LakewapTopicRefusesRecords): a gauge for
// each topic whose records lakewap retries for ever, and the refused writes
// counted by topic and reason. The labels are bounded: lakewap's own
// topics, and the broker errors kafka.Refusals takes for refusals.
type refusalCollector struct{ d *Daemon }

var (
	refusingDesc = prometheus.NewDesc("lakewap_kafka_topic_refusing",
		"1 while a topic of lakewap's (results, changelog, dead letters) refuses its records (a refused write seen within the last minute; /readyz names the reason), else 0.",
		[]string{"topic"}, nil)
	refusedDesc = prometheus.NewDesc("lakewap_kafka_refused_writes_total",
		"Writes of lakewap's records a topic refused for a reason a retry does not change (too large with nothing smaller to write, not authorized, policy), by topic and broker reason.",
		[]string{"topic", "reason"}, nil)
)

func (c refusalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- refusingDesc
	ch <- refusedDesc
}

func (c refusalCollector) Collect(ch chan<- prometheus.Metric) {
	k := c.d.cfg.Kafka
	stalling := c.d.stalling()
	for _, topic := range slices.Compact(slices.Sorted(slices.Values([]string{k.ResultsTopic, k.ChangelogTopic, k.DeadLetterTopic}))) {
		if topic == "" {
			continue
		}
		v := 0.0
		if slices.ContainsFunc(stalling, func(r kafka.Refusal) bool { return r.Topic == topic }) {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(refusingDesc, prometheus.GaugeValue, v, topic)
	}
	for _, n := range c.d.refusals.Counts() {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(n.Writes), n.Topic, n.Reason)
	}
}

// readyFor is how long /readyz answers with one health check of lakeFS.
const readyFor = time.Second

// newLineage starts the OpenLineage emitter of lineage.url or
// lineage.kafka.topic (made or checked like the other topics): the jobs'
// tables are the datasets' suite tables, an assertion's column the column
// of a one-column check.
func newLineage(ctx context.Context, cfg *config.Config, kc *kafka.Client, log *slog.Logger, reg prometheus.Registerer) (*lineage.Emitter, error) {
	tables := map[string][]lineage.Table{}
	for name, ds := range cfg.Datasets {
		for _, t := range ds.Suite.Tables {
			cols := map[string]string{}
			for _, c := range ds.Suite.Checks {
				if c.Table == t.Name && c.Column != "" && len(c.Columns) == 0 {
					cols[c.ID()] = c.Column
				}
			}
			tables[name] = append(tables[name], lineage.Table{Name: t.Name, Path: t.Path, Columns: cols})
		}
	}
	var send func(context.Context, string, []byte) error
	closeWriter := func() {}
	if topic := cfg.Lineage.Kafka.Topic; topic != "" {
		k := cfg.Kafka
		spec := kafka.TopicSpec{Name: topic, Partitions: k.Partitions, ReplicationFactor: k.ReplicationFactor}
		check := kc.EnsureTopics
		if k.CreateTopics != nil && !*k.CreateTopics {
			check = kc.CheckTopics
		}
		if err := check(ctx, spec); err != nil {
			var missing *kafka.MissingTopicError
			if errors.As(err, &missing) {
				return nil, fmt.Errorf("lineage.kafka.topic: topic %q does not exist, and kafka.create_topics is false: create it, or let lakewap create it", topic)
			}
			return nil, fmt.Errorf("lineage.kafka.topic: %w", err)
		}
		w := kc.Writer(kafka.WriterConfig{Topic: topic, Attempts: 3})
		closeWriter = func() { _ = w.Close() }
		send = lineage.ToKafka(w)
	}
	return lineage.New(lineage.Options{URL: cfg.Lineage.URL, Send: send, MaxEventBytes: cfg.Lineage.MaxEventBytes,
		Namespace: cfg.Lineage.Namespace, Timeout: cfg.Lineage.Timeout.Std(),
		Tables: func(ds string) []lineage.Table { return tables[ds] }, Logger: log.With(slog.String("component", "lineage")),
		Registerer: reg, Closed: closeWriter})
}

// observeBoth calls a, if set, then b.
func observeBoth(a, b func(before, after pipeline.Run)) func(before, after pipeline.Run) {
	return func(before, after pipeline.Run) {
		if a != nil {
			a(before, after)
		}
		b(before, after)
	}
}

// mountRuns serves the status page (internal/status) unless http.runs is
// off. On loopback anyone local may read it; on any other address it takes
// the webhook's token, and without one it is not served.
func (d *Daemon) mountRuns(mux *http.ServeMux, addr net.Addr) error {
	if d.cfg.HTTP.Runs == "off" {
		return nil
	}
	var token string
	if tcp, ok := addr.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		t, err := d.cfg.HTTP.RunsPageToken()
		if err != nil {
			return err
		}
		if t == "" {
			d.log.Warn("/runs is not served: the listener is not on loopback and http.runs_token is not set " +
				"(the webhook's token does not open it: every writer's action file can read that one)")
			return nil
		}
		token = t
	}
	h := runsHandler(status.Options{Runs: d.runner.Runs, LakeFSUI: d.cfg.LakeFS.UIURL,
		ShowSamples: d.cfg.HTTP.RunsSamples, Token: token})
	if token == "" {
		h = loopbackHostOnly(h)
	}
	mux.Handle("GET "+status.Path, h)
	return nil
}

// loopbackHostOnly serves h only to requests addressed to localhost or a
// loopback address. A web page that a local user's browser opens reaches
// a loopback port too, and by DNS rebinding (its own name made to resolve
// to 127.0.0.1) reads the answer as its own origin's; such a request
// names the page's host, not the listener's. Every endpoint a loopback
// listener serves without a token has it (review 51: /metrics names every
// dataset, repository and target).
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, fmt.Sprintf("lakewap: %s on a loopback listener, without a token, answers only requests to localhost or a loopback address, not to host %q",
				schemas.Clip(r.URL.Path, 128), schemas.Clip(r.Host, 128)), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// PreMergePath is where the daemon's HTTP listener answers lakeFS's
// pre-merge webhook.
const PreMergePath = "/webhooks/lakefs/pre-merge"

// preMergeHandler is the webhook handler of the daemon's HTTP listener: the
// audit service guards and audits, from its cache of passing reports when
// it can.
func (d *Daemon) preMergeHandler() (http.Handler, error) {
	token, err := d.cfg.HTTP.Token()
	if err != nil {
		return nil, err
	}
	// Who lakeFS says makes lakewap's merges: a verified merge of theirs
	// is judged as lakewap's publish (its dataset's checks unexcused, its
	// batch time, the hook capacity kept for lakewap's publishes). Unknown,
	// no call is lakewap's own, this instance's publishes included.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	own, err := d.lake.Committer(ctx)
	if err != nil {
		d.log.Warn("cannot ask lakeFS who lakewap is: the pre-merge hook takes no call for lakewap's own publish until a restart; "+
			"its publishes' calls are judged as a person's merge (checks failing on the target already are excused, "+
			"the batch time is the call's, no reserved audit capacity)", "err", err)
	}
	// What a call names (any commit, any branch) is read with caches of
	// its own: every writer has the token, and a few thousand calls pushed
	// the runner's seals and merge-bases out of its caches.
	outside := d.lake.Outside()
	return audit.NewPreMergeHandler(audit.PreMergeOptions{
		Guards: d.audits, Runner: d.audits, Diff: auditsource.Source{Lake: outside}, Ancestry: auditsource.Source{Lake: outside}, Token: token,
		Merges: auditsource.Merges{Lake: outside}, OwnCommitter: own,
		Timeout:    d.cfg.HTTP.WebhookAuditTimeout.Std(),
		Logger:     d.log.With(slog.String("component", "premerge")),
		Registerer: d.reg,
	})
}

// failpointFromEnv arms the crash tests' failpoint: LAKEWAP_FAILPOINT=name
// makes the process kill itself with SIGKILL when the runner reaches name,
// the way a power cut or an OOM kill would stop it.
func failpointFromEnv(log *slog.Logger) func(string) {
	want := os.Getenv("LAKEWAP_FAILPOINT")
	if want == "" {
		return nil
	}
	log.Warn("failpoint armed: this process will SIGKILL itself", "failpoint", want)
	return func(name string) {
		if name == want {
			log.Warn("failpoint reached: SIGKILL", "failpoint", name)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}

// maxConns bounds the connections the HTTP server holds at once: each costs
// a goroutine, buffers and up to 64 KiB of header for its 5 s, and whoever
// reaches the port could open them without end (512 such headers are 32
// MiB). A connection past it first makes the server close its idle
// keep-alive connections, those that have sent nothing of a next request
// (else maxConns connections that each sent one
// request would lock every caller out for the idle timeout), then the
// connection that has waited longest for its client, the rest of its
// request header or of a body its handler reads, or to take an answer
// (else maxConns half-sent headers, opened again as the timeouts close
// them, or answers left unread, would keep every caller waiting), then
// waits until one closes.
const maxConns = 512

// headerGrace is how long a connection may wait for its client (header,
// body or answer) before a new connection, finding every slot taken, may close it:
// lakeFS, Prometheus and health checks send theirs at once; a slowloris
// must open a connection per slot every headerGrace to keep them all.
const headerGrace = 250 * time.Millisecond

// connLimiter is a listener that hands out at most cap(slots) connections
// at a time: Accept waits for one of them to close.
type connLimiter struct {
	net.Listener
	slots   chan struct{}
	blocked atomic.Int32 // Accepts waiting for a slot
	// full, if set, is called when every slot is taken, before Accept
	// waits: it may free some (shedIdle).
	full func()
	// grace is how long a connection may wait for its client before it
	// may be closed to make room (headerGrace).
	grace time.Duration
	now   func() time.Time
	// closed ends an Accept's wait for a slot when the listener is closed
	// (Shutdown waits for Serve, whatever its context, and Serve for
	// Accept).
	closed    chan struct{}
	closeOnce sync.Once
	// idled wakes an Accept waiting for a slot when a connection goes
	// idle (full may shed it): else it looked again only when the
	// slowest connection reached the grace.
	idled chan struct{}

	mu sync.Mutex
	// reading holds the connections waiting for their client, with since
	// when: for their first request's header (from Accept until the
	// handler starts), or for a body the handler reads (from its first
	// read until its end).
	reading map[*limitedConn]time.Time
	// writing holds the connections inside a write, with since when: a
	// write lasts only while the kernel's buffers are full, that is while
	// the client reads nothing of its answers.
	writing map[*limitedConn]time.Time
	// idle holds the keep-alive connections between requests that have
	// sent nothing of their next one: the ones shedIdle closes.
	idle map[*limitedConn]bool
}

// serveLimited makes srv hold at most n connections of ln at a time (the
// listener it returns is the one to serve): it tells the limiter which
// connections wait for their client, and closes a connection whose body
// the handler left unread.
func serveLimited(srv *http.Server, ln net.Listener, n int) *connLimiter {
	lim := limitConns(ln, n)
	lim.full = lim.shedIdle
	state := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if lc, ok := c.(*limitedConn); ok {
			lim.track(lc, s)
		}
		if state != nil {
			state(c, s)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, ok := r.Context().Value(connKey{}).(*limitedConn)
		if ok {
			lim.started(lc)
		}
		if r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		body := &bodyReads{ReadCloser: r.Body, lim: lim, conn: lc}
		r.Body = body
		h.ServeHTTP(w, r)
		if ok {
			lim.forget(lc)
		}
		if !body.ended {
			// The server would read the rest of a body the handler left (up
			// to 256 KiB, for ReadTimeout) before it answers or closes:
			// close at once instead.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
	return lim
}

// bodyReads counts its connection as waiting for its client from the
// body's first read until its end.
type bodyReads struct {
	io.ReadCloser
	lim     *connLimiter
	conn    *limitedConn
	started bool
	ended   bool
}

func (b *bodyReads) Read(p []byte) (int, error) {
	if !b.started && b.conn != nil {
		b.started = true
		b.lim.wait(b.conn)
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.ended {
		b.ended = true
		if b.conn != nil {
			b.lim.forget(b.conn)
		}
	}
	return n, err
}

// connKey is where a request's context holds its connection, for
// serveLimited's handler.
type connKey struct{}

func limitConns(ln net.Listener, n int) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, n), grace: headerGrace, now: time.Now,
		closed: make(chan struct{}), idled: make(chan struct{}, 1), reading: map[*limitedConn]time.Time{}, writing: map[*limitedConn]time.Time{},
		idle: map[*limitedConn]bool{}}
}

// Close closes the listener and ends a wait for a slot.
func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Accept takes the next connection, then a slot for it: when none is free
// it frees some (full), then closes the connection that has waited longest
// for its client past grace, else waits for a slot, for a connection to go
// idle or for that connection to reach grace, and looks again.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return l.hold(c), nil
		default:
		}
		if l.full != nil {
			l.full() // again on each look: connections may have gone idle since
			select {
			case l.slots <- struct{}{}:
				return l.hold(c), nil
			default:
			}
		}
		closed, wait := l.closeSlowest()
		if closed {
			continue
		}
		l.blocked.Add(1)
		timer := time.NewTimer(wait)
		select {
		case l.slots <- struct{}{}:
			timer.Stop()
			l.blocked.Add(-1)
			return l.hold(c), nil
		case <-timer.C:
		case <-l.idled:
			timer.Stop()
		case <-l.closed:
			timer.Stop()
			l.blocked.Add(-1)
			_ = c.Close()
			return nil, net.ErrClosed
		}
		l.blocked.Add(-1)
	}
}

// hold wraps c, which has a slot: it waits for its header from now.
func (l *connLimiter) hold(c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, lim: l}
	lc.release = sync.OnceFunc(func() {
		l.mu.Lock()
		lc.gone = true
		delete(l.reading, lc)
		delete(l.writing, lc)
		delete(l.idle, lc)
		l.mu.Unlock()
		<-l.slots
	})
	l.wait(lc)
	return lc
}

// closeSlowest closes the connection that has waited longest for its
// client (its header, its body, or to take an answer) if that is grace or
// longer; else it says how long until one will have, or, with none
// waiting, when to look again.
func (l *connLimiter) closeSlowest() (closed bool, wait time.Duration) {
	l.mu.Lock()
	var (
		slowest *limitedConn
		since   time.Time
	)
	for _, waiting := range []map[*limitedConn]time.Time{l.reading, l.writing} {
		for c, t := range waiting {
			if slowest == nil || t.Before(since) {
				slowest, since = c, t
			}
		}
	}
	l.mu.Unlock()
	if slowest == nil {
		return false, max(l.grace, 10*time.Millisecond)
	}
	if waited := l.now().Sub(since); waited < l.grace {
		return false, l.grace - waited
	}
	_ = slowest.Close()
	return true, 0
}

// track forgets a connection that went idle or away, and counts the
// first as idle (shedIdle's) until its next request begins to arrive
// (limitedConn.Read), or as waiting for its client if it has begun
// already (read ahead).
func (l *connLimiter) track(c *limitedConn, s http.ConnState) {
	switch s {
	case http.StateIdle:
		l.mu.Lock()
		delete(l.reading, c)
		begun := !c.next.IsZero()
		switch {
		case c.gone:
		case begun: // read ahead: its next request is under way
			l.reading[c] = c.next
		default:
			l.idle[c] = true
		}
		l.mu.Unlock()
		if begun {
			return
		}
		select {
		case l.idled <- struct{}{}:
		default: // a wake is pending already
		}
	case http.StateHijacked, http.StateClosed, http.StateActive:
		l.mu.Lock()
		delete(l.idle, c)
		if s != http.StateActive {
			delete(l.reading, c)
		}
		l.mu.Unlock()
	}
}

// wait notes that c waits for its client from now (unless it is closed).
func (l *connLimiter) wait(c *limitedConn) {
	l.mu.Lock()
	if !c.gone {
		l.reading[c] = l.now()
	}
	l.mu.Unlock()
}

// started notes that c's request header is in: it waits for its client
// no longer, and what it reads from now on (its body aside) is its next
// request's.
func (l *connLimiter) started(c *limitedConn) {
	l.mu.Lock()
	delete(l.reading, c)
	c.next = time.Time{}
	l.mu.Unlock()
}

func (l *connLimiter) forget(c *limitedConn) {
	l.mu.Lock()
	delete(l.reading, c)
	l.mu.Unlock()
}

// shedIdle closes the idle keep-alive connections (each gives its slot
// back as it closes). The server counts a keep-alive connection idle until
// the whole header of its next request is in, and http.Server's own
// closing of idle connections (SetKeepAlivesEnabled(false), used before)
// closed those too: a caller's next request (lakeFS's next hook call, a
// POST its client does not send again) was cut off with no answer if it had
// begun to arrive when a connection came in at the limit, which an
// attacker filling the slots made happen with each connection it opened.
// A connection whose next request has begun is not idle here: it waits for
// its client (closeSlowest's, after the grace).
func (l *connLimiter) shedIdle() {
	l.mu.Lock()
	idle := make([]*limitedConn, 0, len(l.idle))
	for c := range l.idle {
		idle = append(idle, c)
	}
	l.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
}

// waiting says whether an Accept waits for a connection to close.
func (l *connLimiter) waiting() bool { return l.blocked.Load() > 0 }

// limitedConn gives its slot back when it is closed, and tells its
// limiter while it is inside a write.
type limitedConn struct {
	net.Conn
	lim     *connLimiter
	release func()
	gone    bool // closed (under the limiter's mu)
	// next is when the first bytes of its next request were read ahead,
	// before the server called it idle; zero if none (under the
	// limiter's mu).
	next time.Time
}

// Write counts c as waiting for its client while the write lasts: one
// that does not read its answers (a single large one, or small ones
// pipelined) blocks the server's write, in a request being served, for the
// response timeout (a step's + 30 s), and maxConns of them locked every
// caller out for that long.
func (c *limitedConn) Write(p []byte) (int, error) {
	c.lim.mu.Lock()
	if !c.gone {
		c.lim.writing[c] = c.lim.now()
	}
	c.lim.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.lim.mu.Lock()
	delete(c.lim.writing, c)
	c.lim.mu.Unlock()
	return n, err
}

// Read notes that the next request of a keep-alive connection has begun
// to arrive: from now it waits for its client, as a new connection does,
// instead of being idle. Bytes read while the connection waits for
// nothing (neither idle nor reading: its request is in, header and body)
// are the next request's, read ahead by the server while it answers; the
// connection waits for its client from then on once the server calls it
// idle (track), since the server sends the answer before it does.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lim.mu.Lock()
		_, reading := c.lim.reading[c]
		switch {
		case c.gone || reading:
		case c.lim.idle[c]:
			delete(c.lim.idle, c)
			c.lim.reading[c] = c.lim.now()
		case c.next.IsZero():
			c.next = c.lim.now()
		}
		c.lim.mu.Unlock()
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// newHTTPServer bounds every phase of a request, so slow or idle clients
// (a slowloris sending a header byte by byte, or nothing) cannot hold
// connections forever. Writing may take as long as a pre-merge hook's audit
// (a step), plus a margin.
func newHTTPServer(h http.Handler, step time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: step + 30*time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// ReadyURL is the /readyz URL of a daemon listening on listen, to ask from
// this host: an unspecified host (":9090", "0.0.0.0:9090", "[::]:9090")
// becomes 127.0.0.1 (lakewap ready, the image's health check).
func ReadyURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen + "/readyz"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}

// maxReadCalls bounds the calls of /runs, and apart those of /metrics,
// answered at once: each builds its whole answer (a /runs page is up to 4
// MiB, some 12 MiB of heap), and anyone who reaches the port may call them
// (/runs on loopback). Before, 64 callers reading /runs over and over took
// the heap to 586 MiB and hook calls to 1.6 s (3 s at most), and 500 that
// read nothing, 4 GiB and 16 s. A call past it is answered 503 with
// Retry-After.
const maxReadCalls = 4

// readWriteTimeout bounds how long a /runs or /metrics answer may take to
// be read: a caller reading nothing gives its place back then, not after
// the server's write timeout (a step's, minutes).
const readWriteTimeout = 30 * time.Second

// runsHandler is /runs, maxReadCalls at a time.
func runsHandler(o status.Options) http.Handler { return fewAtATime(status.Path, status.Handler(o)) }

// metricsHandler is /metrics, maxReadCalls at a time.
func metricsHandler(reg prometheus.Gatherer) http.Handler {
	return fewAtATime("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}

// fewAtATime serves h at most maxReadCalls calls at a time and answers
// the others 503 at once: they wait in no queue, the caller tries again.
func fewAtATime(path string, h http.Handler) http.Handler {
	slots := make(chan struct{}, maxReadCalls)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("lakewap: %d calls of %s are being answered; try again", maxReadCalls, path),
				http.StatusServiceUnavailable)
			return
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(readWriteTimeout))
		h.ServeHTTP(w, r)
	})
}

// registerSigningKeys exports lakewap_signing_key_unset, 1 for each key of
// config.SigningKeys the config leaves unset where its absence lets records
// be forged (the start-up warnings), else 0: an alert can watch it where
// nobody reads the log.
func registerSigningKeys(reg prometheus.Registerer, cfg *config.Config) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_signing_key_unset",
		Help: "1 when a signing key is not set and what it would sign can be forged (runner.state_key_file: run records in the changelog; audit.attestation_key: publishes' attestations, with incremental audits on; operators: operators' requests), else 0."},
		[]string{"key"})
	if err := reg.Register(g); err != nil {
		return err
	}
	for _, key := range config.SigningKeys {
		v := 0.0
		if cfg.Unset(key) {
			v = 1
		}
		g.WithLabelValues(key).Set(v)
	}
	return nil
}
