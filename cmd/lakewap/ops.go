package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

// Operator commands. lakewap retry, cancel and revert change nothing
// themselves: each sends a request to the input topic, keyed by the batch
// id like every input, and the daemon that owns the batch's partition
// carries it out through its state machine (pipeline.Transition), so no
// command writes the state store behind the daemon. The command then waits
// on the results topic for the event that answers its request (the
// wap.request_id header) and prints it.

// Exit codes of the operator commands.
const (
	exitDone      = 0 // the daemon did what was asked
	exitNotDone   = 1 // the daemon answered: refused, or the retry did not publish
	exitUsage     = 2
	exitNoAnswer  = 3 // no daemon answered within -timeout
	defaultAnswer = 5 * time.Minute
)

// operator is who asks: -by, else $USER.
func operator(by string) string { return cmp.Or(by, os.Getenv("USER"), "unknown") }

// requestFlags are the flags every operator command takes.
type requestFlags struct {
	config, batch, dataset, by, reason string
	timeout                            time.Duration
}

func (f *requestFlags) register(fs *flag.FlagSet, batchHelp, reasonHelp string) {
	fs.StringVar(&f.config, "config", "lakewap.yaml", "config file")
	fs.StringVar(&f.batch, "batch", "", batchHelp)
	fs.StringVar(&f.dataset, "dataset", "", "dataset of the batch (default: the only one in the config, else from the state store)")
	fs.StringVar(&f.by, "by", "", "who asks (default $USER)")
	if reasonHelp != "" {
		fs.StringVar(&f.reason, "reason", "", reasonHelp)
	}
	fs.DurationVar(&f.timeout, "timeout", defaultAnswer, "how long to wait for the daemon's answer")
}

// operatorCommands builds each command's request.
var operatorCommands = map[string]struct {
	batchHelp, reasonHelp string
	build                 func(f requestFlags, id, dataset string, now time.Time) schemas.Event
}{
	"retry": {"batch id of a failed run, or an aborted one whose branch was kept (required)", "",
		func(f requestFlags, id, dataset string, now time.Time) schemas.Event {
			return schemas.RetryRequested{RequestID: id, BatchID: f.batch, Dataset: dataset, RequestedBy: operator(f.by), OccurredAt: now}
		}},
	"cancel": {"batch id to cancel (required)", "why, recorded in BatchAborted",
		func(f requestFlags, id, dataset string, now time.Time) schemas.Event {
			return schemas.BatchCancelled{RequestID: id, BatchID: f.batch, Dataset: dataset, Reason: f.reason, RequestedBy: operator(f.by), OccurredAt: now}
		}},
	"revert": {"batch id to revert (required)", "why, recorded in the revert commit and the event (required)",
		func(f requestFlags, id, dataset string, now time.Time) schemas.Event {
			return schemas.RevertRequested{RequestID: id, BatchID: f.batch, Dataset: dataset, Reason: f.reason, RequestedBy: operator(f.by), OccurredAt: now}
		}},
}

// cmdOperator runs lakewap retry, cancel or revert: it sends the request
// and prints the daemon's answer. cfg, when not nil, is used instead of
// the -config file (tests).
func cmdOperator(ctx context.Context, command string, args []string, stdout, stderr io.Writer, cfg *config.Config) int {
	c := operatorCommands[command]
	fs := newFlagSet(command)
	var f requestFlags
	f.register(fs, c.batchHelp, c.reasonHelp)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code // 0 after -h, else exitUsage
	}
	switch {
	case command == "revert" && (f.batch == "" || strings.TrimSpace(f.reason) == ""):
		fmt.Fprintln(stderr, "lakewap revert: -batch and -reason are required")
		return exitUsage
	case f.batch == "":
		fmt.Fprintf(stderr, "lakewap %s: -batch is required\n", command)
		return exitUsage
	}
	if cfg == nil {
		var ok bool
		if cfg, ok = loadConfig(f.config, stderr); !ok {
			return exitUsage
		}
	}
	t, err := opclient.Of(cfg, "")
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	defer t.Close()
	dataset, err := datasetOfBatch(ctx, cfg, f.batch, f.dataset)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitNotDone
	}
	id := newRequestID()
	req := c.build(f, id, dataset, time.Now().UTC().Truncate(time.Millisecond))
	// What the daemon would dead-letter is refused here, not waited for.
	if err := schemas.Validate(req, func(d string) bool { _, ok := cfg.Datasets[d]; return ok }, time.Now()); err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	ans, err := t.Ask(ctx, cfg.Kafka, req, id, f.timeout, func(sent kafka.Message) {
		fmt.Fprintf(stdout, "%s %s sent to %s (partition %d, offset %d); waiting up to %s for the daemon's answer\n",
			req.EventType(), id, cfg.Kafka.InputTopic, sent.Partition, sent.Offset, f.timeout)
	})
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		if errors.Is(err, opclient.ErrNoAnswer) {
			return exitNoAnswer
		}
		return exitNotDone
	}
	if done := printAnswer(stdout, req, ans); !done {
		return exitNotDone
	}
	return exitDone
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req-" + hex.EncodeToString(b)
}

// printAnswer prints what the daemon answered, then the event as a JSON
// line; it reports whether the request was carried out. The answer's texts
// come from events, lakeFS and audited data: both reach the terminal
// escaped (runs.Printable, runs.JSONTerminalSafe).
func printAnswer(w io.Writer, req, ans schemas.Event) bool {
	say := func(format string, args ...any) { fmt.Fprintln(w, runs.Printable(fmt.Sprintf(format, args...))) }
	done := false
	switch e := ans.(type) {
	case schemas.BatchPublished:
		printChecks(w, e.Report)
		say("published batch %s (%s) on %s/%s as %s", e.BatchID, e.Dataset, e.Repository, e.TargetRef, runs.Short(e.CommitID))
		done = true
	case schemas.BatchAborted:
		if e.Report != nil {
			printChecks(w, *e.Report)
		}
		kept := "deleted"
		if e.BranchKept {
			kept = "kept"
		}
		say("batch %s (%s) is aborted (%s): %s; branch %s %s", e.BatchID, e.Dataset, e.Reason, e.Detail, e.Branch, kept)
		_, cancel := req.(schemas.BatchCancelled)
		done = cancel && e.Reason == schemas.ReasonCancelled
	case schemas.BatchFailed:
		say("batch %s (%s) failed in %s after %d attempt(s): %s", e.BatchID, e.Dataset, e.State, e.Attempts, e.Error)
	case schemas.BatchReverted:
		say("reverted batch %s (%s) on %s/%s: publish commit %s undone by %s (by %s: %s)",
			e.BatchID, e.Dataset, e.Repository, e.TargetRef, runs.Short(e.PublishedCommitID), runs.Short(e.CommitID), e.RevertedBy, e.Reason)
		done = true
	case schemas.RequestRefused:
		say("refused (%s): %s", e.Reason, e.Detail)
	}
	if line, err := schemas.ToJSON(ans); err == nil {
		fmt.Fprintf(w, "%s %s\n", ans.EventType(), runs.JSONTerminalSafe(line))
	}
	return done
}

// datasetOfBatch names the dataset a batch belongs to: the one given, the
// only one configured, or the one its run in the state store has.
func datasetOfBatch(ctx context.Context, cfg *config.Config, batch, dataset string) (string, error) {
	if dataset == "" && len(cfg.Datasets) == 1 {
		for n := range cfg.Datasets {
			dataset = n
		}
	}
	if dataset == "" {
		store, err := runs.Open(cfg.Kafka)
		if err != nil {
			return "", err
		}
		r, err := store.Find(ctx, batch, "")
		if err != nil {
			return "", fmt.Errorf("%w (or name the dataset with -dataset)", err)
		}
		dataset = r.Dataset
	}
	if _, ok := cfg.Datasets[dataset]; !ok {
		return "", fmt.Errorf("dataset %q is not in the config", dataset)
	}
	return dataset, nil
}

func printChecks(w io.Writer, rep schemas.AuditReport) {
	for _, c := range rep.Checks {
		fmt.Fprintln(w, runs.Printable(fmt.Sprintf("  %-5s %s (%s on %s): observed %s, threshold %s", c.Status, c.Name, c.Kind, c.Table,
			runs.Dash(c.Observed), runs.Dash(c.Threshold))))
	}
	pass, fail, warn := rep.Counts()
	fmt.Fprintf(w, "audit of %s: passed=%d failed=%d warned=%d\n", runs.Short(rep.Ref), pass, fail, warn)
}
