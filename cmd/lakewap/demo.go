package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/lakewap/lakewap/internal/config"
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
		d, err := newDaemon(ctx, cfg, daemonOptions{Logger: log, Console: console, Observe: observe})
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
