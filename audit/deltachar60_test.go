package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// deltaChar60Field is a top-level field of a Delta schema: a string (or
// of type typ, a Delta type's JSON) whose metadata declares it decl
// (__CHAR_VARCHAR_TYPE_STRING), or declares nothing when decl is "".
func deltaChar60Field(name, typ, decl string) string {
	if typ == "" {
		typ = `"string"`
	}
	meta := "{}"
	if decl != "" {
		b, _ := json.Marshal(map[string]string{sparkCharKey: decl})
		meta = string(b)
	}
	return fmt.Sprintf(`{"name":%q,"type":%s,"nullable":true,"metadata":%s}`, name, typ, meta)
}

// deltaChar60Table is a Delta table under prefix on ref: version 0 of
// main's fields and partition columns adds main's file (a query's rows),
// and, when batch is set, the branch b1's version 1 adds batch's file,
// under a metaData of batchFields when it is set. parts are the files'
// partition values (main's, batch's), nil for none.
type deltaChar60Table struct {
	fields, batchFields []string
	partitions          []string
	main, batch         string
	parts               [2]map[string]any
}

func (c deltaChar60Table) build(t *testing.T, src *dirSource, prefix string) {
	t.Helper()
	p := &probeTable{src: src, prefix: prefix}
	name := func(i int) string {
		n := [...]string{"part-0.parquet", "part-1.parquet"}[i]
		// Hive-style directories, as Spark infers the partition values
		// from them (TestDeltaChar60Readers); a space, which a log's path
		// would escape, is spelled _ (Delta readers take the values from
		// the log).
		for _, k := range c.partitions {
			n = fmt.Sprintf("%s=%s/%s", k, strings.ReplaceAll(fmt.Sprint(c.parts[i][k]), " ", "_"), n)
		}
		return n
	}
	p.file(t, name(0), c.main)
	p.commit(t, 0, deltaProtocol(1), probeMeta(c.fields, c.partitions, nil), p.add(t, name(0), name(0), c.parts[0], nil))
	src.branch(t, "main", "b1")
	if c.batch == "" {
		return
	}
	src.write(t, "b1", prefix+"/"+name(1), c.batch)
	st, err := os.Stat(filepath.Join(src.root, "b1", filepath.FromSlash(prefix), filepath.FromSlash(name(1))))
	if err != nil {
		t.Fatal(err)
	}
	parts := c.parts[1]
	if parts == nil {
		parts = map[string]any{}
	}
	add, _ := json.Marshal(map[string]any{"add": map[string]any{"path": name(1), "partitionValues": parts, "size": st.Size(), "modificationTime": 1, "dataChange": true}})
	actions := []string{string(add)}
	if c.batchFields != nil {
		actions = append([]string{probeMeta(c.batchFields, c.partitions, nil)}, actions...)
	}
	writeDeltaCommit(t, src, "b1", prefix, 1, actions...)
}

var deltaChar60Cases = []struct {
	name  string
	table deltaChar60Table
	// refusal is "" where Spark reads the values as stored; else the
	// words the refusal must hold (the table, the column, the declaration).
	refusal string
	checks  []Check
}{
	{
		name: "char_short",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "char(5)")},
			main:   "SELECT 1::BIGINT AS id, 'abcde' AS c",
			batch:  "SELECT * FROM (VALUES (2::BIGINT, 'ab'), (3, 'ab '), (4, NULL)) v(id, c)",
		},
		refusal: `column "c" holds values shorter than their CHAR's length in 2 rows, and is declared "char(5)" in the schema of Delta table events at version 1`,
	},
	{
		name: "char_upper_spaces",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", " CHAR ( 5 ) ")},
			main:   "SELECT 1::BIGINT AS id, 'abcde' AS c",
			batch:  "SELECT 2::BIGINT AS id, 'ab' AS c",
		},
		refusal: `column "c" holds values shorter than their CHAR's length in 1 rows, and is declared " CHAR ( 5 ) " in the schema of Delta table events at version 1`,
	},
	{
		name: "struct",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""),
				deltaChar60Field("st", `{"type":"struct","fields":[{"name":"x","type":"string","nullable":true,"metadata":{}}]}`, "struct<x:char(5)>")},
			main:  "SELECT 1::BIGINT AS id, {'x': 'abcde'} AS st",
			batch: "SELECT 2::BIGINT AS id, {'x': 'ab'} AS st",
		},
		refusal: `column "st" holds values shorter than their CHAR's length in 1 rows, and is declared "struct<x:char(5)>" in the schema of Delta table events at version 1`,
	},
	{
		name: "array",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""),
				deltaChar60Field("l", `{"type":"array","elementType":"string","containsNull":true}`, "array<char(5)>")},
			main:  "SELECT 1::BIGINT AS id, ['abcde'] AS l",
			batch: "SELECT 2::BIGINT AS id, ['abcde', 'ab'] AS l",
		},
		refusal: `column "l" holds values shorter than their CHAR's length in 1 rows, and is declared "array<char(5)>" in the schema of Delta table events at version 1`,
	},
	{
		// The log's value of a partition column declared char(3): Spark
		// reads the relation's partition column with the schema's
		// metadata, and pads it.
		name: "partition",
		table: deltaChar60Table{
			fields:     []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("p", "", "char(3)")},
			partitions: []string{"p"},
			parts:      [2]map[string]any{{"p": "abc"}, {"p": "a"}},
			main:       "SELECT 1::BIGINT AS id",
			batch:      "SELECT 2::BIGINT AS id",
		},
		refusal: `partition column "p" is "a" in the Delta log, shorter than its CHAR's length, and is declared "char(3)" in the schema of Delta table events at version 1`,
	},
	{
		// The batch declares main's column char(5): main's file, read
		// by the batch's schema once merged, holds ab.
		name: "declared_by_the_batch",
		table: deltaChar60Table{
			fields:      []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "")},
			batchFields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "char(5)")},
			main:        "SELECT 1::BIGINT AS id, 'ab' AS c",
			batch:       "SELECT 2::BIGINT AS id, 'abcde' AS c",
		},
		refusal: `part-0.parquet: column "c" holds values shorter than their CHAR's length in 1 rows, and is declared "char(5)" in the schema of Delta table events at version 1`,
	},
	{
		name: "char_in_an_unread_text",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "char/**/(5)")},
			main:   "SELECT 1::BIGINT AS id, 'abcde' AS c",
			batch:  "SELECT 2::BIGINT AS id, 'abcde' AS c",
		},
		refusal: `Delta table events at version 1: column "c": its schema declares it "char/**/(5)", naming a CHAR`,
	},
	// Spark reads these as stored, as DuckDB does: they pass.
	{
		name: "char_padded_or_longer",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "char(5)")},
			main:   "SELECT 1::BIGINT AS id, 'abcde' AS c",
			batch:  "SELECT * FROM (VALUES (2::BIGINT, 'ab   '), (3, 'abcdef'), (4, 'äbcdé'), (5, NULL)) v(id, c)",
		},
	},
	{
		name: "varchar",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("c", "", "varchar(5)")},
			main:   "SELECT 1::BIGINT AS id, 'abcde' AS c",
			batch:  "SELECT 2::BIGINT AS id, 'ab' AS c",
		},
	},
	{
		// A nested field's own declaration Spark does not read.
		name: "nested_field_declaration",
		table: deltaChar60Table{
			fields: []string{deltaChar60Field("id", `"long"`, ""),
				deltaChar60Field("st", `{"type":"struct","fields":[`+deltaChar60Field("x", "", "char(5)")+`]}`, "")},
			main:  "SELECT 1::BIGINT AS id, {'x': 'abcde'} AS st",
			batch: "SELECT 2::BIGINT AS id, {'x': 'ab'} AS st",
		},
	},
	{
		name: "partition_padded",
		table: deltaChar60Table{
			fields:     []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("p", "", "char(3)")},
			partitions: []string{"p"},
			parts:      [2]map[string]any{{"p": "abc"}, {"p": "a  "}},
			main:       "SELECT 1::BIGINT AS id",
			batch:      "SELECT 2::BIGINT AS id",
		},
	},
}

// TestDeltaChar60SparkPadsCharColumns: a Delta table whose log's schema
// declares a top-level column a CHAR(n) in its field's metadata
// (__CHAR_VARCHAR_TYPE_STRING, as Spark writes a CHAR column of a Delta
// table) is read by Spark padded with spaces to n characters: Delta hands
// Spark the log's schema, metadata and all (DeltaLog's
// buildHadoopFsRelationWithFileIndex), and Spark's ApplyCharTypePadding
// pads the relation's CHAR columns, partition columns too. PySpark 4.3.0
// read the log's schema over the table's files reads `ab` as `ab   `
// where deltalake 1.6.6 and DuckDB read `ab` (TestDeltaChar60Readers): an
// accepted_values of ['ab', 'ab '], a regex and a unique passed where
// Spark finds them failing. Each such table is refused naming the file,
// the column, the declaration and the table's version; values of n
// characters or more, VARCHAR values and a nested field's own declaration
// pass.
func TestDeltaChar60SparkPadsCharColumns(t *testing.T) {
	for _, c := range deltaChar60Cases {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			c.table.build(t, src, "gold/events")
			col := "c"
			if strings.Contains(c.table.fields[1], `"name":"st"`) {
				col = "st"
			} else if strings.Contains(c.table.fields[1], `"name":"l"`) {
				col = "l"
			} else if strings.Contains(c.table.fields[1], `"name":"p"`) {
				col = "p"
			}
			checks := []Check{
				{Name: "sql", Kind: KindSQL, Table: "events", SQL: `SELECT * FROM events WHERE id < 0`},
				{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(1)},
			}
			if col == "c" || col == "p" {
				checks = append(checks,
					Check{Name: "values", Kind: KindAcceptedValues, Table: "events", Column: col, Values: []string{"ab", "ab ", "a", "abc", "abcde", "abcdef", "äbcdé", "ab   ", "a  "}},
					Check{Name: "regex", Kind: KindRegex, Table: "events", Column: col, Pattern: `^([a-zäé]+ ?|ab   |a  )$`})
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, checks...)
			if c.refusal == "" {
				if !rep.Passed {
					t.Errorf("Spark reads its values as stored: want it passed: %+v", rep.Checks)
				}
				return
			}
			wantRefused(t, rep, c.refusal)
			if !rep.Passed && rep.Checks[0].Status == schemas.StatusError {
				t.Logf("refused: %s", rep.Checks[0].Message)
			}
		})
	}
}

// deltaChar60Text renders a value as TestCharPad59SparkReadings does: a
// text quoted and followed by its length, a struct in braces, a list in
// brackets.
const deltaChar60Text = `
def text(v):
    if v is None:
        return "NULL"
    if isinstance(v, list):
        return "[" + ",".join(text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(text(x) for x in v.values()) + "}"
    if hasattr(v, "asDict"):
        return "{" + ",".join(text(x) for x in v) + "}"
    return "'%s'/%d" % (v, len(v))
`

// TestDeltaChar60Readers: what deltalake 1.6.6 and PySpark 4.3.0 read of
// TestDeltaChar60SparkPadsCharColumns's tables at b1 (version 1). Spark
// reads a Delta table through a relation of the log's schema, metadata
// and all (delta-io/delta's DeltaLog.buildHadoopFsRelationWithFileIndex
// keeps __CHAR_VARCHAR_TYPE_STRING; GeneratedColumn.allowDMLTargetPlan
// expects Spark's readSidePadding projection over a Delta scan), which
// delta-spark, absent here, builds; PySpark reads the table's active
// files with the log's schema (StructType.fromJson of its schemaString)
// as that relation does, and a partitioned table through a catalog table
// of the log's columns over its directories (partition inference drops a
// user schema's metadata, and Delta hands Spark its partition schema
// with it), with spark.sql.readSideCharPadding on (Spark's default) and
// off. Each reading is the rows' values of the declared column by id.
func TestDeltaChar60Readers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	want := map[string]struct{ deltaRS, spark, unpadded string }{
		"char_short":               {"'abcde'/5 | 'ab'/2 | 'ab '/3 | NULL", "'abcde'/5 | 'ab   '/5 | 'ab   '/5 | NULL", "'abcde'/5 | 'ab'/2 | 'ab '/3 | NULL"},
		"struct":                   {"{'abcde'/5} | {'ab'/2}", "{'abcde'/5} | {'ab   '/5}", "{'abcde'/5} | {'ab'/2}"},
		"partition":                {"'abc'/3 | 'a'/1", "'abc'/3 | 'a  '/3", "'abc'/3 | 'a'/1"},
		"char_padded_or_longer":    {"'abcde'/5 | 'ab   '/5 | 'abcdef'/6 | 'äbcdé'/5 | NULL", "'abcde'/5 | 'ab   '/5 | 'abcdef'/6 | 'äbcdé'/5 | NULL", "'abcde'/5 | 'ab   '/5 | 'abcdef'/6 | 'äbcdé'/5 | NULL"},
		"varchar":                  {"'abcde'/5 | 'ab'/2", "'abcde'/5 | 'ab'/2", "'abcde'/5 | 'ab'/2"},
		"nested_field_declaration": {"{'abcde'/5} | {'ab'/2}", "{'abcde'/5} | {'ab'/2}", "{'abcde'/5} | {'ab'/2}"},
	}
	var dirs []string
	for _, c := range deltaChar60Cases {
		if _, ok := want[c.name]; !ok {
			continue
		}
		src := &dirSource{root: filepath.Join(t.TempDir(), c.name), downloads: map[string]int{}, sums: map[string]string{}}
		c.table.build(t, src, "t")
		dirs = append(dirs, filepath.Join(src.root, "b1", "t"))
	}
	got := map[string]map[string]string{}
	note := func(reader, line string) {
		name, v, ok := strings.Cut(line, "\t")
		if !ok {
			return
		}
		if got[name] == nil {
			got[name] = map[string]string{}
		}
		got[name][reader] = v
	}
	out := deltaRSRun(t, strings.Join(dirs, "\n"), deltaChar60Text+`
for d in out.split("\n"):
    tb = DeltaTable(d).to_pyarrow_table().sort_by("id")
    print(os.path.basename(os.path.dirname(os.path.dirname(d))) + "\t" + " | ".join(text(v) for v in tb.column([n for n in tb.column_names if n != "id"][0]).to_pylist()))
`)
	for _, line := range strings.Split(out, "\n") {
		note("deltaRS", line)
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	const read = `import sys, os, json, glob
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").config("spark.sql.warehouse.dir", os.environ["WAREHOUSE"]).getOrCreate()
s.sparkContext.setLogLevel("OFF")
` + deltaChar60Text + `
for pad in ["true", "false"]:
    s.conf.set("spark.sql.readSideCharPadding", pad)
    for d in sys.argv[1:]:
        meta, active = None, []
        for f in sorted(glob.glob(os.path.join(d, "_delta_log", "*.json"))):
            for line in open(f):
                a = json.loads(line)
                if "metaData" in a:
                    meta = a["metaData"]
                if "add" in a:
                    active.append(a["add"]["path"])
        schema = StructType.fromJson(json.loads(meta["schemaString"]))
        col = [f.name for f in schema.fields if f.name != "id"][0]
        if meta["partitionColumns"]:
            # Partition inference drops a user schema's metadata; Delta
            # hands Spark its partition schema, metadata and all, as a
            # catalog table over the same directories does.
            name = "t_" + os.path.basename(os.path.dirname(os.path.dirname(d)))
            if pad == "true":
                ddl = ", ".join("%s %s" % (f.name, f.metadata.get("__CHAR_VARCHAR_TYPE_STRING", f.dataType.simpleString())) for f in schema.fields)
                s.sql("CREATE TABLE %s (%s) USING parquet PARTITIONED BY (%s) LOCATION '%s'" % (name, ddl, ", ".join(meta["partitionColumns"]), d))
                s.sql("ALTER TABLE %s RECOVER PARTITIONS" % name)
            df = s.table(name)
        else:
            df = s.read.schema(schema).option("basePath", d).parquet(*[os.path.join(d, p) for p in active])
        rows = df.orderBy("id").select(col).collect()
        print(pad + "\t" + os.path.basename(os.path.dirname(os.path.dirname(d))) + "\t" + " | ".join(text(r[0]) for r in rows))
s.stop()
`
	sout, _ := runPySpark(t, python, read, dirs, "WAREHOUSE="+t.TempDir())
	for _, line := range strings.Split(strings.TrimSpace(string(sout)), "\n") {
		pad, rest, _ := strings.Cut(line, "\t")
		note(map[string]string{"true": "spark", "false": "unpadded"}[pad], rest)
	}
	for name, w := range want {
		g := got[name]
		for reader, v := range map[string]string{"deltaRS": w.deltaRS, "spark": w.spark, "unpadded": w.unpadded} {
			if g[reader] != v {
				t.Errorf("%s: %s reads %q, want %q", name, reader, g[reader], v)
			}
		}
	}
}
