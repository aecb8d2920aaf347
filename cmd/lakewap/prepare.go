package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/lakewap/lakewap/internal/devstack"
)

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
