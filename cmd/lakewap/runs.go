package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
)

// runStore reads the run state store (the changelog topic) as a whole: every
// partition, whoever owns it. The daemon's runner only knows the partitions
// assigned to it, so the janitor and the operator commands read from here.
type runStore struct {
	changelog *consumer.Changelog
	client    *kafka.Client
	topic     string
}

// storedRun is a run with the changelog partition that holds it.
type storedRun struct {
	Partition int `json:"partition"`
	pipeline.Run
}

func newRunStore(k config.Kafka) (*runStore, error) {
	sec, err := kafkaSecurity(k)
	if err != nil {
		return nil, err
	}
	transport, err := sec.Transport()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: k.Brokers, Topic: k.ChangelogTopic, Transport: transport})
	if err != nil {
		return nil, fmt.Errorf("kafka changelog: %w", err)
	}
	return &runStore{changelog: cl, topic: cl.Topic(),
		client: &kafka.Client{Addr: kafka.TCP(k.Brokers...), Timeout: 10 * time.Second, Transport: transport}}, nil
}

// partitions asks Kafka how many partitions the changelog has.
func (s *runStore) partitions(ctx context.Context) (int, error) {
	md, err := s.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.topic}})
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", s.topic, err)
	}
	for _, t := range md.Topics {
		if t.Name != s.topic {
			continue
		}
		if t.Error != nil {
			return 0, fmt.Errorf("metadata of %s: %w", s.topic, t.Error)
		}
		if len(t.Partitions) == 0 {
			break
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("changelog topic %s does not exist", s.topic)
}

// load returns every run of every partition, sorted by batch id. A value
// that does not decode is an error: callers decide on all runs or none.
func (s *runStore) load(ctx context.Context) ([]storedRun, error) {
	n, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	var out []storedRun
	for p := range n {
		raw, err := s.changelog.Load(ctx, p)
		if err != nil {
			return nil, err
		}
		for key, v := range raw {
			var r pipeline.Run
			if err := json.Unmarshal(v, &r); err != nil {
				return nil, fmt.Errorf("run %q in %s/%d: %w", key, s.topic, p, err)
			}
			out = append(out, storedRun{Partition: p, Run: r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BatchID < out[j].BatchID })
	return out, nil
}

// Runs is the janitor's view of the store.
func (s *runStore) Runs(ctx context.Context) ([]pipeline.Run, error) {
	stored, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Run, len(stored))
	for i, r := range stored {
		out[i] = r.Run
	}
	return out, nil
}

var errNoSuchRun = errors.New("no run in the state store")

// find returns the run of batch (of dataset, when not empty).
func (s *runStore) find(ctx context.Context, batch, dataset string) (storedRun, error) {
	stored, err := s.load(ctx)
	if err != nil {
		return storedRun{}, err
	}
	var found []storedRun
	for _, r := range stored {
		if r.BatchID == batch && (dataset == "" || r.Dataset == dataset) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return storedRun{}, fmt.Errorf("batch %s: %w", batch, errNoSuchRun)
	case 1:
		return found[0], nil
	}
	return storedRun{}, fmt.Errorf("batch %s has runs in %d datasets: name one with -dataset", batch, len(found))
}

// put writes run back to its partition, as the runner would.
func (s *runStore) put(ctx context.Context, r storedRun) error {
	b, err := json.Marshal(r.Run)
	if err != nil {
		return err
	}
	return s.changelog.Put(ctx, r.Partition, r.Run.Key(), b)
}

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "lakewap.yaml", "config file")
	state := fs.String("state", "", "only runs in this state (e.g. aborted, published, awaiting_writes)")
	dataset := fs.String("dataset", "", "only runs of this dataset")
	asJSON := fs.Bool("json", false, "print the stored runs as JSON, one per line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch pipeline.State(*state) {
	case "", pipeline.StatePending, pipeline.StateLanded, pipeline.StateAwaitingWrites, pipeline.StateAuditing,
		pipeline.StatePublishing, pipeline.StatePublished, pipeline.StateAborted, pipeline.StateFailed:
	default:
		fmt.Fprintf(stderr, "lakewap runs: -state %q is not a run state (pending, landed, awaiting_writes, auditing, publishing, published, aborted, failed)\n", *state)
		return 2
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	if err := listRuns(ctx, cfg, runsFilter{State: *state, Dataset: *dataset, JSON: *asJSON}, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "lakewap runs: %v\n", err)
		return 1
	}
	return 0
}

type runsFilter struct {
	State, Dataset string
	JSON           bool
}

func listRuns(ctx context.Context, cfg *config.Config, f runsFilter, now time.Time, w io.Writer) error {
	store, err := newRunStore(cfg.Kafka)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stored, err := store.load(ctx)
	if err != nil {
		return err
	}
	var runs []storedRun
	for _, r := range stored {
		if (f.State == "" || string(r.State) == f.State) && (f.Dataset == "" || r.Dataset == f.Dataset) {
			runs = append(runs, r)
		}
	}
	if f.JSON {
		return writeRunsJSON(w, runs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tDATASET\tSTATE\tAGE\tIN STATE\tBRANCH\tREASON")
	for _, r := range runs {
		since := r.LandedAt
		if since.IsZero() {
			since = r.StateSince
		}
		reason := r.Reason
		if r.Detail != "" {
			reason = strings.TrimSpace(reason + ": " + oneLine(r.Detail, 80))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(r.BatchID), printable(r.Dataset), printable(string(r.State)),
			age(now, since), age(now, r.StateSince), printable(dash(r.Branch)), printable(dash(reason)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d run(s)\n", len(runs))
	return nil
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// writeRunsJSON prints one JSON object per run. encoding/json escapes only
// C0 controls, so the encoded line goes through jsonTerminalSafe: a run's
// reason and detail come from events and lakeFS, and a raw CSI (U+009B) or
// NEL (U+0085) would reach the operator's terminal.
func writeRunsJSON(w io.Writer, runs []storedRun) error {
	for _, r := range runs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(jsonTerminalSafe(b), '\n')); err != nil {
			return err
		}
	}
	return nil
}

// terminalDangerous is the one rule both outputs of lakewap runs share: the
// runes a terminal would act on rather than show (C0 and C1 controls, DEL)
// and the bidirectional overrides that reorder what is shown.
func terminalDangerous(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// jsonTerminalSafe rewrites every terminalDangerous rune left raw in encoded
// JSON as a \uXXXX escape. encoding/json already escapes C0 inside strings
// and emits no whitespace between tokens, so only runes from DEL up are left;
// outside strings JSON is ASCII, and these runes are all in the Basic
// Multilingual Plane, so the result is valid JSON that decodes to the same
// values.
func jsonTerminalSafe(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x7f && terminalDangerous(r) {
			out = fmt.Appendf(out, "\\u%04x", r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// printable escapes what a terminal would act on (terminalDangerous runes,
// tabs that would break the columns, invalid UTF-8): run texts come from
// events and lakeFS, not from the operator.
func printable(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case terminalDangerous(r):
			if r < 0x100 {
				fmt.Fprintf(&b, "\\x%02x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		case r == '\\':
			b.WriteString("\\\\")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
