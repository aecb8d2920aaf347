package audit

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReader64DeltaSparkReadsCharTables runs the real delta-spark 4.4.0
// (PySpark 4.2.0) over TestDeltaChar60SparkPadsCharColumns's tables,
// which TestDeltaChar60Readers reads with PySpark 4.3.0 through the
// relation delta-spark would build: each table the audit refuses
// delta-spark reads padded, and each it passes as stored (review 64).
func TestReader64DeltaSparkReadsCharTables(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := deltaSparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_DELTASPARK_PYTHON (scripts/deltasparkenv.sh installs delta-spark)", err)
	}
	want := map[string]string{
		"char_short":               "'abcde'/5 | 'ab   '/5 | 'ab   '/5 | NULL",
		"struct":                   "{'abcde'/5} | {'ab   '/5}",
		"partition":                "'abc'/3 | 'a  '/3",
		"char_padded_or_longer":    "'abcde'/5 | 'ab   '/5 | 'abcdef'/6 | 'äbcdé'/5 | NULL",
		"varchar":                  "'abcde'/5 | 'ab'/2",
		"nested_field_declaration": "{'abcde'/5} | {'ab'/2}",
	}
	var dirs []string
	for _, c := range deltaChar60Cases {
		src := &dirSource{root: filepath.Join(t.TempDir(), c.name), downloads: map[string]int{}, sums: map[string]string{}}
		c.table.build(t, src, "t")
		dirs = append(dirs, filepath.Join(src.root, "b1", "t"))
	}
	const read = deltaSparkSession + `` + deltaChar60Text + `
for d in sys.argv[1:]:
    name = os.path.basename(os.path.dirname(os.path.dirname(d)))
    try:
        df = s.read.format("delta").load(d)
        col = [n for n in df.columns if n != "id"][0]
        print(name + "\t" + " | ".join(text(r[col]) for r in df.orderBy("id").collect()))
    except Exception as e:
        print(name + "\tERROR " + str(e).replace("\n", " ")[:300])
s.stop()
`
	out, _ := runPySpark(t, python, read, dirs, "WAREHOUSE="+filepath.Join(t.TempDir(), "wh"))
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, v, ok := strings.Cut(line, "\t"); ok {
			got[name] = v
		}
	}
	for _, c := range deltaChar60Cases {
		w, ok := want[c.name]
		t.Logf("%s (audit refuses: %v): delta-spark reads %s", c.name, c.refusal != "", got[c.name])
		if !ok {
			continue
		}
		if got[c.name] != w {
			t.Errorf("%s: delta-spark reads %q, want %q", c.name, got[c.name], w)
		}
	}
}

// deltaSparkSession starts the Python of a delta-spark differential: a
// local session with Delta's extension and catalog, times in UTC, the
// warehouse in $WAREHOUSE, Delta's jars fetched once into the venv's ivy
// folder (scripts/deltasparkenv.sh).
const deltaSparkSession = `import sys, os
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
b = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
     .config("spark.jars.ivy", os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "ivy"))
     .config("spark.sql.shuffle.partitions", "1").config("spark.sql.session.timeZone", "UTC")
     .config("spark.sql.warehouse.dir", os.environ["WAREHOUSE"])
     .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
     .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
s = configure_spark_with_delta_pip(b).getOrCreate()
s.sparkContext.setLogLevel("OFF")
`
