package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCSVDialectIsNotSniffed (review 5): pandas, pyarrow and Spark read a
// CSV file as comma-separated, quoted with ", with no comment lines and no
// rows skipped before the header. DuckDB's read_csv guesses all of these
// from the file. Each table below is one a writer can shape so that
// DuckDB's guess reads values that pass the check while pandas and pyarrow
// (checked with both, 26.0.1 and 3.1.1) read values that fail it; the
// audit must not pass any of them.
func TestCSVDialectIsNotSniffed(t *testing.T) {
	zero := 0.0
	cases := []struct {
		name, csv string
		check     Check
		pandas    string // what pandas and pyarrow read
	}{
		{name: "semicolons_make_more_columns", csv: "id,q;id;r\n1,x;5;z\n1,y;6;z\n1,w;7;z\n",
			check:  Check{Name: "c", Kind: KindUnique, Table: "t", Column: "id"},
			pandas: "columns id and q;id;r, id 1, 1, 1: three duplicate rows (DuckDB sniffs ';': id 5, 6, 7)"},
		{name: "hash_line_read_as_a_comment", csv: "id,v\n1,a\n#2,\n3,c\n",
			check:  Check{Name: "c", Kind: KindNotNull, Table: "t", Column: "v"},
			pandas: "three rows, v NULL in the second (DuckDB sniffs '#' as a comment and reads two rows)"},
		{name: "hash_line_hides_a_row", csv: "id,v\n1,a\n#2,b\n3,c\n",
			check:  Check{Name: "c", Kind: KindRowCount, Table: "t", Min: &zero, Max: new(float64(2))},
			pandas: "three rows (DuckDB: two)"},
		{name: "rows_above_the_header_skipped", csv: "v\nid,v\n1,a\n2,b\n",
			check:  Check{Name: "c", Kind: KindAcceptedValues, Table: "t", Column: "v", Values: []string{"a", "b"}},
			pandas: "one column v: id, a, b; 'id' is not accepted (DuckDB skips the first line: v a, b)"},
		{name: "single_quotes", csv: "id,v\n'1,2',a\n'1,3',b\n",
			check:  Check{Name: "c", Kind: KindUnique, Table: "t", Column: "id"},
			pandas: "three fields in a row of two columns (pyarrow: an error; DuckDB sniffs ' as the quote: 1,2 and 1,3)"},
		{name: "empty_line_in_a_file_of_one_column", csv: "id\n1\n\n2\n",
			check:  Check{Name: "c", Kind: KindRowCount, Table: "t", Min: new(float64(3))},
			pandas: "two rows: pandas, pyarrow and Spark skip an empty line (DuckDB reads a row whose id is NULL: three)"},
		{name: "empty_last_lines_in_a_file_of_one_column", csv: "id\n1\n2\n\n\n",
			check:  Check{Name: "c", Kind: KindRowCount, Table: "t", Min: new(float64(3))},
			pandas: "two rows (DuckDB: a row whose id is NULL per empty line but the last)"},
		{name: "blank_line_of_spaces_in_a_file_of_one_column", csv: "id\n1\n  \n2\n",
			check:  Check{Name: "c", Kind: KindRowCount, Table: "t", Min: new(float64(3))},
			pandas: "two rows (pandas skips a line of spaces too)"},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.csv", c.csv)
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep := auditTableAt(t, e, c.name+"/", FormatCSV, c.check)
		if rep.Passed {
			t.Errorf("%s: lakewap passes %s (%s) while pandas reads %s", c.name, c.check.Kind, rep.Checks[0].Observed, c.pandas)
			continue
		}
		t.Logf("%s: refused: %s", c.name, refusal(rep))
	}
}

// TestCSVFieldsDuckDBTypesAreTheirText (review 5): DuckDB types a CSV
// column from its fields (BOOLEAN, DATE, TIME, BIGINT) where pandas and
// pyarrow (checked: 3.1.1, 26.0.1) keep text, and a check comparing text
// (accepted_values, regex) then reads DuckDB's rendering of the value:
// t and f as true and false, 2024/01/02 as 2024-01-02, 1:02:03 as
// 01:02:03, 0x10 as 16. The audit must not pass a field a text check
// reads otherwise than those readers; fields written as DuckDB renders
// their value (and numbers pandas reads as numbers) pass.
func TestCSVFieldsDuckDBTypesAreTheirText(t *testing.T) {
	cases := []struct {
		name, csv string
		check     Check
		passes    bool
	}{
		{"boolean_letters", "v\nt\nf\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"true", "false"}}, false},
		{"date_slashes", "v\n2024/01/02\n2024/01/03\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{4}-\d{2}-\d{2}$`}, false},
		{"date_unpadded", "v\n2024-1-2\n2024-01-03\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{4}-\d{2}-\d{2}$`}, false},
		{"time_unpadded", "v\n1:02:03\n01:02:04\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{2}:`}, false},
		{"hex_integer", "v\n0x10\n17\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"16", "17"}}, false},
		{"iso_dates", "v\n2024-01-02\n2024-01-03\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{4}-\d{2}-\d{2}$`}, true},
		// pandas reads False as false, Spark (inferSchema off, its default) as the text False:
		// refused since TestTablesSparkReadsOtherwiseAreRefused.
		{"booleans", "v\ntrue\nFalse\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"true", "false"}}, false},
		{"booleans_as_rendered", "v\ntrue\nfalse\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"true", "false"}}, true},
		{"pandas_booleans", "v\nTrue\nFALSE\n", Check{Kind: KindNotNull, Column: "v"}, true},
		{"integers", "v\n5\n-7\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"5", "-7"}}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.csv", c.csv)
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep := auditTableAt(t, e, c.name+"/", FormatCSV, c.check)
		if got := rep.Checks[0]; rep.Passed != c.passes {
			t.Errorf("%s: passed %v (%s %s), want %v", c.name, rep.Passed, got.Observed, got.Message, c.passes)
		} else {
			t.Logf("%s: passed %v (%s %s)", c.name, rep.Passed, got.Observed, got.Message)
		}
	}
}

// TestCSVEmptyTextFieldsUnderTextChecks (review 5): an empty CSV field
// in a column of text is NULL to DuckDB and pandas, and the empty text to
// pyarrow (checked: pyarrow.dataset, 26.0.1; a column empty in every row
// of a file is NULL to it too). accepted_values and regex pass NULL, and
// unique does not count it, while pyarrow's readers read ” outside the
// accepted values, not matching the pattern, or twice. The audit must
// refuse such a field where one of those checks reads its column; an
// empty field elsewhere (a number column, a column empty in every row, a
// column only not_null reads) is read alike.
func TestCSVEmptyTextFieldsUnderTextChecks(t *testing.T) {
	cases := []struct {
		name, csv string
		check     Check
		passes    bool
	}{
		{"accepted_values", "id,v\n1,\n2,a\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"a"}}, false},
		{"quoted_empty", "id,v\n1,\"\"\n2,a\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"a"}}, false},
		{"regex", "id,v\n1,\n2,a\n", Check{Kind: KindRegex, Column: "v", Pattern: "^a$"}, false},
		{"unique", "id,v\n1,\n2,\n3,a\n", Check{Kind: KindUnique, Column: "v"}, false},
		{"unique_pair", "id,v\n1,\n1,\n3,a\n", Check{Kind: KindUnique, Columns: []string{"id", "v"}}, false},
		{"number_column", "id,v\n,a\n2,a\n", Check{Kind: KindAcceptedValues, Column: "id", Values: []string{"2"}}, true},
		{"empty_column", "id,v\n1,\n2,\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"a"}}, true},
		{"other_column", "id,v\n1,\n2,a\n", Check{Kind: KindAcceptedValues, Column: "id", Values: []string{"1", "2"}}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.csv", c.csv)
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep := auditTableAt(t, e, c.name+"/", FormatCSV, c.check)
		if got := rep.Checks[0]; rep.Passed != c.passes {
			t.Errorf("%s: passed %v (%s %s), want %v", c.name, rep.Passed, got.Observed, got.Message, c.passes)
		} else {
			t.Logf("%s: passed %v (%s %s)", c.name, rep.Passed, got.Observed, got.Message)
		}
	}
}

// TestJSONStringsDuckDBTypesAreTheirText (review 5): DuckDB's read_json
// types JSON strings as DATE, TIME or UUID where pandas and pyarrow
// (checked: 3.1.1, 26.0.1) keep the string, and text checks then judged
// DuckDB's rendering: "2024-1-2" as 2024-01-02, an upper-case UUID in
// lower case. Strings written as DuckDB renders them pass.
func TestJSONStringsDuckDBTypesAreTheirText(t *testing.T) {
	uuid := "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	cases := []struct {
		name, jsonl string
		check       Check
		passes      bool
	}{
		{"date_unpadded", "{\"v\": \"2024-1-2\"}\n{\"v\": \"2024-01-03\"}\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{4}-\d{2}-\d{2}$`}, false},
		{"uuid_upper_case", "{\"v\": \"" + strings.ToUpper(uuid) + "\"}\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{uuid}}, false},
		{"time_unpadded", "{\"v\": \"1:02:03\"}\n{\"v\": \"01:02:04\"}\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{2}:`}, false},
		{"iso_dates", "{\"v\": \"2024-01-02\", \"n\": 5}\n{\"v\": \"2024-01-03\", \"n\": null}\n", Check{Kind: KindRegex, Column: "v", Pattern: `^\d{4}-\d{2}-\d{2}$`}, true},
		{"uuid", "{\"v\": \"" + uuid + "\"}\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{uuid}}, true},
		{"empty_strings", "{\"v\": \"\"}\n{\"v\": \"a\"}\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"", "a"}}, true},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		dst := filepath.Join(src.root, "b1", c.name, "a.jsonl")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(c.jsonl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep := auditTableAt(t, e, c.name+"/", FormatJSONL, c.check)
		if got := rep.Checks[0]; rep.Passed != c.passes {
			t.Errorf("%s: passed %v (%s %s), want %v", c.name, rep.Passed, got.Observed, got.Message, c.passes)
		} else {
			t.Logf("%s: passed %v (%s %s)", c.name, rep.Passed, got.Observed, got.Message)
		}
	}
}
