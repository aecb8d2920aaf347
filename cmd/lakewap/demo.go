package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
)

// demoCommand shows the incident lakewap exists to prevent: a nightly
// billing load is published, the next one carries NULL billing ids from an
// upstream change and is stopped before anyone reading main sees it.
func demoCommand() *cobra.Command {
	var o harness.DemoOptions
	c := &cobra.Command{
		Use:   "demo [-v] [-keep [-config FILE]]",
		Short: "the embedded stack, a good and a bad batch; -keep leaves it running until Ctrl-C",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := harness.Demo(c.Context(), c.OutOrStdout(), c.ErrOrStderr(), o, startDaemon); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "demo failed: %v\n", err)
				return exit(1)
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "show lakewap's own logs")
	f.BoolVar(&o.Keep, "keep", false, "leave the stack and the daemon running after the demo, with a config for lakewap's commands, until Ctrl-C")
	f.StringVar(&o.ConfigPath, "config", "", "with -keep: where to write the stack's config (default: in the demo's temporary directory)")
	return c
}

// startDaemon is how the demo starts lakewap's daemon on its stack.
func startDaemon(ctx context.Context, cfg *config.Config, log *slog.Logger, console io.Writer,
	observe func(before, after pipeline.Run)) (func(context.Context) error, error) {
	d, err := daemon.New(ctx, cfg, daemon.Options{Logger: log, Console: console, Observe: observe})
	if err != nil {
		return nil, err
	}
	return d.Run, nil
}

// prepareCommand builds what the embedded stack needs ahead of its first
// use, so that the first demo or test run does not spend its time on it
// silently.
func prepareCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "prepare",
		Short: "build the embedded stack's lakeFS server and lakectl (done on first use anyway)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := harness.Prepare(c.Context(), c.OutOrStdout(), c.ErrOrStderr()); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "prepare: %v\n", err)
				return exit(1)
			}
			return nil
		},
	}
}
