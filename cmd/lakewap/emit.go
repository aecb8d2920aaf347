package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
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
	t, err := o.kafka.Connect()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
		return 2
	}
	defer t.Close()
	topic := cmp.Or(o.kafka.Topic, t.Config.Kafka.InputTopic)
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
	kafka      opclient.Flags
	jsonPath   string
	noValidate bool
	timeout    time.Duration
}

// register defines emit's own flags on fs, with the values parsed so far
// as defaults, so they may come before or after the event name.
func (o *emitOptions) register(fs *flag.FlagSet) {
	o.kafka.Register(fs, "topic to send to (default: the config's input topic, else wap.events)")
	fs.StringVar(&o.jsonPath, "json", o.jsonPath, "read events from `FILE` (- for stdin) instead of flags")
	fs.BoolVar(&o.noValidate, "no-validate", o.noValidate, "send events that fail validation (to try dead letters)")
	fs.DurationVar(&o.timeout, "timeout", cmp.Or(o.timeout, 30*time.Second), "give up sending after this long")
}

// printRecord prints r as a JSON line, escaped for terminals like lakewap runs'.
func printRecord(w io.Writer, r opclient.Record) error {
	return runs.WriteJSON(w, []opclient.Record{r})
}

// eventFromFlags builds the event named by args[0] from the flags after it.
// A nil event with code 0 is help, printed.
func eventFromFlags(args []string, o *emitOptions, now time.Time, stdout, stderr io.Writer) (schemas.Event, int) {
	fs := flag.NewFlagSet("emit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), emitUsage); fs.PrintDefaults() }
	o.register(fs)
	build, err := opclient.EventFlags(args[0], fs)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
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
	ev, err := build(now)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap emit: %v\n", err)
		return nil, 2
	}
	return ev, 0
}
