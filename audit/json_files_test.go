package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestJSONFilesPandasReadsOneAtATime: pandas.read_json takes one file, so
// a pandas reader of a JSON lines table of several files reads each alone
// and concatenates them, and read_json's conversions (a column named like
// a date whose numbers are all beyond a year in seconds to datetimes, a
// column of strings that are all numbers' text to numbers) are decided per
// file. The audit judged them over the whole table: with one file's
// numbers under a year, or one file's text not a number, it read nothing
// converted, and each check below passed where pandas 3.1.1, run here
// (each file read alone, then pd.concat), finds rows failing. Files whose
// every conversion agrees with DuckDB's reading pass.
func TestJSONFilesPandasReadsOneAtATime(t *testing.T) {
	lo, hi := 0.0, 2e9
	stamps := map[string]string{
		"a.jsonl": "{\"id\": 1, \"created_at\": 1704067200}\n{\"id\": 2, \"created_at\": 1704067201}\n",
		"b.jsonl": "{\"id\": 3, \"created_at\": 17}\n",
	}
	cases := []struct {
		name    string
		files   map[string]string
		check   Check
		pandas  string // prints the rows pandas finds failing the check, column c
		refused bool
	}{
		{"dates_regex", stamps, Check{Kind: KindRegex, Column: "created_at", Pattern: `^[0-9]+$`},
			`print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`, true},
		{"dates_range", stamps, Check{Kind: KindRange, Column: "created_at", Min: &lo, Max: &hi},
			"try:\n    print(int((~((c.dropna() >= 0) & (c.dropna() <= 2e9))).sum()))\nexcept TypeError as e:\n    print('TypeError', e)", true},
		{"dates_under_a_year_in_every_file", map[string]string{
			"a.jsonl": "{\"created_at\": 1704067200}\n{\"created_at\": 16}\n", "b.jsonl": "{\"created_at\": 17}\n"},
			Check{Kind: KindRegex, Column: "created_at", Pattern: `^[0-9]+$`},
			`print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`, false},
		{"numbers_unique", map[string]string{
			"a.jsonl": "{\"code\": \"01\"}\n{\"code\": \"1\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindUnique, Column: "code"}, "print(int(c.dropna().duplicated().sum()))", true},
		{"numbers_unique_across_files", map[string]string{
			"a.jsonl": "{\"code\": \"01\"}\n", "b.jsonl": "{\"code\": \"1\"}\n", "c.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindUnique, Column: "code"}, "print(int(c.dropna().duplicated().sum()))", true},
		{"numbers_regex", map[string]string{
			"a.jsonl": "{\"code\": \"007\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindRegex, Column: "code", Pattern: `^(?:0|a)`},
			`print(int((~c.dropna().astype(str).str.contains("^(?:0|a)")).sum()))`, true},
		{"numbers_value_set", map[string]string{
			"a.jsonl": "{\"code\": \"01\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindAcceptedValues, Column: "code", Values: []string{"01", "abc"}, ValueTypes: []string{"string", "string"}},
			`print(int((~c.dropna().isin(["01", "abc"])).sum()))`, true},
		{"numbers_nan", map[string]string{
			"a.jsonl": "{\"code\": \"NaN\"}\n{\"code\": \"1\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindNotNull, Column: "code"}, "print(int(c.isna().sum()))", true},
		{"numbers_rendered_alike", map[string]string{
			"a.jsonl": "{\"code\": \"1\"}\n{\"code\": \"25\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindRegex, Column: "code", Pattern: `^[0-9a-c]+$`},
			`print(int((~c.dropna().astype(str).str.contains("^[0-9a-c]+$")).sum()))`, false},
		{"text_in_every_file", map[string]string{
			"a.jsonl": "{\"code\": \"01\"}\n{\"code\": \"x\"}\n", "b.jsonl": "{\"code\": \"abc\"}\n"},
			Check{Kind: KindUnique, Column: "code"}, "print(int(c.dropna().duplicated().sum()))", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			var paths []string
			for name, text := range c.files {
				src.writeRaw(t, "b1", "t/"+name, text)
				paths = append(paths, filepath.Join(src.root, "b1", "t", name))
			}
			script := "import sys, pandas as pd\nc = pd.concat([pd.read_json(f, lines=True) for f in sorted(sys.argv[2:])], ignore_index=True)[sys.argv[1]]\n" + c.pandas
			rep, res, refused := auditLikePandas(t, src, script, append([]string{c.check.Column}, paths...), FormatJSONL, c.check, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming read_json", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
