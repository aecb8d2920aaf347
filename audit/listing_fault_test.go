package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A table whose files DuckDB reads but whose columns or metadata could not
// be listed is refused: the reader checks that need the listing (a
// footer's pandas metadata, ARROW:schema, Spark's calendar keys, INT96,
// case collisions) would otherwise be skipped and the table passed unseen.
// Before, any listing error but parquet_schema's passed the table. The
// failure is injected: no file was found that makes parquet_kv_metadata
// or a lone CSV read fail while the table's read succeeds (a guard).
func TestTableWhoseColumnsCannotBeListedIsRefused(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatCSV} {
		t.Run(format, func(t *testing.T) {
			src := newBatchSource(t)
			dir := filepath.Join(src.root, "b1", "t")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (SELECT i AS id FROM range(3) r(i)) TO %s (FORMAT %s)",
				quoteLiteral(filepath.Join(dir, "a."+map[string]string{FormatParquet: "parquet", FormatCSV: "csv"}[format])), format))
			run := func(fault error) schemas.AuditReport {
				e := newEngine(t, src, "")
				if fault != nil {
					e.columnsFault = func() error { return fault }
				}
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: format}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "id"}}}})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			if rep := run(nil); !rep.Passed {
				t.Fatalf("without a listing failure: %s", refusal(rep))
			}
			rep := run(errors.New("listing failed in the test"))
			if rep.Passed || rep.Checks[0].Status != schemas.StatusError || !strings.Contains(rep.Checks[0].Message, "cannot list their columns or metadata") {
				t.Fatalf("a listing failure: passed %v, %s %q; want the table refused", rep.Passed, rep.Checks[0].Status, rep.Checks[0].Message)
			}
		})
	}
}

// TestListingOutOfMemoryIsInfrastructure: a listing of a table's columns
// that DuckDB could not make for want of memory (shared by every run in
// flight) is the machine's failure, retried later, not the table's refusal
// as one whose columns cannot be listed (review 41 suspected the refusal;
// the error's text already classes the run as infrastructure: this holds
// it).
func TestListingOutOfMemoryIsInfrastructure(t *testing.T) {
	src := newBatchSource(t)
	dir := filepath.Join(src.root, "b1", "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copySQL(t, fmt.Sprintf("COPY (SELECT i AS id FROM range(3) r(i)) TO %s (FORMAT parquet)", quoteLiteral(filepath.Join(dir, "a.parquet"))))
	e := newEngine(t, src, "")
	e.columnsFault = func() error {
		return errors.New("Out of Memory Error: could not allocate block of size 256.0 KiB (488.2 MiB/488.2 MiB used)")
	}
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "id"}}}})
	if !errors.Is(err, ErrInfrastructure) {
		t.Fatalf("an out-of-memory listing: err %v, report passed %v %s; want an infrastructure error", err, rep.Passed, refusal(rep))
	}
}
