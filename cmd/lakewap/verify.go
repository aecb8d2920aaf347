package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func verifyCommand() *cobra.Command {
	var o cli.VerifyOptions
	c := &cobra.Command{
		Use: "verify -config FILE -dataset D [-since T] [-json]",
		Short: "list the target's commits as lakewap's attested publishes or not " +
			"(exit 0 all attested, 1 any not, 2 could not tell)",
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Verify(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "lakewap.yaml", "config file")
	f.StringVar(&o.Dataset, "dataset", "", "dataset whose target is verified (required)")
	f.StringVar(&o.Since, "since", "", "only commits made since then, RFC 3339 (default: all, up to 10000)")
	f.BoolVar(&o.JSON, "json", false, "print each commit and its verdict as JSON, one per line")
	return c
}
