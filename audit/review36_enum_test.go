package audit

import (
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview36EnumColumnUnderTextChecksIsRefused:
// review36_parquet_mr_enum.parquet was written by parquet-mr 1.17.0
// (ExampleParquetWriter, through PySpark 4.3.0's JVM), column e a
// BYTE_ARRAY of the ENUM type (as parquet-avro writes an Avro enum) of
// abc, de, abc, and s one of STRING. DuckDB and Spark read e as text,
// pyarrow 26.0.1 as binary: pandas 3.1.1 reads b'abc', and a Great
// Expectations value_set of strings passed where pandas' isin finds every
// row failing. lakewap's own accepted_values and a regex of e (they
// compare text, and pandas' astype(str) decodes the bytes), a not_null of
// e and checks of s read alike and pass.
func TestReview36EnumColumnUnderTextChecksIsRefused(t *testing.T) {
	cases := []struct {
		name    string
		check   Check
		pandas  string // prints the rows pandas finds failing the check, column c
		refused bool
	}{
		{"regex", Check{Kind: KindRegex, Column: "e", Pattern: "^(abc|de)$"}, `print(int((~c.astype(str).str.match("^(abc|de)$")).sum()))`, false},
		{"great_expectations_value_set", Check{Kind: KindAcceptedValues, Column: "e", Values: []string{"abc", "de"}, ValueTypes: []string{valueString, valueString}}, `print(int((~c.isin(["abc", "de"])).sum()))`, true},
		{"accepted_values", Check{Kind: KindAcceptedValues, Column: "e", Values: []string{"abc", "de"}}, `print(int((~c.astype(str).isin(["abc", "de"])).sum()))`, false},
		{"not_null", Check{Kind: KindNotNull, Column: "e"}, `print(int(c.isna().sum()))`, false},
		{"regex_of_a_string", Check{Kind: KindRegex, Column: "s", Pattern: "^x(abc|de)$"}, `print(int((~c.astype(str).str.match("^x(abc|de)$")).sum()))`, false},
		{"accepted_values_of_a_string", Check{Kind: KindAcceptedValues, Column: "s", Values: []string{"xabc", "xde"}}, `print(int((~c.isin(["xabc", "xde"])).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := review36File(t, "review36_parquet_mr_enum.parquet")
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, c.check.Column}, FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "e"`) || !strings.Contains(res.Message, "ENUM") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
