package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestForgedParquetStatistics is the attack of a writer who controls the
// Parquet footer: the data holds x = 1..10 and 1000, the column statistics
// claim a maximum of 50. A range check must read the data, not the claim.
func TestForgedParquetStatistics(t *testing.T) {
	src := newDirSource(t)
	dst := filepath.Join(src.root, "main", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	copySQL(t, "COPY (SELECT i::BIGINT AS x FROM range(1, 11) r(i) UNION ALL SELECT 1000::BIGINT) TO "+
		quoteLiteral(dst)+" (FORMAT parquet, COMPRESSION uncompressed)")
	honest, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeMax(t, honest, 1000, 50, dst)

	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
		Tables: []Table{{Name: "t", Path: "t/"}},
		Checks: []Check{{Name: "x_range", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(100)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusFail {
		t.Errorf("range over a file whose statistics claim max 50 (%d bytes): %s %q, want fail (the data holds 1000)", len(forged), c.Status, c.Observed)
	}
}

// forgeMax rewrites the footer's copies of the int64 value from to claim,
// leaving the data page's copy: it tries each occurrence as the data one
// and keeps the file whose data still sums to the honest total.
func forgeMax(t *testing.T, honest []byte, from, claim int64, dst string) []byte {
	t.Helper()
	var a, b [8]byte
	binary.LittleEndian.PutUint64(a[:], uint64(from))
	binary.LittleEndian.PutUint64(b[:], uint64(claim))
	var at []int
	for i := 0; i+8 <= len(honest); i++ {
		if bytes.Equal(honest[i:i+8], a[:]) {
			at = append(at, i)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, keep := range at {
		f := bytes.Clone(honest)
		for _, i := range at {
			if i != keep {
				copy(f[i:i+8], b[:])
			}
		}
		if err := os.WriteFile(dst, f, 0o644); err != nil {
			t.Fatal(err)
		}
		var sum, max sql.NullInt64
		if db.QueryRow("SELECT sum(x), max(x) FROM read_parquet("+quoteLiteral(dst)+")").Scan(&sum, &max) == nil &&
			sum.Int64 == 1055 && len(at) > 1 {
			return f
		}
	}
	t.Fatalf("could not forge the statistics: %d copies of %d in the file", len(at), from)
	return nil
}
