package cli

import (
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

// RunsOptions are lakewap runs' flags.
type RunsOptions struct {
	Config, State, Dataset string
	JSON                   bool
	// MaxMiB bounds what the listing holds (runs.DefaultMaxListMiB).
	MaxMiB int
}

// Runs lists the runs of the state store: 0 listed, 1 the store cannot be
// read, 2 bad flags or config.
func Runs(ctx context.Context, o RunsOptions, stdout, stderr io.Writer) int {
	if o.State != "" && !slices.Contains(schemas.States(), o.State) {
		failf(stderr, "lakewap runs: -state %q is not a run state (%s)", o.State, strings.Join(schemas.States(), ", "))
		return 2
	}
	cfg, ok := LoadClientConfig(o.Config, stderr)
	if !ok {
		return 2
	}
	listed, err := runs.ListWithin(ctx, cfg.Kafka, o.State, o.Dataset, cmp.Or(o.MaxMiB, runs.DefaultMaxListMiB))
	if err == nil {
		err = runs.WriteListing(stdout, listed, time.Now(), o.JSON)
	}
	if err != nil {
		failf(stderr, "lakewap runs: %v", err)
		return 1
	}
	return 0
}

// Run is lakewap run: the daemon on the config at path until ctx ends. 1
// when start-up fails or it stops with an error, 2 on a bad config.
func Run(ctx context.Context, path string, stdout, stderr io.Writer) int {
	cfg, ok := LoadConfig(path, stderr)
	if !ok {
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, cfg.Log.Level)
	d, err := daemon.New(ctx, cfg, daemon.Options{Logger: log, Console: stdout})
	if err != nil {
		log.Error("start-up failed", "err", err)
		return 1
	}
	if err := d.Run(ctx); err != nil {
		log.Error("daemon stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
