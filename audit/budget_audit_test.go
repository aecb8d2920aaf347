package audit

import (
	"context"
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
