package cli

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
	"github.com/lakewap/lakewap/schemas"
)

// verifyLimit bounds the commits lakewap verify lists.
const verifyLimit = 10000

// Bounds of lakewap verify's table: an unattested commit's message and
// committer are whoever made it's (createCommitRecord takes any), as are its
// parents the detail may list, and lakeFS bounds none of them; -json keeps
// them whole.
const (
	maxVerifyMessageBytes   = 256
	maxVerifyCommitterBytes = 128
	maxVerifyDetailBytes    = 1024
)

// VerifyOptions are lakewap verify's flags.
type VerifyOptions struct {
	Config, Dataset string
	Since           string // RFC 3339; "": all commits, up to verifyLimit
	JSON            bool
}

// VerifiedCommit is one line of lakewap verify, as -json prints it.
type VerifiedCommit struct {
	Commit    string    `json:"commit"`
	Date      time.Time `json:"date"`
	Verdict   string    `json:"verdict"`
	Detail    string    `json:"detail"`
	Message   string    `json:"message"`
	Committer string    `json:"committer"`
}

// Verify lists the commits of a dataset's target as lakewap's attested
// publishes or not: exit 0 when every one is attested, 1 when any is not,
// 2 when it cannot tell. An attested commit that lakewap's own lakeFS user
// (the config's) did not make is not attested, naming its committer.
func Verify(ctx context.Context, o VerifyOptions, stdout, stderr io.Writer) int {
	if o.Dataset == "" {
		fmt.Fprintln(stderr, "lakewap verify: -dataset is required")
		return 2
	}
	var since time.Time
	if o.Since != "" {
		t, err := time.Parse(time.RFC3339, o.Since)
		if err != nil {
			failf(stderr, "lakewap verify: -since %q is not RFC 3339 (like 2026-11-29T02:00:00Z)", o.Since)
			return 2
		}
		since = t
	}
	cfg, ok := LoadConfig(o.Config, stderr)
	if !ok {
		return 2
	}
	ds, ok := cfg.Datasets[o.Dataset]
	if !ok {
		failf(stderr, "lakewap verify: dataset %q is not in %s (it has %s)", o.Dataset, o.Config, strings.Join(slices.Sorted(maps.Keys(cfg.Datasets)), ", "))
		return 2
	}
	key, err := cfg.AttestationKey()
	if err != nil {
		failf(stderr, "lakewap verify: %v", err)
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	lake, err := daemon.Lake(cfg, log, nil, nil)
	if err != nil {
		failf(stderr, "lakewap verify: %v", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Runner.StepTimeout.Std())
	defer cancel()
	commits, err := lake.FirstParents(ctx, ds.Repository, ds.Target, since, verifyLimit)
	if err != nil {
		failf(stderr, "lakewap verify: log of %s in %s: %v", ds.Target, ds.Repository, err)
		return 2
	}
	// lakewap's user as lakeFS names the committer of its merges: the
	// config's credentials are lakewap's. A commit another user made is not
	// lakewap's publish, whatever attestation it carries (review 57); when
	// lakeFS names no user, attestations are taken as before.
	own, err := lake.Committer(ctx)
	if err != nil {
		failf(stderr, "lakewap verify: who lakewap is to lakeFS (its current user): %v", err)
		return 2
	}
	if own == "" {
		fmt.Fprintln(stderr, "lakewap verify: lakeFS names no current user; commits' committers are not compared with lakewap's")
	}
	digest := audit.SuiteDigest(ds.Suite)
	var lines []VerifiedCommit
	bad := 0
	for _, c := range commits {
		info := audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}
		verdict, detail := audit.Verify(info, o.Dataset, digest, key)
		if err := audit.MadeBy(info, own); verdict == audit.VerifyAttested && err != nil {
			verdict, detail = audit.VerifyUnattested, err.Error()
		}
		if verdict == audit.VerifyUnattested {
			bad++
		}
		lines = append(lines, VerifiedCommit{Commit: c.ID, Date: c.CreationDate, Verdict: verdict, Detail: detail,
			Message: c.Message, Committer: c.Committer})
	}
	if o.JSON {
		if err := runs.WriteJSON(stdout, lines); err != nil {
			failf(stderr, "lakewap verify: %v", err)
			return 2
		}
	} else {
		writeVerified(stdout, lines)
		fmt.Fprintf(stdout, "\n%d commits of %s in %s, %d not attested by lakewap\n", len(commits), ds.Target, ds.Repository, bad)
	}
	if key == nil {
		// Attested then means lakewap's shape and committer, which a
		// commit record can copy: say so wherever the verdicts go.
		fmt.Fprintln(stderr, "lakewap verify: attestations are "+audit.Unsigned+": a commit record naming lakewap's lakeFS user, "+
			"moved onto the target with an attestation written to match it, is listed attested; set it to have them signed")
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// writeVerified prints the commits as a table; an unattested one names
// its message and committer.
func writeVerified(w io.Writer, lines []VerifiedCommit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMIT\tDATE\tVERDICT\tDETAIL")
	for _, l := range lines {
		detail := l.Detail
		if l.Verdict == audit.VerifyUnattested {
			detail = fmt.Sprintf("%s; %q by %s", detail, schemas.Clip(l.Message, maxVerifyMessageBytes),
				schemas.Clip(l.Committer, maxVerifyCommitterBytes))
		}
		detail = schemas.Clip(runs.Printable(detail), maxVerifyDetailBytes)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", runs.Printable(runs.Short(l.Commit)), l.Date.Format(time.RFC3339), l.Verdict, detail)
	}
	tw.Flush()
}
