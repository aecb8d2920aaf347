package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/buildinfo"
	"github.com/lakewap/lakewap/internal/runs"
)

func versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [-json]",
		Short: "the build: release, module version or VCS revision (also --version)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			b := buildinfo.Read()
			if asJSON {
				return runs.WriteJSON(c.OutOrStdout(), []buildinfo.Build{b})
			}
			_, err := fmt.Fprintln(c.OutOrStdout(), b)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the build as JSON")
	return c
}
