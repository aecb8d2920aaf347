package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/internal/runs"
)

func runsCommand() *cobra.Command {
	var o cli.RunsOptions
	c := &cobra.Command{
		Use:   "runs -config FILE [-state S] [-dataset D] [-json] [-max-mib N]",
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
	f.IntVar(&o.MaxMiB, "max-mib", runs.DefaultMaxListMiB, "most MiB of the changelog's records the listing holds (records another writer left there count); past it, it stops saying so")
	return c
}
