package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

// runCommand is lakewap run: the daemon, until a signal ends its context.
func runCommand() *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:   "run -config FILE",
		Short: "run the daemon (exit 1 when start-up fails or it stops with an error, 2 on a bad config)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Run(c.Context(), path, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	c.Flags().StringVar(&path, "config", "lakewap.yaml", "config file")
	return c
}
