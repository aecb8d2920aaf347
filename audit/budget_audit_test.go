package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// An audit over one of its budgets errors its checks before it downloads
// anything: a writer cannot make the daemon fetch a million files.
func TestAuditBudgetsErrorBeforeDownloading(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"files", Options{MaxFiles: 2}, "3 files of"},
		{"bytes", Options{MaxBytes: 1000}, "over the budget of 100000 files (audit.max_files) and 1000 bytes"},
		{"listing", Options{MaxListObjects: 2}, "objects under gold/billing/ at b1, over the listing budget of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fixture(t)
			opts := tt.opts
			opts.Source, opts.WorkDir = src, t.TempDir()
			e, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
				BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{
					{Kind: KindNotNull, Table: "billing", Column: "id"},
					{Name: "custom", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM billing WHERE id IS NULL"},
				}}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Passed {
				t.Fatalf("passed over the budget: %+v", rep.Checks)
			}
			for _, c := range rep.Checks {
				if c.Status != schemas.StatusError || !strings.Contains(c.Message, tt.want) || !strings.Contains(c.Message, ErrOverBudget.Error()) {
					t.Errorf("%s: %s %q, want an error containing %q", c.Name, c.Status, c.Message, tt.want)
				}
			}
			src.mu.Lock()
			defer src.mu.Unlock()
			for k := range src.downloads {
				if strings.Contains(k, "gold/billing/") {
					t.Errorf("downloaded %s over the budget", k)
				}
			}
		})
	}
}

// stoppingSource is a Source whose listings stop over a limit, as the
// lakeFS client's do (lakefs.Config.MaxListEntries, through auditsource).
type stoppingSource struct{ *dirSource }

func (s stoppingSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	return nil, fmt.Errorf("%w: lakefs list objects %s %s:%s: listing over its limit", ErrOverBudget, repo, ref, prefix)
}

// A listing the Source stops over its limit (the lakeFS client does, past
// audit.max_list_objects, rather than hold every entry) errors the table's
// checks, as a listing the audit counts over the budget itself does: the
// batch is aborted, not retried as an infrastructure failure.
func TestListingStoppedBySourceErrorsTheChecks(t *testing.T) {
	src := fixture(t)
	e, err := New(Options{Source: stoppingSource{src}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}}})
	if err != nil {
		t.Fatalf("Run: %v, want the checks to error", err)
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, "listing over its limit") {
			t.Errorf("%s: %s %q, want an error naming the stopped listing", c.Name, c.Status, c.Message)
		}
	}
}
