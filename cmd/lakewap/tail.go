package main

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/internal/opclient"
)

const tailUsage = `Usage:
  lakewap tail [--brokers B | --config F] [--topic T] [--from-beginning] [--follow=false] [--max N]

Prints the events of a topic (default: the results topic) as JSON lines:
  {"topic","partition","offset","time","key","type","event":{...},"headers":{...}}
A value that does not decode is printed as value_base64 with decode_error;
dead letters (wap.dlq.* headers) always carry value_base64, the original bytes.
Without --from-beginning only new events are printed. With --follow=false
tail stops at the end of the topic as it was when tail started.

Flags:
`

func cmdTail(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kf opclient.Flags
	var fromBeginning, follow bool
	var max int
	fs := newFlagSet("tail")
	fs.Usage = func() { fmt.Fprint(fs.Output(), tailUsage); fs.PrintDefaults() }
	kf.Register(fs, "topic to read (default: the config's results topic, else wap.results)")
	fs.BoolVar(&fromBeginning, "from-beginning", false, "start at the oldest retained event instead of the end")
	fs.BoolVar(&follow, "follow", true, "keep waiting for new events; false stops at the end")
	fs.IntVar(&max, "max", 0, "stop after printing this many events (0: no limit)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakewap tail: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	t, err := kf.Connect()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
		return 2
	}
	defer t.Close()
	topic := cmp.Or(kf.Topic, t.Config.Kafka.ResultsTopic)
	printed := 0
	var werr error
	err = t.Tail(ctx, topic, fromBeginning, follow, func(r opclient.Record) bool {
		werr = printRecord(stdout, r)
		printed++
		return werr != nil || (max > 0 && printed >= max)
	})
	if err := cmp.Or(werr, err); err != nil {
		fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
		return 1
	}
	return 0
}
