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

func operator(by string) string {
	if by != "" {
		return by
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

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
	t, err := targetOf(cfg, "")
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	defer t.close()
	dataset, _, err := datasetOfBatch(ctx, cfg, f.batch, f.dataset)
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
	ans, err := askDaemon(ctx, t, cfg.Kafka, req, id, f.timeout, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		if errors.Is(err, errNoAnswer) {
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

var errNoAnswer = errors.New("no lakewap daemon answered")

// askDaemon sends req to the input topic and returns the first result
// event that answers it. The results topic is read from the ends it had
// before the request was sent, so no earlier event is taken for the answer.
func askDaemon(ctx context.Context, t *kafkaTarget, k config.Kafka, req schemas.Event, id string, timeout time.Duration, w io.Writer) (schemas.Event, error) {
	_, ends, err := offsets(ctx, t, k.ResultsTopic)
	if err != nil {
		return nil, err
	}
	sent, err := sendEvent(ctx, t, k.InputTopic, req, -1)
	if err != nil {
		return nil, fmt.Errorf("request not sent: %w", err)
	}
	fmt.Fprintf(w, "%s %s sent to %s (partition %d, offset %d); waiting up to %s for the daemon's answer\n",
		req.EventType(), id, k.InputTopic, sent.Partition, sent.Offset, timeout)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ans, err := awaitAnswer(wctx, t, k.ResultsTopic, ends, req.Batch(), id)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w request %s within %s. The request stays on %s (partition %d, offset %d): the daemon that owns that partition (consumer group %s) carries it out when it runs; see lakewap runs -batch %s",
			errNoAnswer, id, timeout, k.InputTopic, sent.Partition, sent.Offset, k.GroupID, req.Batch())
	}
	return ans, err
}

// sendEvent writes req as upstream writes inputs: key = batch id, type
// and batch id in headers, acknowledged by every in-sync replica; to the
// partition of its key, or to partition when that is not negative. It
// returns the message as written (with its partition and offset).
func sendEvent(ctx context.Context, t *kafkaTarget, topic string, req schemas.Event, partition int) (kafka.Message, error) {
	value, err := t.codec.Encode(ctx, topic, req)
	if err != nil {
		return kafka.Message{}, err
	}
	msg := kafka.Message{Key: []byte(req.Batch()), Value: value}
	for k, v := range schemas.Headers(req) {
		msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	var balancer kafka.Balancer = &kafka.Murmur2Balancer{}
	if partition >= 0 {
		balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return partition })
	}
	done := make(chan kafka.Message, 1)
	wr := &kafka.Writer{Addr: kafka.TCP(t.brokers...), Topic: topic, Balancer: balancer,
		RequiredAcks: kafka.RequireAll, BatchSize: 1, Transport: t.transport,
		Completion: func(msgs []kafka.Message, err error) {
			if err == nil && len(msgs) > 0 {
				done <- msgs[len(msgs)-1]
			}
		}}
	defer wr.Close()
	if err := wr.WriteMessages(ctx, msg); err != nil {
		return kafka.Message{}, err
	}
	select {
	case m := <-done:
		return m, nil
	default:
		return msg, nil
	}
}

// answers are the event types that end an operator's request.
var answers = map[string]bool{schemas.TypeBatchPublished: true, schemas.TypeBatchAborted: true, schemas.TypeBatchFailed: true,
	schemas.TypeBatchReverted: true, schemas.TypeRequestRefused: true}

// awaitAnswer reads every partition of topic from its offset in from until
// a message of batch carries request in its wap.request_id header.
func awaitAnswer(ctx context.Context, t *kafkaTarget, topic string, from map[int]int64, batch, request string) (schemas.Event, error) {
	var found schemas.Event
	err := readPartitions(ctx, t, topic, from, nil, func(m kafka.Message) bool {
		id, _ := headerValue(m.Headers, schemas.HeaderRequestID)
		typ, _ := headerValue(m.Headers, schemas.HeaderEventType)
		if id != request || string(m.Key) != batch || !answers[typ] {
			return false // another batch's, another request's, or on the way (BranchReady of a retried branch)
		}
		ev, err := t.codec.Decode(ctx, m.Value)
		if err != nil {
			return false
		}
		found = ev
		return true
	})
	if found != nil {
		return found, nil
	}
	return nil, cmp.Or(err, ctx.Err())
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
func datasetOfBatch(ctx context.Context, cfg *config.Config, batch, dataset string) (string, config.Dataset, error) {
	if dataset == "" && len(cfg.Datasets) == 1 {
		for n := range cfg.Datasets {
			dataset = n
		}
	}
	if dataset == "" {
		store, err := runs.Open(cfg.Kafka)
		if err != nil {
			return "", config.Dataset{}, err
		}
		r, err := store.Find(ctx, batch, "")
		if err != nil {
			return "", config.Dataset{}, fmt.Errorf("%w (or name the dataset with -dataset)", err)
		}
		dataset = r.Dataset
	}
	ds, ok := cfg.Datasets[dataset]
	if !ok {
		return "", config.Dataset{}, fmt.Errorf("dataset %q is not in the config", dataset)
	}
	return dataset, ds, nil
}

func printChecks(w io.Writer, rep schemas.AuditReport) {
	for _, c := range rep.Checks {
		fmt.Fprintln(w, runs.Printable(fmt.Sprintf("  %-5s %s (%s on %s): observed %s, threshold %s", c.Status, c.Name, c.Kind, c.Table,
			runs.Dash(c.Observed), runs.Dash(c.Threshold))))
	}
	pass, fail, warn := rep.Counts()
	fmt.Fprintf(w, "audit of %s: passed=%d failed=%d warned=%d\n", runs.Short(rep.Ref), pass, fail, warn)
}
