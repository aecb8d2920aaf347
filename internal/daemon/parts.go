package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// The parts the daemon shares with the one-shot commands (lakewap janitor,
// lakewap audit): built here once, so a command does what the daemon does.

// MaxLogValueBytes bounds each value of a log line (a string, an error's
// text, anything else as it prints).
const MaxLogValueBytes = 4 << 10

// NewLogger is the log of format (text, json) from level (debug, info,
// warn, error; else info) on w.
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: clipAttr}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(terminalSafe{w}, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// terminalSafe writes JSON log lines with the C1 controls and bidi
// overrides that encoding/json leaves raw escaped (runs.JSONTerminalSafe):
// a line quotes writers' data (an object path in an audit's error) and
// reaches an operator's terminal. The text format escapes them itself.
// slog's handler writes each line in one Write.
type terminalSafe struct{ w io.Writer }

func (t terminalSafe) Write(p []byte) (int, error) {
	if _, err := t.w.Write(runs.JSONTerminalSafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clipAttr clips a's value to MaxLogValueBytes as text, saying how much
// was cut: what is logged may quote data (an error of DuckDB or lakeFS, a
// key). Numbers, times and the like are left as they are.
func clipAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if len(v.String()) > MaxLogValueBytes {
			a.Value = slog.StringValue(schemas.Clip(v.String(), MaxLogValueBytes))
		}
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		default:
			text = fmt.Sprint(x) // a map or slice stays as the handler writes it unless over the budget
		}
		if len(text) > MaxLogValueBytes {
			a.Value = slog.StringValue(schemas.Clip(text, MaxLogValueBytes))
		}
	}
	return a
}

// Lake is the lakeFS adapter of cfg, making its calls through hc (nil: the
// default client).
func Lake(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer, wrap func(http.RoundTripper) http.RoundTripper) (*lakefs.Client, error) {
	secret, err := config.ReadSecret(cfg.LakeFS.SecretAccessKey, cfg.LakeFS.SecretAccessKeyFile)
	if err != nil {
		return nil, fmt.Errorf("lakefs.secret_access_key_file: %w", err)
	}
	lake, err := lakefs.New(lakefs.Config{Endpoint: cfg.LakeFS.Endpoint, AccessKeyID: cfg.LakeFS.AccessKeyID,
		SecretAccessKey: secret, Timeout: cfg.LakeFS.Timeout.Std(), Logger: log, Registerer: reg, Wrap: wrap,
		MaxListEntries: cfg.Audit.MaxListObjects})
	if err != nil {
		return nil, fmt.Errorf("lakefs: %w", err)
	}
	return lake, nil
}

// NewJanitor builds the janitor of cfg's datasets over lake and the run
// store, read as the runner restores it (runs.OpenChecked: a record the
// runner would set aside is never acted on); reg (may be nil) gets its
// deletion counter.
func NewJanitor(cfg *config.Config, lake *lakefs.Client, log *slog.Logger, reg prometheus.Registerer) (*janitor.Janitor, error) {
	store, err := runs.OpenChecked(cfg, log)
	if err != nil {
		return nil, err
	}
	ds := cfg.JanitorDatasets()
	// The heads it reads are of branches anyone with a writer's key can
	// make: read with the outside view's caches, not the runner's.
	jc := janitor.Config{Lake: lake.Outside(), Runs: store.Runs, Datasets: ds, Release: store.Close,
		AbandonedAfter: cfg.Janitor.AbandonedAfter.Std(), Logger: log, Own: lake.Committer,
		MaxRunAge: cfg.MaxRunAge(), Cancel: func(ctx context.Context, run pipeline.Run, reason string) error {
			return CancelRun(ctx, cfg, store, run, reason)
		}}
	jc.Registerer = reg
	j, err := janitor.New(jc)
	if err != nil {
		store.Close()
	}
	return j, err
}

// CancelRun asks the daemon to cancel run: a BatchCancelled on the input
// partition that holds the run (the changelog partition is the input
// partition), so the runner aborts it the way it aborts any cancelled batch.
// The partition is the one store holds the run in (the janitor's store is
// checked: only a run the runner would restore is found).
func CancelRun(ctx context.Context, cfg *config.Config, store *runs.Store, run pipeline.Run, reason string) error {
	sr, err := store.Find(ctx, run.BatchID, run.Dataset)
	if err != nil {
		return err
	}
	t, err := opclient.Of(cfg, "")
	if err != nil {
		return err
	}
	defer t.Close()
	ev := schemas.BatchCancelled{BatchID: run.BatchID, Dataset: run.Dataset, Reason: reason, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	_, err = t.Send(ctx, cfg.Kafka.InputTopic, ev, sr.Partition)
	return err
}
