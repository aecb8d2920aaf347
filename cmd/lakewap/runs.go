package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func runsCommand() *cobra.Command {
	var o cli.RunsOptions
	c := &cobra.Command{
		Use:   "runs -config FILE [-state S] [-dataset D] [-json]",
		Short: "list runs from the state store",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Runs(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	f.StringVar(&o.State, "state", "", "only runs in this state (e.g. aborted, published, awaiting_writes)")
	f.StringVar(&o.Dataset, "dataset", "", "only runs of this dataset")
	f.BoolVar(&o.JSON, "json", false, "print the stored runs as JSON, one per line")
	return c
}
