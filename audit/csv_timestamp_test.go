package audit

import (
	"path/filepath"
	"testing"
)

// TestTimestampTextUnderTextChecks: DuckDB types a CSV field or a JSON
// string such as 2024-01-02T03:04:05 as a TIMESTAMP (pyarrow too) and
// renders it 2024-01-02 03:04:05, while pandas keeps the text. A regex or
// accepted_values check judged DuckDB's rendering: a pattern of a space
// between date and time passed text that pandas' readers see with a T, a
// fraction .000 or a zone Z. Where a text check (accepted_values, regex,
// unique) reads such a column, a field whose text is not its rendering is
// refused; elsewhere (freshness, not_null, range) the typed reading is
// every typing reader's and stays.
func TestTimestampTextUnderTextChecks(t *testing.T) {
	spaced := `^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`
	cases := []struct {
		name, file, text string
		check            Check
		passes           bool
	}{
		{"csv_T", "a.csv", "v\n2024-01-02T03:04:05\n2024-01-02 03:04:06\n", Check{Kind: KindRegex, Column: "v", Pattern: spaced}, false},
		{"csv_fraction", "a.csv", "v\n2024-01-02 03:04:05.000\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"2024-01-02 03:04:05"}}, false},
		{"csv_zone_Z", "a.csv", "v\n2024-01-02T03:04:05Z\n", Check{Kind: KindRegex, Column: "v", Pattern: `\+00$`}, false},
		{"json_T", "a.jsonl", "{\"v\": \"2024-01-02T03:04:05\"}\n", Check{Kind: KindRegex, Column: "v", Pattern: spaced}, false},
		{"csv_canonical", "a.csv", "v\n2024-01-02 03:04:05\n2024-01-02 03:04:06\n", Check{Kind: KindRegex, Column: "v", Pattern: spaced}, true},
		{"csv_T_not_null", "a.csv", "v\n2024-01-02T03:04:05\n", Check{Kind: KindNotNull, Column: "v"}, true},
		{"csv_T_other_column", "a.csv", "id,v\n1,2024-01-02T03:04:05\n", Check{Kind: KindAcceptedValues, Column: "id", Values: []string{"1"}}, true},
		{"json_T_not_null", "a.jsonl", "{\"v\": \"2024-01-02T03:04:05\"}\n", Check{Kind: KindNotNull, Column: "v"}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/"+c.file, c.text)
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		format := FormatCSV
		if filepath.Ext(c.file) == ".jsonl" {
			format = FormatJSONL
		}
		rep := auditTableAt(t, e, c.name+"/", format, c.check)
		if got := rep.Checks[0]; rep.Passed != c.passes {
			t.Errorf("%s: passed %v (%s %s), want %v", c.name, rep.Passed, got.Observed, got.Message, c.passes)
		}
	}
}
