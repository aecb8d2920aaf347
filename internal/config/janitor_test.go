package config

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

const janitorBase = `
kafka: {brokers: ["k:9092"]}
lakefs: {endpoint: "http://lakefs:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing: {repository: lake}
`

func TestJanitorDefaults(t *testing.T) {
	c, err := ParseIn([]byte(janitorBase), func(string) (string, bool) { return "", false }, "")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Janitor.On() || c.Janitor.DryRun {
		t.Errorf("janitor on=%v dry_run=%v, want on and not dry", c.Janitor.On(), c.Janitor.DryRun)
	}
	if got := time.Duration(c.Janitor.Interval); got != time.Hour {
		t.Errorf("interval %v, want 1h", got)
	}
	if got := time.Duration(c.Janitor.AbandonedAfter); got != 24*time.Hour {
		t.Errorf("abandoned_after %v, want 24h", got)
	}
	if got := time.Duration(c.Datasets["billing"].AbortedRetention); got != 72*time.Hour {
		t.Errorf("aborted_retention %v, want 72h", got)
	}
}

func TestJanitorErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"janitor: {interval: 10s}", "janitor.interval"},
		{"janitor: {interval: -1h}", "janitor.interval"},
		{"janitor: {abandoned_after: -1h}", "janitor.abandoned_after"},
		{"janitor: {intervall: 1h}", "intervall"},
	} {
		_, err := ParseIn([]byte(janitorBase+tc.yaml+"\n"), func(string) (string, bool) { return "", false }, "")
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.field)
		}
	}
	bad := strings.Replace(janitorBase, "{repository: lake}", "{repository: lake, aborted_retention: -2h}", 1)
	if _, err := ParseIn([]byte(bad), func(string) (string, bool) { return "", false }, ""); err == nil ||
		!strings.Contains(err.Error(), "datasets.billing.aborted_retention") {
		t.Errorf("negative retention: %v", err)
	}
}

// TestJanitorKeepsEveryConfiguredSourceRef: a BatchLanded may branch from
// any of a dataset's source_refs, and the janitor must never delete a branch
// a dataset branches from. It protected the target and the source alone: a
// source ref named with the batch branches' prefix (wap-staging), its head
// older than janitor.abandoned_after, has no run and was deleted as
// abandoned.
func TestJanitorKeepsEveryConfiguredSourceRef(t *testing.T) {
	src := strings.Replace(janitorBase, "{repository: lake}", "{repository: lake, source_refs: [main, wap-staging]}", 1)
	c, err := ParseIn([]byte(src), func(string) (string, bool) { return "", false }, "")
	if err != nil {
		t.Fatal(err)
	}
	lake := &oldHeads{branches: []lakefs.Branch{{Name: "wap-staging", CommitID: strings.Repeat("a", 64)}, {Name: "wap-leftover", CommitID: strings.Repeat("b", 64)}}}
	j, err := janitor.New(janitor.Config{Lake: lake, Datasets: c.JanitorDatasets(),
		Runs: func(context.Context) ([]pipeline.Run, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Sweep(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lake.deleted, []string{"wap-leftover"}) {
		t.Errorf("the janitor deleted %v; want wap-leftover alone (wap-staging is a source ref of billing)", lake.deleted)
	}
}

// oldHeads is a lake whose branches' head commits are all 100 days old.
type oldHeads struct {
	branches []lakefs.Branch
	deleted  []string
}

func (o *oldHeads) ListBranches(context.Context, string, string) ([]lakefs.Branch, error) {
	return o.branches, nil
}

func (o *oldHeads) GetCommit(_ context.Context, _, ref string) (lakefs.Commit, error) {
	id := ref
	for _, b := range o.branches {
		if b.Name == ref {
			id = b.CommitID // its head, unmoved since the listing
		}
	}
	return lakefs.Commit{ID: id, CreationDate: time.Now().Add(-100 * 24 * time.Hour)}, nil
}

func (o *oldHeads) DeleteBranch(_ context.Context, _, b string) error {
	o.deleted = append(o.deleted, b)
	return nil
}
