package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

// EmitLong is emit's help: its events and their flags.
const EmitLong = `Produces input events to the input topic as upstream does: Avro (the Confluent
wire format with a schema registry, single-object encoding without), key =
batch id, wap.event_type and wap.batch_id headers, partitioned like the Java
client (murmur2). Events are validated first (the dataset against the config
with -config) and nothing is sent if one is invalid. Each sent event is
printed as a JSON line, the way 'lakewap tail' prints it.

  lakewap emit [KAFKA FLAGS] landed -batch B -dataset D -writes a,b [-deadline 2h|RFC3339]
               [-source-ref REF] [-producer NAME] [-attr k=v]... [-at RFC3339]
  lakewap emit [KAFKA FLAGS] write  -batch B -dataset D -write W [-paths p1,p2] [-rows N] [-at RFC3339]
  lakewap emit [KAFKA FLAGS] cancel -batch B -dataset D -reason TEXT [-at RFC3339]
  lakewap emit [KAFKA FLAGS] -json FILE|-

-json reads JSON documents, one per line or concatenated, each an event with
its snake_case fields and a "type" (BatchLanded, WriteComplete, BatchCancelled):
  {"type":"BatchLanded","batch_id":"2024-06-01","dataset":"billing","expected_writes":["billing_fact"]}
A missing occurred_at is now. 'lakewap emit EVENT -h' lists the event's flags.`

// Run parses emit's flags and args, builds or reads the events, checks
// them and sends them, printing each sent one: 0 sent, 1 not sent, 2 bad
// flags or events.
func (o *Emit) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	o.Register(fs)
	if code, ok := parseFlags(fs, args, nil, o, stdout, stderr); !ok {
		return code
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var events []schemas.Event
	switch {
	case o.jsonPath != "" && fs.NArg() > 0:
		failf(stderr, "lakewap emit: --json and an event on the command line (%q) exclude each other", fs.Arg(0))
		return 2
	case o.jsonPath != "":
		var err error
		if events, err = opclient.ReadEventsFile(o.jsonPath, now); err != nil {
			failf(stderr, "lakewap emit: %v", err)
			return 2
		}
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "lakewap emit: name an event (landed, write, cancel) or give -json FILE")
		return 2
	default:
		ev, code := eventFromFlags(fs.Args(), o, now, stdout, stderr)
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
		failf(stderr, "lakewap emit: %v", err)
		return 2
	}
	defer t.Close()
	topic := cmp.Or(o.kafka.Topic, t.Config.Kafka.InputTopic)
	if !o.noValidate {
		if err := t.Check(events, topic, now); err != nil {
			failf(stderr, "lakewap emit: nothing sent: %v", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := t.Emit(ctx, topic, events, func(r opclient.Record) error { return PrintRecord(stdout, r) }); err != nil {
		failf(stderr, "lakewap emit: %v", err)
		return 1
	}
	return 0
}

// Emit is lakewap emit: its flags and what it does.
type Emit struct {
	kafka      opclient.Flags
	jsonPath   string
	noValidate bool
	timeout    time.Duration
	// Help prints emit's help (the command's); nil: only the flags.
	Help func(w io.Writer)
}

// register defines emit's own flags on fs, with the values parsed so far
// as defaults, so they may come before or after the event name.
func (o *Emit) Register(fs *flag.FlagSet) {
	o.kafka.Register(fs, "topic to send to (default: the config's input topic, else wap.events)")
	fs.StringVar(&o.jsonPath, "json", o.jsonPath, "read events from `FILE` (- for stdin) instead of flags")
	fs.BoolVar(&o.noValidate, "no-validate", o.noValidate, "send events that fail validation (to try dead letters)")
	fs.DurationVar(&o.timeout, "timeout", cmp.Or(o.timeout, 30*time.Second), "give up sending after this long")
}

// PrintRecord prints r as a JSON line, escaped for terminals like lakewap runs'.
func PrintRecord(w io.Writer, r opclient.Record) error {
	return runs.WriteJSON(w, []opclient.Record{r})
}

// eventFromFlags builds the event named by args[0] from the flags after it.
// A nil event with code 0 is help, printed.
func eventFromFlags(args []string, o *Emit, now time.Time, stdout, stderr io.Writer) (schemas.Event, int) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	o.Register(fs)
	build, err := opclient.EventFlags(args[0], fs)
	if err != nil {
		failf(stderr, "lakewap emit: %v", err)
		return nil, 2
	}
	if code, ok := parseFlags(fs, args[1:], fs, o, stdout, stderr); !ok {
		return nil, code
	}
	if fs.NArg() > 0 {
		failf(stderr, "lakewap emit: unexpected argument %q", fs.Arg(0))
		return nil, 2
	}
	if o.jsonPath != "" {
		fmt.Fprintln(stderr, "lakewap emit: --json and an event on the command line exclude each other")
		return nil, 2
	}
	ev, err := build(now)
	if err != nil {
		failf(stderr, "lakewap emit: %v", err)
		return nil, 2
	}
	return ev, 0
}

// parseFlags parses emit's flags (and an event's, when event is not nil).
// -h prints the help to stdout: exit 0. A bad flag prints the problem and
// the help to stderr: exit 2. ok says whether to go on.
func parseFlags(fs *flag.FlagSet, args []string, event *flag.FlagSet, o *Emit, stdout, stderr io.Writer) (code int, ok bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	fs.Usage = func() {}
	err := fs.Parse(args)
	help := func(w io.Writer, event *flag.FlagSet) {
		if o.Help != nil {
			o.Help(w)
		} else { // eventFromFlags called alone, in tests
			fmt.Fprintf(w, "Flags:\n%s", goFlagUsages(fs))
		}
		if event != nil {
			fmt.Fprintf(w, "\nFlags of %s:\n%s", event.Name(), goFlagUsages(event))
		}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		help(stdout, event)
		return 0, false
	case err != nil:
		fmt.Fprintf(stderr, "lakewap emit: %s\n\n", bytes.TrimSpace(msg.Bytes()))
		help(stderr, event)
		return 2, false
	}
	return 0, true
}

// goFlagUsages is a Go flag set's help in the format of every command's
// (cobra's).
func goFlagUsages(fs *flag.FlagSet) string {
	pf := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	pf.AddGoFlagSet(fs)
	return pf.FlagUsages()
}

// EmitEvents are the event names emit takes, for completion.
var EmitEvents = []struct{ Name, Help string }{
	{"landed", "BatchLanded: a batch landed, with its expected writes"},
	{"write", "WriteComplete: one expected write is done"},
	{"cancel", "BatchCancelled: give a batch up"},
}

// CompleteEmit completes emit's command line as emit parses it: args are
// the words before the one being completed, toComplete that word. It offers
// the event names until one is given, and the event's own flags after it
// (emit's, cobra knows and offers), each "name\thelp"; nothing for a flag's
// value, except that files says a FILE flag's value is a file name.
func CompleteEmit(args []string, toComplete string) (candidates []string, files bool) {
	var o Emit
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	o.Register(fs)
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	event := ""
	var value *flag.Flag // the flag whose value comes next
	for _, a := range args {
		if value != nil {
			value = nil
			continue
		}
		if !strings.HasPrefix(a, "-") {
			if event == "" {
				event = a
				if _, err := opclient.EventFlags(event, fs); err != nil {
					return nil, false
				}
			}
			continue
		}
		// -name or --name; -name=value carries its value.
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if name == "" || strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) {
			value = f
		}
	}
	if value != nil {
		kind, _ := flag.UnquoteUsage(value)
		return nil, kind == "FILE"
	}
	if strings.HasPrefix(toComplete, "-") {
		if event == "" {
			return nil, false
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !own[f.Name] && strings.HasPrefix("--"+f.Name, toComplete) {
				_, help := flag.UnquoteUsage(f)
				candidates = append(candidates, "--"+f.Name+"\t"+help)
			}
		})
		return candidates, false
	}
	if event == "" {
		for _, e := range EmitEvents {
			if strings.HasPrefix(e.Name, toComplete) {
				candidates = append(candidates, e.Name+"\t"+e.Help)
			}
		}
	}
	return candidates, false
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
