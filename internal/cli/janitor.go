package cli

import (
	"cmp"
	"context"
	"io"
	"time"

	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/runs"
)

// JanitorOptions are lakewap janitor's flags.
type JanitorOptions struct {
	Config            string
	DryRun, All, JSON bool
}

// Janitor deletes (or with DryRun lists) expired and abandoned wap-
// branches: 0 done, 1 a sweep failed, 2 a bad config.
func Janitor(ctx context.Context, o JanitorOptions, stdout, stderr io.Writer) int {
	cfg, ok := LoadConfig(o.Config, stderr)
	if !ok {
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	lake, err := daemon.Lake(cfg, log, nil, nil)
	var j *janitor.Janitor
	if err == nil {
		j, err = daemon.NewJanitor(cfg, lake, log, nil)
	}
	if err != nil {
		failf(stderr, "lakewap janitor: %v", err)
		return 1
	}
	defer j.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// Printed as decided, none held: writers can make a million branches.
	var printErr error
	table := runs.NewDecisionTable(stdout, o.DryRun, o.All, time.Now())
	tally, err := j.Walk(ctx, o.DryRun, func(d janitor.Decision) {
		switch {
		case !o.JSON:
			table.Add(d)
		case d.Delete || o.All:
			printErr = cmp.Or(printErr, runs.WriteJSON(stdout, []janitor.Decision{d}))
		}
	})
	if !o.JSON {
		printErr = table.Close(tally.Branches)
	}
	err = cmp.Or(printErr, err)
	if err != nil {
		failf(stderr, "lakewap janitor: %v", err)
		return 1
	}
	return 0
}
