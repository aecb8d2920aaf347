package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/schemas"
)

func registryCommand() *cobra.Command {
	var o cli.RegistryOptions
	c := &cobra.Command{
		Use:   "registry -config FILE [-compatibility LEVEL] [-json]",
		Short: "register the schemas' subjects in the schema registry ahead of time",
		Long: `Registers lakewap's current schemas in the schema registry of the config
(kafka.schema_registry_url, with schema_registry_auth and
schema_registry_tls) ahead of time: under each topic's subjects
(<topic>-io.lakewap.events.<Type>, the ones lakewap writes with), after
setting each subject's compatibility level. Prints one line per subject,
or with -json a JSON array. A client config (only a kafka section) will do.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Registry(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	f.StringVar(&o.Compatibility, "compatibility", "BACKWARD", "compatibility level of each subject ("+strings.Join(schemas.CompatibilityLevels, ", ")+"; empty: leave it)")
	f.BoolVar(&o.JSON, "json", false, "print a JSON array")
	return c
}
