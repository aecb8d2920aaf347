package cli

import (
	"cmp"
	"context"
	"io"

	"github.com/lakewap/lakewap/internal/opclient"
)

// TailOptions are lakewap tail's flags.
type TailOptions struct {
	Kafka                 opclient.Flags
	FromBeginning, Follow bool
	Max                   int // 0: no limit
}

// Tail prints a topic's events as JSON lines: 0 done, 1 a read failed,
// 2 it cannot connect.
func Tail(ctx context.Context, o TailOptions, stdout, stderr io.Writer) int {
	t, err := o.Kafka.Connect()
	if err != nil {
		failf(stderr, "lakewap tail: %v", err)
		return 2
	}
	defer t.Close()
	topic := cmp.Or(o.Kafka.Topic, t.Config.Kafka.ResultsTopic)
	printed := 0
	var werr error
	err = t.Tail(ctx, topic, o.FromBeginning, o.Follow, func(r opclient.Record) bool {
		werr = PrintRecord(stdout, r)
		printed++
		return werr != nil || (o.Max > 0 && printed >= o.Max)
	})
	if err := cmp.Or(werr, err); err != nil {
		failf(stderr, "lakewap tail: %v", err)
		return 1
	}
	return 0
}
