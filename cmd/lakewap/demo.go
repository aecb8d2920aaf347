package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
)

// cmdDemo shows the incident lakewap exists to prevent: a nightly billing
// load is published, the next one carries NULL billing ids from an upstream
// change and is stopped before anyone reading main sees it.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo")
	verbose := fs.Bool("v", false, "show lakewap's own logs")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	start := func(ctx context.Context, cfg *config.Config, log *slog.Logger, console io.Writer,
		observe func(before, after pipeline.Run)) (func(context.Context) error, error) {
		d, err := daemon.New(ctx, cfg, daemon.Options{Logger: log, Console: console, Observe: observe})
		if err != nil {
			return nil, err
		}
		return d.Run, nil
	}
	if err := harness.Demo(ctx, stdout, stderr, *verbose, start); err != nil {
		fmt.Fprintf(stderr, "demo failed: %v\n", err)
		return 1
	}
	return 0
}

// cmdPrepare builds what the embedded stack needs (the lakeFS server and
// lakectl from the lakeFS Go module) so that the first demo or test run
// does not spend its time on it silently.
func cmdPrepare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("prepare")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	server, err := devstack.LakeFSBinaryPath(ctx, log)
	if err != nil {
		fmt.Fprintf(stderr, "prepare: lakeFS server: %v\n", err)
		return 1
	}
	ctl, err := devstack.LakectlBinaryPath(ctx, log)
	if err != nil {
		fmt.Fprintf(stderr, "prepare: lakectl: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "lakeFS server: %s\nlakectl:       %s\n", server, ctl)
	return 0
}
