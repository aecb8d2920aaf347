package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview36Int96NanosecondsUnderTextChecksAreRefused: an INT96 time
// holds nanoseconds, which pyarrow and pandas read and DuckDB 1.5 (and
// Spark) truncates to microseconds. review36_int96_nanoseconds.parquet was
// written by pyarrow 26.0.1 (use_deprecated_int96_timestamps) from
// 2024-01-01 01:02:03.000000500 and 2024-01-02 04:05:06: DuckDB reads
// 01:02:03 and 04:05:06, pandas 3.1.1 renders 01:02:03.000000500 and
// 04:05:06.000000000 (every value of the column with nine digits). A regex
// of whole seconds and lakewap's accepted_values of their text passed
// where pandas finds both rows failing. The same times in whole seconds
// (review36_int96_seconds.parquet) read alike and pass, and so does a
// not_null.
func TestReview36Int96NanosecondsUnderTextChecksAreRefused(t *testing.T) {
	const whole = `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`
	times := []string{"2024-01-01 01:02:03", "2024-01-02 04:05:06"}
	cases := []struct {
		name, file string
		check      Check
		pandas     string // prints the rows pandas finds failing the check, column c
		refused    bool
	}{
		{"regex", "review36_int96_nanoseconds.parquet", Check{Kind: KindRegex, Column: "t", Pattern: whole}, `print(int((~c.astype(str).str.match(r"` + whole + `")).sum()))`, true},
		{"accepted_values", "review36_int96_nanoseconds.parquet", Check{Kind: KindAcceptedValues, Column: "t", Values: times}, `print(int((~c.astype(str).isin(["` + strings.Join(times, `", "`) + `"])).sum()))`, true},
		{"not_null", "review36_int96_nanoseconds.parquet", Check{Kind: KindNotNull, Column: "t"}, `print(int(c.isna().sum()))`, false},
		{"regex_of_seconds", "review36_int96_seconds.parquet", Check{Kind: KindRegex, Column: "t", Pattern: whole}, `print(int((~c.astype(str).str.match(r"` + whole + `")).sum()))`, false},
		{"accepted_values_of_seconds", "review36_int96_seconds.parquet", Check{Kind: KindAcceptedValues, Column: "t", Values: times}, `print(int((~c.astype(str).isin(["` + strings.Join(times, `", "`) + `"])).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := review36File(t, c.file)
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "t"}, FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "t"`) || !strings.Contains(res.Message, "nanosecond") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview36SparksInt96TimesHaveNoNanoseconds: Spark 4.3.0's INT96
// times (microseconds) and pyarrow's of whole seconds pass the Go reading
// of int96Nanos; pyarrow's of 500 nanoseconds past one does not.
func TestReview36SparksInt96TimesHaveNoNanoseconds(t *testing.T) {
	for file, refused := range map[string]bool{"spark_int96_corrected.parquet": false, "int96_in_range.parquet": false,
		"review36_int96_seconds.parquet": false, "review36_int96_nanoseconds.parquet": true} {
		path, err := filepath.Abs(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		ft, err := readFooter(path)
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for _, c := range ft.chunks {
			if c.physical == ptInt96 && len(c.parts) == 1 {
				read = append(read, c.parts[0])
			}
		}
		if len(read) == 0 {
			t.Fatalf("%s: no INT96 column", file)
		}
		if err := int96FileNanos(context.Background(), path, ft.chunks, read); (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", file, err, refused)
		}
	}
}
