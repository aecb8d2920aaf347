package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A check that cannot run because DuckDB is out of memory makes the whole
// audit an error wrapping ErrInfrastructure (to be retried), while a check
// whose SQL is wrong is a check result with status error (the batch aborts).
func TestRunSplitsErrorsByCause(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet",
		"SELECT i::BIGINT AS id, i % 50 AS customer_id, repeat(i::VARCHAR, 30) AS status, 1.0::DOUBLE AS amount, TIMESTAMP '2025-06-01' AS updated_at FROM range(300000) r(i)")
	tight, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "8MB", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close()
	req := Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: tables, Checks: []Check{{Kind: KindUnique, Table: "billing", Columns: []string{"status"}}}}}
	_, err = tight.Run(context.Background(), req)
	if !errors.Is(err, ErrInfrastructure) || !strings.Contains(err.Error(), "Out of Memory") {
		t.Fatalf("out of memory: %v, want ErrInfrastructure", err)
	}

	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Name: "bad_sql", Kind: KindSQL, Table: "billing", SQL: "SELECT no_such_column FROM billing"},
		Check{Name: "bad_type", Kind: KindSQL, Table: "billing", SQL: "SELECT id FROM billing WHERE status::INTEGER > 0"})
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || rep.Passed {
			t.Errorf("%s: %s %q, want status error failing the report", c.Name, c.Status, c.Message)
		}
	}
}

func TestInfrastructureClassification(t *testing.T) {
	for msg, want := range map[string]bool{
		"Out of Memory Error: failed to allocate data of size 32.0 MiB": true,
		"IO Error: Could not write file \"x\": No space left on device": true,
		"IO Error: No magic bytes found at end of file 'x.parquet'":     false,
		"Binder Error: Referenced column \"x\" not found":               false,
		"Conversion Error: Could not convert string 'a' to INT32":       false,
	} {
		if got := infrastructure(errors.New(msg)); got != want {
			t.Errorf("infrastructure(%q) = %v, want %v", msg, got, want)
		}
	}
}
