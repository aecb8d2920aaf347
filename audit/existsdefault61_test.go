package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Review 61: Spark fills a column that a Parquet file lacks with the
// EXISTS_DEFAULT of the column's field in the Spark schema it reads the
// table by (org.apache.spark.sql.parquet.row.metadata, a column default
// of Spark 3.4 and later), where DuckDB, pyarrow and pandas read NULL.

// defaultSpark is the Spark schema of BIGINT columns id and x, x declaring
// the default 5 (as Spark writes a column added with DEFAULT 5).
const defaultSpark = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{"CURRENT_DEFAULT":"5","EXISTS_DEFAULT":"5"}}]}`

// currentDefaultSpark declares x's CURRENT_DEFAULT only, which Spark
// writes with on INSERT and does not read a missing column as.
const currentDefaultSpark = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{"CURRENT_DEFAULT":"5"}}]}`

// existsDefaultDir writes the files of table t of a batch: part-0.parquet
// (id 1, x 1, of Spark schema spark) and part-1.parquet (id 2, and x 2
// when both is set, of the same Spark schema then; else no x and no
// Spark schema).
func existsDefaultDir(t *testing.T, spark string, both bool) *dirSource {
	t.Helper()
	src := newBatchSource(t)
	dir := filepath.Join(src.root, "b1", "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf(", KV_METADATA {%s: %s}", quoteLiteral(sparkRowMetadataKey), quoteLiteral(spark))
	copySQL(t, fmt.Sprintf("COPY (SELECT 1::BIGINT AS id, 1::BIGINT AS x) TO %s (FORMAT parquet%s)", quoteLiteral(filepath.Join(dir, "part-0.parquet")), kv))
	if both {
		copySQL(t, fmt.Sprintf("COPY (SELECT 2::BIGINT AS id, 2::BIGINT AS x) TO %s (FORMAT parquet%s)", quoteLiteral(filepath.Join(dir, "part-1.parquet")), kv))
	} else {
		copySQL(t, fmt.Sprintf("COPY (SELECT 2::BIGINT AS id) TO %s (FORMAT parquet)", quoteLiteral(filepath.Join(dir, "part-1.parquet"))))
	}
	return src
}

// TestExistsDefault61SparkFillsAMissingColumnWithItsDefault: part-0
// declares x's EXISTS_DEFAULT "5" in its Spark schema and holds x 1;
// part-1 has no x. PySpark 4.3.0 reads part-1's x as 5 (either Parquet
// reader, mergeSchema or not), DuckDB as NULL: a range of 0 to 3, an
// accepted_values of 1 and 2 and a custom check finding x > 3 passed where
// Spark reads a 5 that fails them. Such a table is refused, naming both
// files, the column and the default. A CURRENT_DEFAULT alone (Spark writes
// by it, reads a missing column as NULL), and a default of a column every
// file holds, pass.
func TestExistsDefault61SparkFillsAMissingColumnWithItsDefault(t *testing.T) {
	checks := []Check{
		{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(3)},
		{Kind: KindAcceptedValues, Column: "x", Values: []string{"1", "2"}},
		{Kind: KindSQL, SQL: `SELECT * FROM "t" WHERE x > 3`},
	}
	for _, c := range []struct {
		name    string
		spark   string
		both    bool
		refused bool
	}{
		{"exists_default_missing", defaultSpark, false, true},
		{"current_default_missing", currentDefaultSpark, false, false},
		{"exists_default_everywhere", defaultSpark, true, false},
	} {
		for _, check := range checks {
			rep, res := review39Audit(t, existsDefaultDir(t, c.spark, c.both), check)
			if !c.refused {
				if !rep.Passed {
					t.Errorf("%s, %s: %s %q; want it passed", c.name, check.Kind, res.Status, res.Message)
				}
				continue
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, `t/part-1.parquet lacks column "x"`) ||
				!strings.Contains(res.Message, "t/part-0.parquet declares it the default \"5\" (EXISTS_DEFAULT)") {
				t.Errorf("%s, %s: %s %q; Spark reads part-1's x as 5: want it refused naming both files, the column and the default", c.name, check.Kind, res.Status, res.Message)
				continue
			}
			t.Logf("refused: %s", res.Message)
		}
	}
	if testing.Short() {
		return
	}
	python, err := sparkPython()
	if err != nil {
		t.Logf("Spark's reading skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
		return
	}
	want := map[string]string{ // x by id, each reader and mergeSchema alike
		"exists_default_missing":    "1 | 5",
		"current_default_missing":   "1 | NULL",
		"exists_default_everywhere": "1 | 2",
	}
	var args []string
	for name, c := range map[string]struct {
		spark string
		both  bool
	}{"exists_default_missing": {defaultSpark, false}, "current_default_missing": {currentDefaultSpark, false}, "exists_default_everywhere": {defaultSpark, true}} {
		src := existsDefaultDir(t, c.spark, c.both)
		args = append(args, name+"="+filepath.Join(src.root, "b1", "t"))
	}
	const read = `import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("OFF")
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for merge in ["true", "false"]:
        for a in sys.argv[1:]:
            name, path = a.split("=", 1)
            rows = s.read.option("mergeSchema", merge).parquet(path).orderBy("id").collect()
            print(vec + "/" + merge + "\t" + name + "\t" + " | ".join("NULL" if r["x"] is None else str(r["x"]) for r in rows))
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	sparkReadingsAre(t, out, want, "vectorized/mergeSchema", 4)
}

// TestMerge61ExistsDefaultsAcrossFilesAreAuditedWhole: the incremental
// audit reads the batch's files alone, where each reads alike to Spark
// and DuckDB. Either way round: a batch declaring x's EXISTS_DEFAULT 5
// beside unchanged files without x, and a batch without x beside
// unchanged files declaring it, under a not_null of id (a check of x
// would make the second run full: batchLacks). The full audit refuses
// both, as Spark reads the unchanged rows' x (or the batch's) as 5 and
// DuckDB NULL; before the fix both passed incrementally; now the audit
// runs full. A batch holding x beside them stays incremental.
func TestMerge61ExistsDefaultsAcrossFilesAreAuditedWhole(t *testing.T) {
	ids := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindNotNull, Table: "t", Column: "id"}}}
	eachCache(t, func(t *testing.T, cache bool) {
		t.Run("batch_declares", func(t *testing.T) {
			r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": "SELECT 1::BIGINT AS id"}, "SELECT 2::BIGINT AS id", ids)
			s := cid("s1")
			r.lake.branch(t, cid("c001"), s)
			r.lake.commit(s, []string{cid("c001")}, nil)
			writeSQLMeta(t, r.lake, s, "data/t/s1/part-0.parquet", "SELECT 3::BIGINT AS id, 1::BIGINT AS x", defaultSpark)
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `declares column "x" the default "5" (EXISTS_DEFAULT) in its Spark schema`)
		})
		t.Run("table_declares", func(t *testing.T) {
			r := newMemoRigWith(t, cache, ids, func(l *lakeSim, ref, path string) {
				writeSQLMeta(t, l, ref, path, "SELECT 1::BIGINT AS id, 1::BIGINT AS x", defaultSpark)
			})
			// A batch holding x, with the default or not, stays
			// incremental.
			for i, spark := range []string{defaultSpark, ""} {
				h := cid(fmt.Sprintf("h%d", i))
				r.lake.branch(t, cid("c001"), h)
				r.lake.commit(h, []string{cid("c001")}, nil)
				writeSQLMeta(t, r.lake, h, "data/t/h/part-0.parquet", "SELECT 3::BIGINT AS id, 2::BIGINT AS x", spark)
				if rep := r.audit(Request{Ref: h, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
					t.Fatalf("a batch holding x (Spark schema %q): mode %s (%s), passed %v: %+v", spark, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
				}
			}
			s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", "SELECT 3::BIGINT AS id")
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `declares column "x" the default "5" (EXISTS_DEFAULT) in its Spark schema`)
		})
	})
}
