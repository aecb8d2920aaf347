package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func auditCommand() *cobra.Command {
	var o cli.AuditOptions
	var base string
	c := &cobra.Command{
		Use:   "audit -config FILE -dataset D -ref R [-base B] [-batch-time T] [-json] [-local DIR] [-full]",
		Short: "run a dataset's suite against any ref, publish nothing (exit 0 passed, 1 failed, 2 could not run)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("base") {
				o.Base = &base
			}
			return exit(cli.Audit(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "lakewap.yaml", "config file")
	f.StringVar(&o.Dataset, "dataset", "", "dataset whose suite runs (required)")
	f.StringVar(&o.Ref, "ref", "", "branch, tag or commit to audit (required)")
	f.StringVar(&base, "base", "", "ref that volume_change, schema_drift and scope: batch compare with, and whose diff with the ref picks the checks of the other datasets of the target that share a changed table (default: the dataset's target)")
	f.StringVar(&o.BatchTime, "batch-time", "", "time freshness is measured at, RFC 3339 (default: now)")
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON (schemas.AuditReport)")
	f.StringVar(&o.Local, "local", "", "audit files on disk instead of lakeFS: a ref is the directory DIR/<ref> holding the tables' paths")
	f.BoolVar(&o.Full, "full", false, "read the whole tables even where the audit could be incremental")
	return c
}
