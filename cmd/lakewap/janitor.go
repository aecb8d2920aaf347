package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func janitorCommand() *cobra.Command {
	var o cli.JanitorOptions
	c := &cobra.Command{
		Use:   "janitor -config FILE [-dry-run] [-all] [-json]",
		Short: "delete expired and abandoned wap- branches",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Janitor(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "lakewap.yaml", "config file")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would be deleted, delete nothing")
	f.BoolVar(&o.All, "all", false, "also print the branches that are kept, and why")
	f.BoolVar(&o.JSON, "json", false, "print decisions as JSON, one per line")
	return c
}
