package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("runs")
	path := fs.String("config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	state := fs.String("state", "", "only runs in this state (e.g. aborted, published, awaiting_writes)")
	dataset := fs.String("dataset", "", "only runs of this dataset")
	asJSON := fs.Bool("json", false, "print the stored runs as JSON, one per line")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *state != "" && !slices.Contains(schemas.States(), *state) {
		fmt.Fprintf(stderr, "lakewap runs: -state %q is not a run state (%s)\n", *state, strings.Join(schemas.States(), ", "))
		return 2
	}
	cfg, ok := loadClientConfig(*path, stderr)
	if !ok {
		return 2
	}
	if err := listRuns(ctx, cfg, runsFilter{State: *state, Dataset: *dataset, JSON: *asJSON}, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "lakewap runs: %v\n", err)
		return 1
	}
	return 0
}

type runsFilter struct {
	State, Dataset string
	JSON           bool
}

func listRuns(ctx context.Context, cfg *config.Config, f runsFilter, now time.Time, w io.Writer) error {
	store, err := runs.Open(cfg.Kafka)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stored, err := store.Load(ctx)
	if err != nil {
		return err
	}
	if stored = runs.Filter(stored, f.State, f.Dataset); f.JSON {
		return runs.WriteJSON(w, stored)
	}
	return runs.WriteTable(w, stored, now)
}
