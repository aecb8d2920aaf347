package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/runs"

	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/schemas"
)

const emitUsage = `Usage:
  lakewap emit [KAFKA FLAGS] landed --batch B --dataset D --writes a,b [--deadline 2h|RFC3339]
               [--source-ref REF] [--producer NAME] [--attr k=v]... [--at RFC3339]
  lakewap emit [KAFKA FLAGS] write  --batch B --dataset D --write W [--paths p1,p2] [--rows N] [--at RFC3339]
  lakewap emit [KAFKA FLAGS] cancel --batch B --dataset D --reason TEXT [--at RFC3339]
  lakewap emit [KAFKA FLAGS] --json FILE|-

Produces input events to the input topic as upstream does: Avro (the Confluent
wire format with a schema registry, single-object encoding without), key =
batch id, wap.event_type and wap.batch_id headers, partitioned like the Java
client (murmur2). Events are validated first (the dataset against the config
with --config) and nothing is sent if one is invalid. Each sent event is
printed as a JSON line, the way 'lakewap tail' prints it.

--json reads JSON documents, one per line or concatenated, each an event with
its snake_case fields and a "type" (BatchLanded, WriteComplete, BatchCancelled):
  {"type":"BatchLanded","batch_id":"2024-06-01","dataset":"billing","expected_writes":["billing_fact"]}
A missing occurred_at is now.

Flags:
`

func cmdEmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o emitOptions
	fs := newFlagSet("emit")
	o.register(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), emitUsage); fs.PrintDefaults() }
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var events []schemas.Event
	switch {
	case o.jsonPath != "" && fs.NArg() > 0:
		fmt.Fprintf(stderr, "lakewap emit: --json and an event on the command line (%q) exclude each other\n", fs.Arg(0))
		return 2
	case o.jsonPath != "":
		var err error
		if events, err = opclient.ReadEventsFile(o.jsonPath, now); err != nil {
			fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
			return 2
		}
	case fs.NArg() == 0:
		fs.Usage()
		return 2
	default:
		ev, code := eventFromFlags(fs.Args(), &o, now, stdout, stderr)
		if ev == nil {
			return code
		}
		events = []schemas.Event{ev}
	}
	if len(events) == 0 {
		fmt.Fprintln(stderr, "lakewap emit: no events to send")
		return 2
	}
	t, err := o.kafka.connect()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
		return 2
	}
	defer t.Close()
	topic := cmp.Or(o.kafka.topic, t.Config.Kafka.InputTopic)
	if !o.noValidate {
		if err := t.Check(events, topic, now); err != nil {
			fmt.Fprintf(stderr, "lakewap emit: nothing sent: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := t.Emit(ctx, topic, events, func(r opclient.Record) error { return printRecord(stdout, r) }); err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
		return 1
	}
	return 0
}

type emitOptions struct {
	kafka      kafkaFlags
	jsonPath   string
	noValidate bool
	timeout    time.Duration
}

// register defines emit's own flags on fs, with the values parsed so far
// as defaults, so they may come before or after the event name.
func (o *emitOptions) register(fs *flag.FlagSet) {
	o.kafka.register(fs, "topic to send to (default: the config's input topic, else wap.events)")
	fs.StringVar(&o.jsonPath, "json", o.jsonPath, "read events from `FILE` (- for stdin) instead of flags")
	fs.BoolVar(&o.noValidate, "no-validate", o.noValidate, "send events that fail validation (to try dead letters)")
	fs.DurationVar(&o.timeout, "timeout", cmp.Or(o.timeout, 30*time.Second), "give up sending after this long")
}

// kafkaFlags say where emit and tail connect: flags, else a lakewap config.
type kafkaFlags struct {
	brokers, topic, registry, config string
}

func (f *kafkaFlags) register(fs *flag.FlagSet, topicHelp string) {
	fs.StringVar(&f.brokers, "brokers", f.brokers, "comma-separated Kafka `brokers` (default: the config's, else 127.0.0.1:9092)")
	fs.StringVar(&f.topic, "topic", f.topic, topicHelp)
	fs.StringVar(&f.registry, "registry", f.registry, "schema registry `URL` (default: the config's kafka.schema_registry_url)")
	fs.StringVar(&f.config, "config", f.config, "config `FILE` to take brokers, security, topics, registry and datasets from: the daemon's, or a client config with only a kafka section")
}

func (f kafkaFlags) connect() (*opclient.Target, error) {
	return opclient.Connect(f.config, splitList(f.brokers), f.registry)
}

// printRecord prints r as a JSON line, escaped for terminals like lakewap runs'.
func printRecord(w io.Writer, r opclient.Record) error {
	return runs.WriteJSON(w, []opclient.Record{r})
}

// splitList is the non-empty items of a comma-separated list; never nil.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// eventFromFlags builds the event named by args[0] from the flags after it.
// A nil event with code 0 is help, printed.
func eventFromFlags(args []string, o *emitOptions, now time.Time, stdout, stderr io.Writer) (schemas.Event, int) {
	kind := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(args[0]))
	fs := flag.NewFlagSet("emit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), emitUsage); fs.PrintDefaults() }
	o.register(fs)
	var batch, dataset, at string
	fs.StringVar(&batch, "batch", "", "batch id (required)")
	fs.StringVar(&dataset, "dataset", "", "dataset (required)")
	fs.StringVar(&at, "at", "", "occurred_at, RFC 3339 (default now)")
	var build func(occurred time.Time) (schemas.Event, error)
	switch kind {
	case "landed", "batchlanded":
		var writes, deadline, sourceRef, producer string
		attrs := map[string]string{}
		fs.StringVar(&writes, "writes", "", "comma-separated expected writes (required)")
		fs.StringVar(&deadline, "deadline", "", "write deadline: a duration from occurred_at (2h) or an RFC 3339 time (default: the dataset's write_timeout)")
		fs.StringVar(&sourceRef, "source-ref", "", "lakeFS `ref` to create the batch branch from (default: the dataset's target)")
		fs.StringVar(&producer, "producer", "lakewap emit", "producer name")
		fs.Func("attr", "attribute `k=v` (repeatable)", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fmt.Errorf("want k=v, got %q", s)
			}
			attrs[k] = v
			return nil
		})
		build = func(occurred time.Time) (schemas.Event, error) {
			ev := schemas.BatchLanded{BatchID: batch, Dataset: dataset, SourceRef: sourceRef, ExpectedWrites: splitList(writes),
				Attributes: attrs, Producer: producer, OccurredAt: occurred}
			if deadline != "" {
				d, err := parseDeadline(deadline, occurred)
				if err != nil {
					return nil, err
				}
				ev.WriteDeadline = &d
			}
			return ev, nil
		}
	case "write", "writecomplete":
		var write, paths string
		var rows int64
		fs.StringVar(&write, "write", "", "name of the expected write that is complete (required)")
		fs.StringVar(&paths, "paths", "", "comma-separated object paths written on the batch's branch")
		fs.Int64Var(&rows, "rows", 0, "rows written (sent only when given)")
		build = func(occurred time.Time) (schemas.Event, error) {
			ev := schemas.WriteComplete{BatchID: batch, Dataset: dataset, Write: write, Paths: splitList(paths), OccurredAt: occurred}
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "rows" {
					ev.RowCount = &rows
				}
			})
			return ev, nil
		}
	case "cancel", "cancelled", "batchcancelled":
		var reason string
		fs.StringVar(&reason, "reason", "", "why the batch is cancelled")
		build = func(occurred time.Time) (schemas.Event, error) {
			return schemas.BatchCancelled{BatchID: batch, Dataset: dataset, Reason: reason, OccurredAt: occurred}, nil
		}
	default:
		fmt.Fprintf(stderr, "lakewap emit: unknown event %q: want landed, write or cancel (or --json)\n", args[0])
		return nil, 2
	}
	if code, ok := parseFlags(fs, args[1:], stdout, stderr); !ok {
		return nil, code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakewap emit: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	}
	if o.jsonPath != "" {
		fmt.Fprintln(stderr, "lakewap emit: --json and an event on the command line exclude each other")
		return nil, 2
	}
	occurred, err := parseAt(at, now)
	var ev schemas.Event
	if err == nil {
		ev, err = build(occurred)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
		return nil, 2
	}
	return ev, 0
}

func parseAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--at: %w", err)
	}
	return t.UTC(), nil
}

// parseDeadline reads "2h" (after from) or an RFC 3339 time.
func parseDeadline(s string, from time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return from.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--deadline %q is neither a duration (2h) nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}
