package main

import (
	"flag"
	"io"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

// emitCommand parses its own flags: emit's flags may come before or after
// the event's name, and each event has flags of its own.
func emitCommand() *cobra.Command {
	var o cli.Emit
	c := &cobra.Command{
		Use:                "emit [-brokers B | -config FILE] landed|write|cancel FLAGS, or -json FILE",
		Short:              "produce an input event as upstream would",
		Long:               cli.EmitLong,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			return exit(o.Run(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr()))
		},
		// Cobra offers emit's own flags (below); the events and their flags
		// only emit's parser knows.
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if candidates, files := cli.CompleteEmit(args, toComplete); !files {
				return candidates, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
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
