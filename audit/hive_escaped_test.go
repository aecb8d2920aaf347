package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapedPartitionKeyNamingAColumnIsRefused: readers of main decode a
// partition directory's key before they match it with the file's columns:
// pyarrow.dataset (partitioning="hive", and so pandas) percent-decodes it
// as UTF-8, Spark 4.3.0 takes each %XX as the character of that code. So
// %C3%A9=zz/ is the partition é to pyarrow, %E9=zz/ to Spark, and each
// reads "zz" for every row of a file under it that has a column é, where DuckDB (as lakewap reads the table,
// no hive partitioning) reads the file's values. pyarrow 26.0.1 read é
// "zz", "zz", "zz" under %C3%A9=zz/ (it fails on %E9, not UTF-8), Spark
// under %E9=zz/ and %C9=zz/ (É, matched in any case: Spark's default),
// checked by hand and by the "hive_partition_key_escaped" case of
// TestTextAndParquetDifferentialAgainstPyArrow; the check passed on "a",
// "b", "a". The same files under keys naming no column pass.
func TestEscapedPartitionKeyNamingAColumnIsRefused(t *testing.T) {
	check := Check{Kind: KindAcceptedValues, Table: "t", Column: "é", Values: []string{"a", "b"}}
	parquet := `SELECT i::BIGINT AS id, CASE WHEN i = 1 THEN 'b' ELSE 'a' END AS "é" FROM range(0, 3) r(i)`
	csv := "id,é\n0,a\n1,b\n2,a\n"
	jsonl := "{\"id\": 0, \"é\": \"a\"}\n{\"id\": 1, \"é\": \"b\"}\n{\"id\": 2, \"é\": \"a\"}\n"
	cases := []struct {
		name, format, dir, file, body string
		refused                       bool
		reading                       string // the key as the reader that matches it reads it
	}{
		{name: "pyarrow_utf8", format: FormatParquet, dir: "%C3%A9=zz", file: "a.parquet", body: parquet, refused: true, reading: "pyarrow"},
		{name: "spark_latin1", format: FormatParquet, dir: "%E9=zz", file: "a.parquet", body: parquet, refused: true, reading: "Spark"},
		{name: "spark_latin1_other_case", format: FormatParquet, dir: "%C9=zz", file: "a.parquet", body: parquet, refused: true, reading: "Spark"},
		{name: "csv", format: FormatCSV, dir: "%C3%A9=zz", file: "a.csv", body: csv, refused: true, reading: "pyarrow"},
		{name: "jsonl", format: FormatJSONL, dir: "%C3%A9=zz", file: "a.jsonl", body: jsonl, refused: true, reading: "pyarrow"},
		{name: "another_key", format: FormatParquet, dir: "%C3%A8=zz", file: "a.parquet", body: parquet},
		{name: "not_an_escape", format: FormatParquet, dir: "%zz=zz", file: "a.parquet", body: parquet},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		rel := c.name + "/" + c.dir + "/" + c.file
		if c.format == FormatParquet {
			src.write(t, "b1", rel, c.body)
			continue
		}
		dst := filepath.Join(src.root, "b1", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: c.format}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		why := rep.Checks[0].Message
		switch {
		case !c.refused && !rep.Passed:
			t.Errorf("%s: refused, though the directory's key names no column: %s", c.name, why)
		case c.refused && rep.Passed:
			t.Errorf("%s: lakewap passes %s (%s) while readers read \"zz\" in every row of %s", c.name, check.Kind, rep.Checks[0].Observed, c.dir)
		case c.refused && !(strings.Contains(why, c.dir) && strings.Contains(why, c.reading) && strings.Contains(why, `"zz"`)):
			t.Errorf("%s: refused, but not naming the directory %q, the reading of %s and its value: %s", c.name, c.dir, c.reading, why)
		case c.refused:
			t.Logf("%s: refused: %s", c.name, why)
		}
	}
}
