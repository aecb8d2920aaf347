package audit

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestCharPad59SparkReadings: PySpark 4.3.0's readings of the charpad59
// files (testdata/charpad59.py, pyarrow 26.0.1) and of Spark's own CHAR
// file, with the vectorized reader and with parquet-mr's
// (spark.sql.parquet.enableVectorizedReader false). Each value is quoted
// and followed by its length.
func TestCharPad59SparkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	want := map[string]string{ // by file: both readers alike
		"charpad59_char_short.parquet":       "'ab   '/5 | 'ab   '/5 | NULL",
		"charpad59_char_upper.parquet":       "'ab   '/5 | 'ab   '/5 | NULL",
		"charpad59_char_type.parquet":        "'ab   '/5 | 'ab   '/5 | NULL",
		"charpad59_char_long.parquet":        "'abc'/3 | 'abcdef'/6 | NULL",
		"charpad59_varchar_long.parquet":     "'ab'/2 | 'abcdef'/6 | NULL",
		"charpad59_char_exact.parquet":       "'abcde'/5 | 'äbcdé'/5 | NULL",
		"charpad59_char_struct.parquet":      "{'ab   '/5} | {'ab   '/5} | NULL",
		"charpad59_char_structinner.parquet": "{'ab'/2} | {'ab '/3} | NULL",
		"charpad59_char_array.parquet":       "['ab   '/5] | ['ab   '/5] | NULL",
		// Spark reads a table by its first file's Spark schema (by path).
		"charpad59_char_table_dir":  "'abcde'/5 | 'ab   '/5",
		"charpad59_char_table2_dir": "'ab'/2 | 'abcde'/5",
		// Spark's own: a CHAR(5) table's rows written by
		// spark.table(...).write.parquet, padded (nested too), and a
		// DataFrame of a field with the metadata, written as it is.
		"charpad59_spark_table.parquet":     "'ab   '/5 | 'abcde'/5 | NULL",
		"charpad59_spark_dataframe.parquet": "'ab   '/5 | 'abcde'/5",
	}
	var args []string
	for name := range want {
		p, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	const read = `import sys, os, re
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate()
s.sparkContext.setLogLevel("OFF")
def text(v):
    if v is None:
        return "NULL"
    if isinstance(v, list):
        return "[" + ",".join(text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(text(k) + ":" + text(x) for k, x in v.items()) + "}"
    if hasattr(v, "asDict"):
        return "{" + ",".join(text(x) for x in v) + "}"
    return "'%s'/%d" % (v, len(v))
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for f in sys.argv[1:]:
        try:
            df = s.read.parquet(f)
            print(vec + "\t" + os.path.basename(f) + "\t" + " | ".join(text(r[1]) for r in df.orderBy("id").collect()))
        except Exception as e:
            m = re.search(r"\[([A-Z_.]+)\]", str(e))
            print(vec + "\t" + os.path.basename(f) + "\tfails: " + (m.group(1) if m else str(e)[:200].replace("\n", " ")))
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	sparkReadingsAre(t, out, want, "vectorized", 2)
}

// TestCharPad59SparkPadsCharColumns: a string field of a file's Spark
// schema whose metadata declares it char(5) (__CHAR_VARCHAR_TYPE_STRING)
// is read by Spark padded with spaces to 5 characters: PySpark 4.3.0 reads
// the stored `ab` and `ab ` of charpad59_char_short.parquet (pyarrow
// 26.0.1, testdata/charpad59.py) as `ab   ` twice, with either Parquet
// reader (TestCharPad59SparkReadings), where DuckDB reads `ab` and `ab `:
// an accepted_values of ['ab', 'ab '], a regex `^[a-z]+ ?$` and a unique
// passed where Spark finds them failing. A file holding a value of a
// column declared char(n) shorter than n characters is refused, naming
// the file, the column and the declaration; so is a table of two files
// where one declares the column char(5) and the other holds `ab`, Spark
// reading both by the first's schema. Values of n characters (Spark's own
// file), longer ones and VARCHAR(n) values, which Spark reads as stored,
// pass.
func TestCharPad59SparkPadsCharColumns(t *testing.T) {
	text := []Check{
		{Kind: KindAcceptedValues, Column: "c", Values: []string{"ab", "ab ", "abc", "abcde", "abcdef", "äbcdé", "ab   "}},
		{Kind: KindRegex, Column: "c", Pattern: `^([a-zäé]+ ?|ab   )$`},
		{Kind: KindUnique, Column: "c"},
	}
	structs := []Check{{Kind: KindSQL, SQL: `SELECT * FROM "t" WHERE st.x NOT IN ('ab', 'ab ')`}}
	lists := []Check{{Kind: KindSQL, SQL: `SELECT * FROM "t" WHERE l[1] NOT IN ('ab', 'ab ')`}}
	for _, c := range []struct {
		file, col, declared string
		checks              []Check
		refused             bool
	}{
		{"charpad59_char_short.parquet", "c", `"char(5)"`, text, true},
		{"charpad59_char_upper.parquet", "c", `" CHAR ( 5 ) "`, text, true},
		{"charpad59_char_type.parquet", "c", `"char(5)"`, text, true},
		{"charpad59_char_struct.parquet", "st", `"struct<x:char(5)>"`, structs, true},
		{"charpad59_char_array.parquet", "l", `"array<char(5)>"`, lists, true},
		// part-1's ab beside part-0's char(5), read by part-0's schema;
		// and the other way round, which Spark reads by part-0's own
		// schema (by the files' order): refused as well.
		{"charpad59_char_table_dir", "c", `"char(5)" in the Spark schema of file t/part-0.parquet`, text, true},
		{"charpad59_char_table2_dir", "c", `"char(5)" in the Spark schema of file t/part-1.parquet`, text, true},
		// Spark writes a DataFrame's value as it is, and pads it when
		// it reads it.
		{"charpad59_spark_dataframe.parquet", "c", `"char(5)"`, text, true},
		{"charpad59_char_long.parquet", "c", "", text, false},
		{"charpad59_varchar_long.parquet", "c", "", text, false},
		{"charpad59_char_exact.parquet", "c", "", text, false},
		{"charpad59_char_structinner.parquet", "st", "", structs, false},
		{"charpad59_spark_table.parquet", "c", "", text, false},
	} {
		for _, check := range c.checks {
			var src *dirSource
			if strings.HasSuffix(c.file, "_dir") {
				src = review59Dir(t, c.file)
			} else {
				src, _ = review36File(t, c.file)
			}
			rep, res := review39Audit(t, src, check)
			if !c.refused {
				if !rep.Passed {
					t.Errorf("%s, %s: %s %q; Spark reads its values as stored: want it passed", c.file, check.Kind, res.Status, res.Message)
				}
				continue
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, ".parquet: column \""+c.col+"\" holds") || !strings.Contains(res.Message, "declared "+c.declared) {
				t.Errorf("%s, %s: %s %q; Spark pads its values: want it refused naming the file, the column and the declaration %s", c.file, check.Kind, res.Status, res.Message, c.declared)
				continue
			}
			t.Logf("refused: %s", res.Message)
		}
	}
}

// TestCharPad59SparkTypeTexts: the __CHAR_VARCHAR_TYPE_STRING texts Spark
// writes (catalogString) are read to the DuckDB condition of a value Spark
// pads, at any depth; a text naming a char that lakewap does not read as
// Spark's parser does is refused, and one of no CHAR (a VARCHAR) gives no
// condition.
func TestCharPad59SparkTypeTexts(t *testing.T) {
	for _, c := range []struct{ text, cond, why string }{
		{"char(5)", `length("c") < 5`, ""},
		{" CHAR ( 5 ) ", `length("c") < 5`, ""},
		{"character(3)", `length("c") < 3`, ""},
		{"varchar(3)", "", ""},
		{"string", "", ""},
		{"decimal(10,2)", "", ""},
		{"struct<x:char(5),y:int>", `(coalesce(length(struct_extract("c", 'x')) < 5, false))`, ""},
		{"struct<`a``b`:varchar(2),`x`:char(4)>", `(coalesce(length(struct_extract("c", 'x')) < 4, false))`, ""},
		{"array<char(2)>", `(coalesce(len(list_filter("c", v0 -> coalesce(length(v0) < 2, false))) > 0, false))`, ""},
		{"map<string,char(3)>", `(coalesce(len(list_filter(map_values("c"), v0 -> coalesce(length(v0) < 3, false))) > 0, false))`, ""},
		{"array<struct<x:varchar(3)>>", "", ""},
		{"char(0)", "", "a type text lakewap does not read"},
		{"char/**/(5)", "", "a type text lakewap does not read"},
		{"struct<x char(5)>", "", "a type text lakewap does not read"},
		{"char(5) not null", "", "a type text lakewap does not read"},
		{"nchar(5)", "", "a type text lakewap does not read"},
		{"array<char(2)", "", "a type text lakewap does not read"},
	} {
		col := fileColumn{name: "c"}
		meta, _ := json.Marshal(map[string]string{sparkCharKey: c.text})
		why := markSparkChar(&col, sparkField{name: "c", raw: json.RawMessage(`"string"`), meta: meta})
		if col.sparkChar != c.cond || (why == "") != (c.why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%q: condition %q, refused %q; want %q, %q", c.text, col.sparkChar, why, c.cond, c.why)
		}
	}
	// The Spark schema's type itself char(5), with no metadata.
	col := fileColumn{name: "c"}
	if why := markSparkChar(&col, sparkField{name: "c", raw: json.RawMessage(`"char(5)"`)}); why != "" || col.sparkChar != `length("c") < 5` {
		t.Errorf("type char(5): condition %q, refused %q", col.sparkChar, why)
	}
	// A depth past 64 is refused, not walked.
	deep := strings.Repeat("array<", 70) + "char(1)" + strings.Repeat(">", 70)
	col = fileColumn{name: "c"}
	meta, _ := json.Marshal(map[string]string{sparkCharKey: deep})
	if why := markSparkChar(&col, sparkField{name: "c", raw: json.RawMessage(`"string"`), meta: meta}); why == "" {
		t.Errorf("70 arrays deep: condition of %d bytes, want refused", len(col.sparkChar))
	}
}
