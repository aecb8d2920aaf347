package audit

import (
	"database/sql"
	"os/exec"
	"strings"
	"testing"
)

// TestReview39MapDuplicateKeysReadAlike: a Parquet MAP holding one key
// twice in a row (review39_pyarrow_map_duplicate_keys.parquet, written by
// pyarrow 26.0.1 from MapArray.from_arrays: {k: 1, k: 2} and {j: 3}).
// DuckDB 1.5.6 reads both entries, {k=1, k=2} (cardinality 2, m['k'] 1),
// as PySpark 4.3.0 does, {k -> 1, k -> 2} (size 2, m['k'] 1: its
// mapKeyDedupPolicy is of maps it builds, not of maps it reads), and
// pandas 3.1.1, [('k', 1), ('k', 2)]. DuckDB 1.6.6 fails on them (Map keys
// must be unique), which would fail the audit, not pass it otherwise. The
// readers keep the same entries in the same order: a not_null and a
// unique (the two maps differ to every reader) pass, not refused.
func TestReview39MapDuplicateKeysReadAlike(t *testing.T) {
	if python, err := testPython(); err == nil && !testing.Short() {
		out, err := exec.Command(python, "-c", "import sys, pandas as pd; m = pd.read_parquet(sys.argv[1])['m']; print(list(m), int(m.isna().sum()))", "testdata/review39_pyarrow_map_duplicate_keys.parquet").CombinedOutput()
		if err != nil {
			t.Fatalf("pandas: %v: %s", err, out)
		}
		if got, want := strings.TrimSpace(string(out)), "[[('k', 1), ('k', 2)], [('j', 3)]] 0"; got != want {
			t.Fatalf("pandas reads %s, want %s", got, want)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var text, first, sizes string
	if err := db.QueryRow("SELECT string_agg(CAST(m AS VARCHAR), ' ' ORDER BY id), string_agg(CAST(m['k'] AS VARCHAR), ' ' ORDER BY id), string_agg(CAST(cardinality(m) AS VARCHAR), ' ' ORDER BY id) FROM read_parquet('testdata/review39_pyarrow_map_duplicate_keys.parquet')").Scan(&text, &first, &sizes); err != nil {
		t.Fatal(err)
	}
	if text != "{k=1, k=2} {j=3}" || first != "1" || sizes != "2 1" {
		t.Fatalf("DuckDB reads %s (m['k'] %s, sizes %s), want {k=1, k=2} {j=3} (1, 2 1), as Spark does", text, first, sizes)
	}
	for _, check := range []Check{{Kind: KindNotNull, Column: "m"}, {Kind: KindUnique, Column: "m"}} {
		t.Run(check.Kind, func(t *testing.T) {
			src, _ := review36File(t, "review39_pyarrow_map_duplicate_keys.parquet")
			rep, res := review39Audit(t, src, check)
			if !rep.Passed {
				t.Fatalf("%s %q (%s): want it passed", res.Status, res.Message, res.Observed)
			}
		})
	}
}
