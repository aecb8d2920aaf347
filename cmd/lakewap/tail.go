package main

import (
	"flag"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func tailCommand() *cobra.Command {
	var o cli.TailOptions
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
			return exit(cli.Tail(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	kafkaFlags := flag.NewFlagSet("tail", flag.ContinueOnError)
	o.Kafka.Register(kafkaFlags, "topic to read (default: the config's results topic, else wap.results)")
	f := c.Flags()
	f.AddGoFlagSet(kafkaFlags)
	f.BoolVar(&o.FromBeginning, "from-beginning", false, "start at the oldest retained event instead of the end")
	f.BoolVar(&o.Follow, "follow", true, "keep waiting for new events; false stops at the end")
	f.IntVar(&o.Max, "max", 0, "stop after printing this many events (0: no limit)")
	return c
}
