package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

// validateCommand checks a config named by -config or as its argument.
func validateCommand() *cobra.Command {
	var path string
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate [-config] FILE [-json]",
		Short: "check a config file, naming every bad field (exit 0 valid, 1 not)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args)+len(path) == 0 || len(args) > 1 || (len(args) == 1 && c.Flags().Changed("config")) {
				return usageError{errors.New("usage: lakewap validate CONFIG")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				path = args[0]
			}
			return exit(cli.Validate(path, asJSON, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	c.Flags().StringVar(&path, "config", "", "config file (or give it as the argument)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the file, whether it is valid and every error as JSON")
	return c
}
