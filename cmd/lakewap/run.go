package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/internal/daemon"
)

// runCommand is lakewap run: the daemon, until a signal ends its context.
func runCommand() *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:   "run -config FILE",
		Short: "run the daemon (exit 1 when start-up fails or it stops with an error, 2 on a bad config)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, ok := cli.LoadConfig(path, c.ErrOrStderr())
			if !ok {
				return exit(2)
			}
			log := daemon.NewLogger(c.ErrOrStderr(), cfg.Log.Format, cfg.Log.Level)
			d, err := daemon.New(c.Context(), cfg, daemon.Options{Logger: log, Console: c.OutOrStdout()})
			if err != nil {
				log.Error("start-up failed", "err", err)
				return exit(1)
			}
			if err := d.Run(c.Context()); err != nil {
				log.Error("daemon stopped with an error", "err", err)
				return exit(1)
			}
			log.Info("stopped")
			return nil
		},
	}
	c.Flags().StringVar(&path, "config", "lakewap.yaml", "config file")
	return c
}
