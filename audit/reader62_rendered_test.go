package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// renderedScript is pandas' reading of a Parquet table's directory and
// its count of rows whose text (astype(str), as Great Expectations'
// pandas checks compare it) fails a regex (argv[3] "regex", argv[4] the
// pattern) or is not among values (argv[3] "in", the rest the values).
const renderedScript = `import sys, pandas as pd
c = pd.read_parquet(sys.argv[1])[sys.argv[2]].dropna().astype(str)
if sys.argv[3] == "regex":
    print(int((~c.str.contains(sys.argv[4], regex=True)).sum()))
else:
    print(int((~c.isin(sys.argv[4:])).sum()))`

// TestReader62NumbersRenderedOtherwiseAcrossFilesAreRefused: review 62.
// part-0.parquet gives x one type, part-1.parquet another, every value
// held exactly by both (so unionValues passes them). DuckDB reads the
// files together in their union's type and renders it so (3.0, 4.0 for a
// BIGINT 3 beside a DOUBLE 4.0; 1 for a BOOLEAN true beside a BIGINT 1;
// 4.00 for a DECIMAL(18,1) 4.0 beside a DECIMAL(38,2)); pandas 3.1.1
// reads them in the first file's type (3, 4; True; 4.0), and so does
// DuckDB's read_parquet without union_by_name. A regex and an
// accepted_values, which compare the text, passed where pandas found
// every row failing: refused, naming both files and the column. Columns
// of one type, or read by a check that does not compare text, pass.
func TestReader62NumbersRenderedOtherwiseAcrossFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name, first, second string
		check               Check
		args                []string // renderedScript's check
		refused             bool
	}{
		{"bigint_then_whole_double_regex", "3::BIGINT", "4.0::DOUBLE", Check{Kind: KindRegex, Column: "x", Pattern: `^\d+\.\d$`}, []string{"regex", `^\d+\.\d$`}, true},
		{"bigint_then_whole_double_accepted", "3::BIGINT", "4.0::DOUBLE", Check{Kind: KindAcceptedValues, Column: "x", Values: []string{"3.0", "4.0"}}, []string{"in", "3.0", "4.0"}, true},
		{"boolean_then_one_accepted", "true", "1::BIGINT", Check{Kind: KindAcceptedValues, Column: "x", Values: []string{"1"}}, []string{"in", "1"}, true},
		{"decimal_then_finer_decimal_regex", "4.0::DECIMAL(18,1)", "3.00::DECIMAL(38,2)", Check{Kind: KindRegex, Column: "x", Pattern: `\.\d\d$`}, []string{"regex", `\.\d\d$`}, true},
		{"bigint_then_integer_regex", "3::BIGINT", "4::INTEGER", Check{Kind: KindRegex, Column: "x", Pattern: `^\d+$`}, []string{"regex", `^\d+$`}, false},
		{"double_then_whole_double_accepted", "3.0::DOUBLE", "4.0::DOUBLE", Check{Kind: KindAcceptedValues, Column: "x", Values: []string{"3.0", "4.0"}}, []string{"in", "3.0", "4.0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT "+c.first+" AS x")
			src.write(t, "b1", "t/part-1.parquet", "SELECT "+c.second+" AS x")
			dir := filepath.Join(src.root, "b1", "t")
			rep, res, _ := auditLikePandas(t, src, renderedScript, append([]string{dir, "x"}, c.args...), FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") ||
				!strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, `column "x"`) {
				t.Fatalf("passed=%v %s %q (%s); pandas renders the values otherwise: want it refused naming both files and the column", rep.Passed, res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
	// A range reads the same numbers whatever their text.
	src := newBatchSource(t)
	src.write(t, "b1", "t/part-0.parquet", "SELECT 3::BIGINT AS x")
	src.write(t, "b1", "t/part-1.parquet", "SELECT 4.0::DOUBLE AS x")
	if rep, res := review39Audit(t, src, Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10)}); !rep.Passed {
		t.Fatalf("a range over a BIGINT 3 and a DOUBLE 4.0: %s %q; want it passed", res.Status, res.Message)
	}
}
