package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestTablesSparkReadsOtherwiseAreRefused: each table below is one that
// Spark 4.3.0 (PySpark, local mode, its defaults: checked by
// TestDifferentialAgainstSpark and by hand) reads in other rows or values
// than DuckDB, so that the check passes in the audit and would fail on
// what Spark users read. The audit must refuse each, naming the file and
// what Spark does; the same tables written as Spark reads them alike pass.
func TestTablesSparkReadsOtherwiseAreRefused(t *testing.T) {
	cases := []struct {
		name, format string
		files        map[string]string // raw bytes, or a DuckDB query for .parquet files
		check        Check
		spark        string // what Spark reads
		refusal      string // in the refusal, besides the file's name
	}{
		{name: "csv_newline_in_a_quoted_field", format: FormatCSV,
			files: map[string]string{"a.csv": "id,name\n1,\"a\nb\"\n2,c\n"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "name"},
			spark: "three rows (multiLine is off by default): id 1, b\", 2; name a, NULL, c", refusal: "line break"},
		{name: "csv_doubled_quote", format: FormatCSV,
			files: map[string]string{"a.csv": "id,p\n1,\"a\"\"b\"\n2,x\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "p", Values: []string{`a"b`, "x"}},
			spark: `p "a""b" (quotes and all: Spark escapes with a backslash, not by doubling)`, refusal: "quote"},
		{name: "csv_backslash_before_a_quote", format: FormatCSV,
			files: map[string]string{"a.csv": "id,p\n1,\"C:\\\"\n2,x\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "p", Values: []string{`C:\`, "x"}},
			spark: `p C:" (\" is an escaped quote to Spark)`, refusal: "backslash"},
		{name: "csv_empty_first_line", format: FormatCSV,
			files: map[string]string{"a.csv": "\n\nid,v\n1,2\n"},
			check: Check{Kind: KindRowCount, Table: "t", Min: new(2.0)},
			spark: "one row: Spark skips empty lines and takes id,v for the header", refusal: "empty"},
		{name: "csv_columns_in_another_order", format: FormatCSV,
			files: map[string]string{"a.csv": "id,name\n1,x\n", "b.csv": "name,id\n,2\n"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "id"},
			spark: "b.csv's fields under a.csv's header, by position: id x... and NULL", refusal: "position"},
		{name: "csv_another_column_at_a_position", format: FormatCSV,
			files: map[string]string{"a.csv": "id,x\n1,2\n", "b.csv": "id,y\n3,9\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "x", Values: []string{"2"}},
			spark: "x 9 in b.csv's row (its y, by position)", refusal: "position"},
		{name: "csv_infinity_spellings", format: FormatCSV,
			files: map[string]string{"a.csv": "id,v\n1,Infinity\n2,Inf\n3,1.5\n"},
			check: Check{Kind: KindUnique, Table: "t", Column: "v"},
			spark: "v inf, inf, 1.5 with inferSchema (a duplicate), as pandas reads it", refusal: "infinity"},
		{name: "csv_integer_text_under_a_text_check", format: FormatCSV,
			files: map[string]string{"a.csv": "id,v\n1, 2\n2,3\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "v", Values: []string{"2", "3"}},
			spark: `v " 2" and "3" (inferSchema is off by default: text as written)`, refusal: "BIGINT"},
		{name: "csv_float_text_under_a_text_check", format: FormatCSV,
			files: map[string]string{"a.csv": "id,v\n1,1.50\n2,2.5\n"},
			check: Check{Kind: KindRegex, Table: "t", Column: "v", Pattern: `^[0-9]\.[0-9]$`},
			spark: `v "1.50" and "2.5" (text as written)`, refusal: "DOUBLE"},
		{name: "csv_boolean_text_under_a_text_check", format: FormatCSV,
			files: map[string]string{"a.csv": "id,b\n1,TRUE\n2,false\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "b", Values: []string{"true", "false"}},
			spark: `b "TRUE" and "false" (text as written)`, refusal: `"TRUE"`},
		{name: "csv_numbers_duckdb_keeps_as_text", format: FormatCSV,
			files: map[string]string{"a.csv": "id,v\n1,007\n2,7\n3,1.0\n4,1\n"},
			check: Check{Kind: KindUnique, Table: "t", Column: "v"},
			spark: "v 7.0, 7.0, 1.0, 1.0 with inferSchema, as pandas reads it (two duplicates; DuckDB: four texts)", refusal: "number"},
		{name: "json_array_line", format: FormatJSONL,
			files: map[string]string{"a.jsonl": "[{\"id\": 1}, {\"id\": 2}]\n{\"id\": 3}\n"},
			check: Check{Kind: KindRowCount, Table: "t", Max: new(2.0), Min: new(0.0)},
			spark: "three rows: an array's objects are rows", refusal: "records"},
		{name: "json_string_and_number", format: FormatJSONL,
			files: map[string]string{"a.jsonl": "{\"id\": \"1\"}\n{\"id\": 1}\n{\"id\": 2}\n"},
			check: Check{Kind: KindUnique, Table: "t", Column: "id"},
			spark: "id as text: 1, 1, 2 (a duplicate); DuckDB as JSON: \"1\", 1, 2", refusal: "JSON"},
		{name: "copying_file", format: FormatParquet,
			files: map[string]string{"a.parquet": "SELECT 1::BIGINT AS x", "b.parquet._COPYING_": "SELECT NULL::BIGINT AS x"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "x", Mostly: new(0.5)},
			spark: "a.parquet only (Spark skips names ending in ._COPYING_)", refusal: "unaudited_objects"},
		{name: "files_outside_the_partition_directories", format: FormatParquet,
			files: map[string]string{"a.parquet": "SELECT 1::BIGINT AS x", "region=eu/b.parquet": "SELECT NULL::BIGINT AS x"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "x", Mostly: new(0.5)},
			spark: "region=eu/b.parquet only: Spark leaves out a.parquet", refusal: "partition"},
	}
	// Written as every reader reads them alike, they pass.
	alike := []struct {
		name, format string
		files        map[string]string
		check        Check
	}{
		{name: "csv_headers_one_a_prefix_of_another", format: FormatCSV,
			files: map[string]string{"a.csv": "id,name\n1,x\n", "b.csv": "id,name,extra\n2,y,z\n", "c.csv": "id\n3\n"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "id"}},
		{name: "csv_quoted_commas_and_backslashes", format: FormatCSV,
			files: map[string]string{"a.csv": "id,p\n1,\"a,b\"\n2,C:\\x\n3,Infinity and beyond\n"},
			check: Check{Kind: KindAcceptedValues, Table: "t", Column: "p", Values: []string{"a,b", `C:\x`, "Infinity and beyond"}}},
		{name: "csv_infinity_where_no_text_check_reads", format: FormatCSV,
			files: map[string]string{"a.csv": "id,v\n1,Infinity\n2,-Inf\n3,x\n"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "v"}},
		{name: "json_one_type_per_column", format: FormatJSONL,
			files: map[string]string{"a.jsonl": "{\"id\": \"1\"}\n{\"id\": \"2\"}\n"},
			check: Check{Kind: KindUnique, Table: "t", Column: "id"}},
		{name: "every_file_partitioned_alike", format: FormatParquet,
			files: map[string]string{"region=eu/a.parquet": "SELECT 1::BIGINT AS x", "region=us/b.parquet": "SELECT 2::BIGINT AS x"},
			check: Check{Kind: KindNotNull, Table: "t", Column: "x"}},
	}
	src := newBatchSource(t)
	write := func(name string, files map[string]string) {
		for p, b := range files {
			if strings.Contains(p, ".parquet") {
				src.write(t, "b1", name+"/"+p, b)
				continue
			}
			dst := filepath.Join(src.root, "b1", name, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range cases {
		write(c.name, c.files)
	}
	for _, c := range alike {
		write(c.name, c.files)
	}
	e := newEngine(t, src, "")
	run := func(name, format string, check Check) schemas.AuditReport {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: name + "/", Format: format}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, c := range alike {
		if rep := run(c.name, c.format, c.check); !rep.Passed {
			t.Errorf("%s: refused, though every reader reads it alike: %s", c.name, refusal(rep))
		}
	}
	for _, c := range cases {
		rep := run(c.name, c.format, c.check)
		if rep.Passed {
			t.Errorf("%s: lakewap passes %s (%s) while Spark reads %s", c.name, c.check.Kind, rep.Checks[0].Observed, c.spark)
			continue
		}
		why := refusal(rep)
		if !strings.Contains(why, c.refusal) {
			t.Errorf("%s: refused, but not saying %q: %s", c.name, c.refusal, why)
		}
		t.Logf("%s: refused: %s", c.name, why)
	}
}
