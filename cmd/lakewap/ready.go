package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

func readyCommand() *cobra.Command {
	var o cli.ReadyOptions
	c := &cobra.Command{
		Use:   "ready [-config FILE | -url URL] [-json]",
		Short: "exit 0 when the daemon's /readyz answers 200 (container health check)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Ready(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&o.Config, "config", "/etc/lakewap/lakewap.yaml", "config whose http.listen the daemon serves")
	f.StringVar(&o.URL, "url", "", "readiness URL (default: http://<http.listen>/readyz from -config)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Second, "give up after this long")
	f.BoolVar(&o.JSON, "json", false, "print the URL, status and body as JSON")
	return c
}
