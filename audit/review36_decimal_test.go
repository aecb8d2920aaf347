package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// review36File is table t's one file a.parquet on branch b1, the bytes of
// testdata/name.
func review36File(t *testing.T, name string) (*dirSource, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return src, dst
}

// TestReview36DecimalPrecisionsThatDisagreeAreRefused: a DECIMAL leaf's
// footer gives its precision twice, in the element and in its logical
// type. DuckDB 1.5 reads the element's, and into an integer of that
// precision's width, pyarrow and Spark the logical type's.
// review36_decimal_precision_4_logical_9.parquet was written by pyarrow
// 26.0.1 (DECIMAL(9,2) 1000.00 and 1.50 over INT32, without statistics),
// the element's precision forged to 4: DuckDB reads DECIMAL(4,2) -310.72
// (100000 wrapped into 16 bits), pandas 1000.00, and a range check of at
// most 100 passed.
func TestReview36DecimalPrecisionsThatDisagreeAreRefused(t *testing.T) {
	hundred := 100.0
	src, dst := review36File(t, "review36_decimal_precision_4_logical_9.parquet")
	script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nprint(int((c.astype(float) > 100).sum()))"
	rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, Check{Kind: KindRange, Column: "a", Max: &hundred}, true)
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "precision") {
		t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the precisions", res.Status, res.Message, res.Observed)
	}
	t.Logf("refused: %s", res.Message)
}
