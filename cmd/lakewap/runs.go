package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

func runsCommand() *cobra.Command {
	var path, state, dataset string
	var asJSON bool
	c := &cobra.Command{
		Use:   "runs -config FILE [-state S] [-dataset D] [-json]",
		Short: "list runs from the state store",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
			if state != "" && !slices.Contains(schemas.States(), state) {
				fmt.Fprintf(stderr, "lakewap runs: -state %q is not a run state (%s)\n", state, strings.Join(schemas.States(), ", "))
				return exit(2)
			}
			cfg, ok := cli.LoadClientConfig(path, stderr)
			if !ok {
				return exit(2)
			}
			stored, err := runs.List(c.Context(), cfg.Kafka, state, dataset)
			if err == nil && asJSON {
				err = runs.WriteJSON(stdout, stored)
			} else if err == nil {
				err = runs.WriteTable(stdout, stored, time.Now())
			}
			if err != nil {
				fmt.Fprintf(stderr, "lakewap runs: %v\n", err)
				return exit(1)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&path, "config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	f.StringVar(&state, "state", "", "only runs in this state (e.g. aborted, published, awaiting_writes)")
	f.StringVar(&dataset, "dataset", "", "only runs of this dataset")
	f.BoolVar(&asJSON, "json", false, "print the stored runs as JSON, one per line")
	return c
}
