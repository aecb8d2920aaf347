package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

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
	stored, err := runs.List(ctx, cfg.Kafka, *state, *dataset)
	if err == nil && *asJSON {
		err = runs.WriteJSON(stdout, stored)
	} else if err == nil {
		err = runs.WriteTable(stdout, stored, time.Now())
	}
	if err != nil {
		fmt.Fprintf(stderr, "lakewap runs: %v\n", err)
		return 1
	}
	return 0
}
