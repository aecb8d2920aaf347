package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/runs"
)

func cmdJanitor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("janitor")
	path := fs.String("config", "lakewap.yaml", "config file")
	dry := fs.Bool("dry-run", false, "print what would be deleted, delete nothing")
	all := fs.Bool("all", false, "also print the branches that are kept, and why")
	asJSON := fs.Bool("json", false, "print decisions as JSON, one per line")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	lake, err := daemon.Lake(cfg, log, nil)
	var j *janitor.Janitor
	if err == nil {
		j, err = daemon.NewJanitor(cfg, lake, log, nil)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lakewap janitor: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ds, err := j.Sweep(ctx, *dry)
	if *asJSON {
		err = cmp.Or(runs.WriteJSON(stdout, slices.DeleteFunc(ds, func(d janitor.Decision) bool { return !d.Delete && !*all })), err)
	} else {
		err = cmp.Or(runs.WriteDecisions(stdout, ds, *dry, *all, time.Now()), err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lakewap janitor: %v\n", err)
		return 1
	}
	return 0
}
