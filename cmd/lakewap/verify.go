package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/runs"
)

// verifyLimit bounds the commits lakewap verify lists.
const verifyLimit = 10000

// cmdVerify lists the commits of a dataset's target as lakewap's attested
// publishes or not: exit 0 when every one is attested, 1 when any is not,
// 2 when it cannot tell.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify")
	path := fs.String("config", "lakewap.yaml", "config file")
	dataset := fs.String("dataset", "", "dataset whose target is verified (required)")
	sinceFlag := fs.String("since", "", "only commits made since then, RFC 3339 (default: all, up to 10000)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lakewap verify -config FILE -dataset D [-since T]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakewap verify: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *dataset == "" {
		fmt.Fprintln(stderr, "lakewap verify: -dataset is required")
		return 2
	}
	var since time.Time
	if *sinceFlag != "" {
		t, err := time.Parse(time.RFC3339, *sinceFlag)
		if err != nil {
			fmt.Fprintf(stderr, "lakewap verify: -since %q is not RFC 3339 (like 2026-11-29T02:00:00Z)\n", *sinceFlag)
			return 2
		}
		since = t
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	ds, ok := cfg.Datasets[*dataset]
	if !ok {
		fmt.Fprintf(stderr, "lakewap verify: dataset %q is not in %s (it has %s)\n", *dataset, *path, strings.Join(slices.Sorted(maps.Keys(cfg.Datasets)), ", "))
		return 2
	}
	key, err := cfg.AttestationKey()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap verify: %v\n", err)
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	lake, err := daemon.Lake(cfg, log, nil)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap verify: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Runner.StepTimeout.Std())
	defer cancel()
	commits, err := lake.FirstParents(ctx, ds.Repository, ds.Target, since, verifyLimit)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap verify: log of %s in %s: %v\n", ds.Target, ds.Repository, err)
		return 2
	}
	digest := audit.SuiteDigest(ds.Suite)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMIT\tDATE\tVERDICT\tDETAIL")
	bad := 0
	for _, c := range commits {
		verdict, detail := audit.Verify(audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata}, *dataset, digest, key)
		if verdict == audit.VerifyUnattested {
			bad++
			detail = fmt.Sprintf("%s; %q by %s", detail, c.Message, c.Committer)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", runs.Short(c.ID), c.CreationDate.Format(time.RFC3339), verdict, runs.Printable(detail))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d commits of %s in %s, %d not attested by lakewap\n", len(commits), ds.Target, ds.Repository, bad)
	if bad > 0 {
		return 1
	}
	return 0
}
