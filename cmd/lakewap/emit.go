package main

import (
	"flag"
	"io"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

const emitLong = `Produces input events to the input topic as upstream does: Avro (the Confluent
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

// emitCommand parses its own flags: emit's flags may come before or after
// the event's name, and each event has flags of its own.
func emitCommand() *cobra.Command {
	var o cli.Emit
	c := &cobra.Command{
		Use:                "emit [-brokers B | -config FILE] landed|write|cancel FLAGS, or -json FILE",
		Short:              "produce an input event as upstream would",
		Long:               emitLong,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			return exit(o.Run(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr()))
		},
		// Cobra offers emit's own flags (below); the events and their flags
		// only emit's parser knows.
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			candidates, files := cli.CompleteEmit(args, toComplete)
			if files {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return candidates, cobra.ShellCompDirectiveNoFileComp
		},
	}
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	o.Register(fs)
	c.Flags().AddGoFlagSet(fs) // for the help and completion
	o.Help = func(w io.Writer) {
		c.SetOut(w)
		_ = c.Help()
	}
	return c
}
