package main

import (
	"cmp"
	"flag"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/opclient"
)

func tailCommand() *cobra.Command {
	var kf opclient.Flags
	var fromBeginning, follow bool
	var max int
	c := &cobra.Command{
		Use:   "tail [-brokers B | -config FILE] [-topic T] [-from-beginning] [-follow=false] [-max N]",
		Short: "print a topic's events (default: results) as JSON lines",
		Long: `Prints the events of a topic (default: the results topic) as JSON lines:
  {"topic","partition","offset","time","key","type","event":{...},"headers":{...}}
A value that does not decode is printed as value_base64 with decode_error;
dead letters (wap.dlq.* headers) always carry value_base64, the original bytes.
Without -from-beginning only new events are printed. With -follow=false
tail stops at the end of the topic as it was when tail started.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
			t, err := kf.Connect()
			if err != nil {
				fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
				return exit(2)
			}
			defer t.Close()
			topic := cmp.Or(kf.Topic, t.Config.Kafka.ResultsTopic)
			printed := 0
			var werr error
			err = t.Tail(c.Context(), topic, fromBeginning, follow, func(r opclient.Record) bool {
				werr = printRecord(stdout, r)
				printed++
				return werr != nil || (max > 0 && printed >= max)
			})
			if err := cmp.Or(werr, err); err != nil {
				fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
				return exit(1)
			}
			return nil
		},
	}
	kafkaFlags := flag.NewFlagSet("tail", flag.ContinueOnError)
	kf.Register(kafkaFlags, "topic to read (default: the config's results topic, else wap.results)")
	f := c.Flags()
	f.AddGoFlagSet(kafkaFlags)
	f.BoolVar(&fromBeginning, "from-beginning", false, "start at the oldest retained event instead of the end")
	f.BoolVar(&follow, "follow", true, "keep waiting for new events; false stops at the end")
	f.IntVar(&max, "max", 0, "stop after printing this many events (0: no limit)")
	return c
}
