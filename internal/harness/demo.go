package harness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// StartFunc starts lakewap's daemon on cfg (the demo's), logging to log,
// its console notifier writing to console and every persisted run change
// passed to observe; run runs it until its context ends.
type StartFunc func(ctx context.Context, cfg *config.Config, log *slog.Logger, console io.Writer,
	observe func(before, after pipeline.Run)) (run func(context.Context) error, err error)

type demo struct {
	out   io.Writer
	mu    sync.Mutex
	start map[string]time.Time
}

func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format, args...)
}

// observe prints the timeline: every state change with the time since the
// batch landed.
func (d *demo) observe(before, after pipeline.Run) {
	if before.State == after.State || after.State == "" {
		return
	}
	d.mu.Lock()
	t0, ok := d.start[after.BatchID]
	d.mu.Unlock()
	el := "      "
	if ok {
		el = fmt.Sprintf("+%4.2fs", time.Since(t0).Seconds())
	}
	from := cmp.Or(string(before.State), "(new)")
	extra := ""
	switch after.State {
	case pipeline.StateLanded:
		extra = "run persisted to wap.runs; creating its branch"
	case pipeline.StateAwaitingWrites:
		extra = "branch " + after.Branch + " created from " + after.Source
	case pipeline.StateAuditing:
		extra = "all expected writes complete; sealing the branch and auditing"
	case pipeline.StatePublishing:
		extra = "every error-severity check passed; merging sealed commit " + runs.Short(after.SealedCommit)
	case pipeline.StatePublished:
		extra = "merged into " + after.Target + " as " + runs.Short(after.CommitID)
	case pipeline.StateAborted:
		extra = after.Reason + ": " + after.Detail + "; " + after.Target + " untouched"
	case pipeline.StateFailed:
		extra = after.Detail
	}
	d.printf("  %s  %-15s → %-15s %s\n", el, from, after.State, extra)
	if after.Report != nil && before.Report == nil {
		d.printReport(*after.Report)
	}
}

func (d *demo) printReport(r schemas.AuditReport) {
	d.printf("           audit of %s (%d ms):\n", runs.Short(r.Ref), r.DurationMs)
	for _, c := range r.Checks {
		mark := map[string]string{schemas.StatusPass: "✓", schemas.StatusFail: "✗", schemas.StatusWarn: "!", schemas.StatusError: "✗"}[c.Status]
		d.printf("             %s %-22s %-5s observed %s (threshold %s)\n", mark, c.Name, c.Status, c.Observed, c.Threshold)
		for _, row := range c.SampleRows[:min(len(c.SampleRows), 3)] {
			d.printf("                 sample: %s\n", row)
		}
	}
}

// prefixWriter indents what the console notifier writes.
type prefixWriter struct {
	d      *demo
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	p.d.printf("%s%s\n", p.prefix, strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n"+p.prefix))
	return len(b), nil
}

// Demo shows the incident lakewap exists to prevent: a nightly billing load
// is published, the next one carries NULL billing ids from an upstream
// change and is stopped before anyone reading main sees it. It starts an
// embedded stack, the daemon (through start) and plays upstream and writer.
func Demo(ctx context.Context, stdout, stderr io.Writer, o DemoOptions, start StartFunc) error {
	d := &demo{out: stdout, start: map[string]time.Time{}}
	began := time.Now()
	d.printf("lakewap demo: Write-Audit-Publish on lakeFS, driven by Kafka events\n\n")
	progress := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d.printf("Starting the embedded stack (in-process Kafka broker, real lakeFS server as a child process)...\n")
	tmp, err := os.MkdirTemp("", "lakewap-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// ACL: the demo's lakewap is a lakeFS user of group Writers, not the
	// admin, as docs/trust-model.md advises (about 20 ms more at start).
	stack, err := devstack.Start(ctx, devstack.Options{WorkDir: tmp, Repository: "lake", Logger: progress,
		Topics: StackTopics(), ACL: true})
	if err != nil {
		return fmt.Errorf("embedded stack: %w", err)
	}
	defer stack.Close()
	d.printf("  Kafka   %s   topics wap.events, wap.results, wap.dlq, wap.runs (compacted)\n", strings.Join(stack.KafkaBrokers, ","))
	d.printf("  lakeFS  %s   repository %q, branch main\n\n", stack.LakeFSEndpoint, stack.Repository)

	cfg := DemoConfig(stack, tmp)
	cfg.Notify.Console = true
	cfg.Notify.Routes = []config.Route{{Sink: "console", On: []string{schemas.StateAwaitingWrites, schemas.StatePublished, schemas.StateAborted, schemas.StateFailed}}}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	ds := cfg.Datasets["billing"]
	d.printf("Dataset billing → table billing_fact at gold/billing_fact/ (Parquet), audited by:\n")
	for _, c := range ds.Checks {
		d.printf("  - %-22s %-16s severity %s\n", c.Name, c.Kind, cmp.Or(c.Severity, "error"))
	}
	d.printf("\n")

	log := slog.New(slog.DiscardHandler)
	if o.Verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	dctx, stopDaemon := context.WithCancel(ctx)
	run, err := start(dctx, cfg, log, prefixWriter{d, "           slack │ "}, d.observe)
	if err != nil {
		stopDaemon()
		return err
	}
	daemonDone := make(chan error, 1)
	go func() { daemonDone <- run(dctx) }()
	defer func() {
		stopDaemon()
		<-daemonDone
	}()

	env, err := New(ctx, stack, cfg, tmp)
	if err != nil {
		return err
	}
	defer env.Close()

	batches := []struct {
		id, title, query, want string
	}{
		{"2026-11-29T02", "the nightly billing load", GoodBillingRows, schemas.TypeBatchPublished},
		{"2026-11-29T03", "an upstream schema change now emits NULL billing_id for refunds", BadBillingRows, schemas.TypeBatchAborted},
	}
	var published schemas.BatchPublished
	var aborted schemas.BatchAborted
	for i, b := range batches {
		d.printf("── Batch %d: %s (%s)\n", i+1, b.id, b.title)
		bctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		ev, err := playBatch(bctx, d, env, b.id, b.query)
		cancel()
		if err != nil {
			return err
		}
		if ev.EventType() != b.want {
			return fmt.Errorf("batch %s ended with %s, expected %s", b.id, ev.EventType(), b.want)
		}
		switch e := ev.(type) {
		case schemas.BatchPublished:
			published = e
		case schemas.BatchAborted:
			aborted = e
		}
		d.printf("\n")
	}

	// Where the data is now, read back through lakeFS like any reader of main.
	mainRows, err := env.CountRows(ctx, "main", "gold/billing_fact/", "")
	if err != nil {
		return err
	}
	nulls, err := env.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL")
	if err != nil {
		return err
	}
	branchRows, err := env.CountRows(ctx, aborted.Branch, "gold/billing_fact/", "billing_id IS NULL")
	if err != nil {
		return err
	}
	head, err := env.Lake.GetCommit(ctx, stack.Repository, "main")
	if err != nil {
		return err
	}
	d.printf("Where the data is now:\n")
	d.printf("  main @ %s   %d billing_fact rows, %d with NULL billing_id (batch %s only; published as %s)\n",
		runs.Short(head.ID), mainRows, nulls, published.BatchID, runs.Short(published.CommitID))
	d.printf("  %s   kept for inspection: %d rows with NULL billing_id never reached main\n", aborted.Branch, branchRows)
	if !o.Keep {
		d.printf("    inspect: lakewap demo --keep leaves the stack running to look at it with lakectl and lakewap\n")
	}
	d.printf("\nDone in %.1fs. Every state above was persisted to the wap.runs changelog before its Kafka offset was committed.\n", time.Since(began).Seconds())
	if mainRows == 0 || nulls != 0 || branchRows == 0 {
		return fmt.Errorf("unexpected data: main rows %d, nulls on main %d, nulls on aborted branch %d", mainRows, nulls, branchRows)
	}
	if !o.Keep {
		return nil
	}
	path := cmp.Or(o.ConfigPath, filepath.Join(tmp, "lakewap.yaml"))
	if err := writeKeptConfig(path, cfg); err != nil {
		return err
	}
	d.printf("\nThe stack keeps running (lakeFS %s, Kafka %s) with lakewap's daemon on it.\n", stack.LakeFSEndpoint, strings.Join(stack.KafkaBrokers, ","))
	d.printf("config: %s\n", path)
	d.printf("  export LAKECTL_SERVER_ENDPOINT_URL=%s LAKECTL_CREDENTIALS_ACCESS_KEY_ID=%s LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY=%s\n",
		stack.LakeFSEndpoint, stack.AccessKeyID, stack.SecretAccessKey)
	d.printf("  lakectl fs ls lakefs://%s/%s/gold/billing_fact/\n", stack.Repository, aborted.Branch)
	d.printf("  lakewap audit -config %s -dataset billing -ref %s\n", path, aborted.Branch)
	d.printf("  lakewap runs -config %s\n", path)
	d.printf("  lakewap tail -config %s -from-beginning\n", path)
	d.printf("Press Ctrl-C to stop the stack.\n")
	<-ctx.Done()
	d.printf("Stopping the stack.\n")
	return nil
}

// DemoOptions are lakewap demo's flags.
type DemoOptions struct {
	Verbose bool // show lakewap's own logs
	// Keep leaves the stack and the daemon running after the story, with
	// a config for them at ConfigPath (default: in the demo's directory),
	// until ctx ends.
	Keep       bool
	ConfigPath string
}

// writeKeptConfig writes the demo's config for the commands run against
// the kept stack. It holds the stack's lakeFS keys: only the user reads it.
func writeKeptConfig(path string, cfg *config.Config) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	return nil
}

// playBatch acts as upstream and writer for one batch and returns its
// final result event.
func playBatch(ctx context.Context, d *demo, env *Env, batch, query string) (schemas.Event, error) {
	d.mu.Lock()
	d.start[batch] = time.Now()
	d.mu.Unlock()
	landed := schemas.BatchLanded{BatchID: batch, Dataset: "billing", SourceRef: "main",
		ExpectedWrites: []string{"billing_fact"}, Producer: "billing-ingest", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	d.printf("  upstream  → BatchLanded on wap.events: expects write billing_fact\n")
	if err := env.Produce(ctx, landed); err != nil {
		return nil, err
	}
	ev, err := env.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	if err != nil {
		return nil, err
	}
	ready := ev.(schemas.BranchReady)
	d.printf("  writer    ← BranchReady: write to %s\n", ready.LakeFSURI)
	path := fmt.Sprintf("gold/billing_fact/batch=%s/part-0000.parquet", batch)
	if err := env.WriteParquet(ctx, ready.Branch, path, query); err != nil {
		return nil, err
	}
	d.printf("  writer    → wrote %s through lakeFS; WriteComplete on wap.events\n", path)
	wc := schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := env.Produce(ctx, wc); err != nil {
		return nil, err
	}
	return env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
}

// GoodBillingRows and BadBillingRows are the demo's data: 1,000 invoices; the bad load has NULL billing ids on
// every refund row (an upstream join that stopped matching).
const GoodBillingRows = `SELECT 'INV-' || lpad(i::VARCHAR, 7, '0') AS billing_id, 'CUST-' || (i % 97)::VARCHAR AS customer_id,
  (100 + i * 37 % 50000)::BIGINT AS amount_cents, ['EUR','USD','GBP'][1 + i % 3] AS currency,
  TIMESTAMP '2026-11-29 02:00:00' + to_seconds(i) AS billed_at
FROM range(1000) t(i)`

const BadBillingRows = `SELECT CASE WHEN i % 25 = 0 THEN NULL ELSE 'INV-' || lpad((100000 + i)::VARCHAR, 7, '0') END AS billing_id,
  'CUST-' || (i % 97)::VARCHAR AS customer_id,
  (100 + i * 37 % 50000)::BIGINT AS amount_cents, ['EUR','USD','GBP'][1 + i % 3] AS currency,
  TIMESTAMP '2026-11-29 03:00:00' + to_seconds(i) AS billed_at
FROM range(1000) t(i)`

// Prepare builds what the embedded stack needs (the lakeFS server and
// lakectl from the lakeFS Go module), logging to stderr, and prints where
// they are.
func Prepare(ctx context.Context, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	server, err := devstack.LakeFSBinaryPath(ctx, log)
	if err != nil {
		return fmt.Errorf("lakeFS server: %w", err)
	}
	ctl, err := devstack.LakectlBinaryPath(ctx, log)
	if err != nil {
		return fmt.Errorf("lakectl: %w", err)
	}
	acl, err := devstack.ACLBinaryPath(ctx, log)
	if err != nil {
		return fmt.Errorf("lakeFS ACL server: %w", err)
	}
	fmt.Fprintf(stdout, "lakeFS server: %s\nlakectl:       %s\nACL server:    %s\n", server, ctl, acl)
	return nil
}
