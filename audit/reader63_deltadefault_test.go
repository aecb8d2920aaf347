package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reader63DefaultField is a top-level field of a Delta schema of type typ
// (a Delta type's JSON) whose metadata is meta (nil: none).
func reader63DefaultField(name, typ string, meta map[string]string) string {
	if meta == nil {
		meta = map[string]string{}
	}
	b, _ := json.Marshal(meta)
	return fmt.Sprintf(`{"name":%q,"type":%s,"nullable":true,"metadata":%s}`, name, typ, b)
}

// reader63DefaultTable is a Delta table under prefix, as delta-spark
// writes one with allowColumnDefaults: main's version 0 (fields id) adds
// part-0.parquet (id 1, no column c); the branch b1's version 1 declares
// batchFields and adds part-1.parquet (batch's rows).
func reader63DefaultTable(t *testing.T, src *dirSource, prefix string, batchFields []string, batch string) {
	t.Helper()
	p := &probeTable{src: src, prefix: prefix}
	p.file(t, "part-0.parquet", "SELECT 1::BIGINT AS id")
	p.commit(t, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["allowColumnDefaults","appendOnly","invariants"]}}`,
		probeMeta([]string{reader63DefaultField("id", `"long"`, nil)}, nil, nil), p.add(t, "part-0.parquet", "part-0.parquet", nil, nil))
	src.branch(t, "main", "b1")
	src.write(t, "b1", prefix+"/part-1.parquet", batch)
	st, err := os.Stat(filepath.Join(src.root, "b1", filepath.FromSlash(prefix), "part-1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	add, _ := json.Marshal(map[string]any{"add": map[string]any{"path": "part-1.parquet", "partitionValues": map[string]any{}, "size": st.Size(), "modificationTime": 1, "dataChange": true}})
	writeDeltaCommit(t, src, "b1", prefix, 1, probeMeta(batchFields, nil, nil), string(add))
}

var reader63DefaultCases = []struct {
	name        string
	batchFields []string
	batch       string
	refusal     string // "" where every reader reads c alike
}{
	{
		// The batch declares c's EXISTS_DEFAULT 7: main's file, which
		// lacks c, is read by delta-spark as c = 7.
		name: "exists_default",
		batchFields: []string{reader63DefaultField("id", `"long"`, nil),
			reader63DefaultField("c", `"long"`, map[string]string{"CURRENT_DEFAULT": "7", "EXISTS_DEFAULT": "7"})},
		batch:   "SELECT 2::BIGINT AS id, 1::BIGINT AS c",
		refusal: `file gold/events/part-0.parquet lacks column "c", whose EXISTS_DEFAULT the schema of Delta table events at version 1 declares 7`,
	},
	{
		// The column's case differs from the file's: Delta reads it
		// case-insensitively, as the audit compares it.
		name: "exists_default_other_case",
		batchFields: []string{reader63DefaultField("id", `"long"`, nil),
			reader63DefaultField("C", `"long"`, map[string]string{"EXISTS_DEFAULT": "7"})},
		batch:   "SELECT 2::BIGINT AS id, 1::BIGINT AS C",
		refusal: `file gold/events/part-0.parquet lacks column "C"`,
	},
	{
		// CURRENT_DEFAULT alone, as delta-spark writes by ALTER COLUMN
		// SET DEFAULT: every reader reads NULL in main's file.
		name: "current_default",
		batchFields: []string{reader63DefaultField("id", `"long"`, nil),
			reader63DefaultField("c", `"long"`, map[string]string{"CURRENT_DEFAULT": "7"})},
		batch: "SELECT 2::BIGINT AS id, 1::BIGINT AS c",
	},
}

// TestReader63DeltaExistsDefaultIsRefused: a Delta log declaring a
// column's EXISTS_DEFAULT over a data file lacking the column, which
// delta-spark reads as the default and delta-rs and the audit as NULL
// (TestReader63DeltaSparkReadsExistsDefaults), is refused; a range of 0
// to 3 passed before.
func TestReader63DeltaExistsDefaultIsRefused(t *testing.T) {
	for _, c := range reader63DefaultCases {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			reader63DefaultTable(t, src, "gold/events", c.batchFields, c.batch)
			col := "c"
			if c.name == "exists_default_other_case" {
				col = "C"
			}
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "range", Kind: KindRange, Table: "events", Column: col, Min: f64(0), Max: f64(3)},
				Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(2)})
			if c.refusal == "" {
				if !rep.Passed {
					t.Fatalf("every reader reads c alike: want it passed: %+v", rep.Checks)
				}
				return
			}
			wantRefused(t, rep, c.refusal)
		})
	}
}

// deltaSparkPython is delta-spark's venv's interpreter
// (scripts/deltasparkenv.sh), with Delta's jars in its ivy/.
func deltaSparkPython() (string, error) {
	return venvPython("LAKEWAP_DELTASPARK_PYTHON", "deltasparkvenv-", filepath.Join("tests", "deltaspark", "requirements.txt"), "delta-spark")
}

// TestReader63DeltaSparkReadsExistsDefaults pins what the refusal rests
// on: delta-spark 4.4.0 reads a data file lacking column c as c's
// EXISTS_DEFAULT, delta-rs as NULL; a CURRENT_DEFAULT alone both read as
// NULL.
func TestReader63DeltaSparkReadsExistsDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	want := map[string]struct{ deltaRS, spark string }{
		"exists_default":            {"1:None 2:1", "1:7 2:1"},
		"exists_default_other_case": {"1:None 2:1", "1:7 2:1"},
		"current_default":           {"1:None 2:1", "1:None 2:1"},
	}
	var dirs []string
	for _, c := range reader63DefaultCases {
		src := &dirSource{root: filepath.Join(t.TempDir(), c.name), downloads: map[string]int{}, sums: map[string]string{}}
		reader63DefaultTable(t, src, "t", c.batchFields, c.batch)
		dirs = append(dirs, filepath.Join(src.root, "b1", "t"))
	}
	got := map[string]map[string]string{}
	note := func(reader, out string) {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			name, v, ok := strings.Cut(line, "\t")
			if !ok {
				continue
			}
			if got[name] == nil {
				got[name] = map[string]string{}
			}
			got[name][reader] = v
		}
	}
	note("deltaRS", deltaRSRun(t, strings.Join(dirs, "\n"), `
for d in out.split("\n"):
    tb = DeltaTable(d).to_pyarrow_table().sort_by("id")
    col = [n for n in tb.column_names if n != "id"][0]
    print(os.path.basename(os.path.dirname(os.path.dirname(d))) + "\t" + " ".join("%s:%s" % (i, v) for i, v in zip(tb.column("id").to_pylist(), tb.column(col).to_pylist())))
`))
	python, err := deltaSparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_DELTASPARK_PYTHON (scripts/deltasparkenv.sh installs delta-spark)", err)
	}
	const read = `import sys, os
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
b = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
     .config("spark.jars.ivy", os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "ivy"))
     .config("spark.sql.shuffle.partitions", "1")
     .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
     .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
s = configure_spark_with_delta_pip(b).getOrCreate()
s.sparkContext.setLogLevel("OFF")
for d in sys.argv[1:]:
    df = s.read.format("delta").load(d)
    col = [n for n in df.columns if n != "id"][0]
    rows = df.orderBy("id").collect()
    print(os.path.basename(os.path.dirname(os.path.dirname(d))) + "\t" + " ".join("%s:%s" % (r["id"], r[col]) for r in rows))
s.stop()
`
	out, _ := runPySpark(t, python, read, dirs)
	note("spark", string(out))
	for name, w := range want {
		for reader, v := range map[string]string{"deltaRS": w.deltaRS, "spark": w.spark} {
			if got[name][reader] != v {
				t.Errorf("%s: %s reads %q, want %q", name, reader, got[name][reader], v)
			}
		}
	}
}
