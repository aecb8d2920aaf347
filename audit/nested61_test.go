package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// nestedUnionScript is pandas' reading of a Parquet table's directory:
// the count of values of a nested leaf (argv[2]: "s.x" a struct member,
// "l[]" a list's elements, "m.value" a map's values) above argv[3], or
// for "l[].x" (a list's structs' member) of values repeated.
const nestedUnionScript = `import sys, pandas as pd
df = pd.read_parquet(sys.argv[1])
path, bound = sys.argv[2], float(sys.argv[3])
def vals(v):
    if path == "s.x":
        return [v["x"]] if v is not None else []
    if path == "l[]":
        return list(v) if v is not None else []
    if path == "l[].x":
        return [e["x"] for e in v] if v is not None else []
    return [kv[1] for kv in v] if v is not None else []
col = df[path.split(".")[0].split("[")[0]]
xs = [x for v in col for x in vals(v) if x is not None]
if path == "l[].x":
    print(len(xs) - len(set(xs)))  # unique
else:
    print(sum(1 for x in xs if x > bound))`

// TestNested61TypesUnionedAcrossFilesAreRefused: the attack of
// TestReader61TypesUnionedAcrossFilesAreRefused on a nested leaf: a
// struct member s.x, a list's elements l[] or a map's values m.value of
// one type in part-0.parquet and another in part-1.parquet. DuckDB
// (union_by_name) reads the files together in the leaf's union type
// (STRUCT(x DOUBLE), DOUBLE[], MAP(VARCHAR, DOUBLE)): 1e300 is 1e300;
// pyarrow's dataset, and so pandas.read_parquet of the directory (pandas
// 3.1.1, pyarrow 26.0.1), in the first file's type, FLOAT: 1e300 is inf,
// and a TIMESTAMP 12:00 in a list's struct beside a DATE first is its
// date (two equal dates to pandas, a unique check passed by DuckDB). A SQL check
// reading the leaf passed in DuckDB's reading, and pandas reads a value
// failing it: refused, naming both files, the leaf's path and the types.
func TestNested61TypesUnionedAcrossFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name, first, second, path, bound, sql string
		refused                               bool
	}{
		{"struct_float_then_double", "{'x': 0.5::FLOAT}", "{'x': 1e300::DOUBLE}", "s.x", "1e301",
			`SELECT * FROM "t" WHERE s.x > 1e301`, true},
		{"list_float_then_double", "[0.5::FLOAT]", "[1e300::DOUBLE]", "l[]", "1e301",
			`SELECT * FROM (SELECT unnest(l) AS v FROM "t") WHERE v > 1e301`, true},
		{"map_float_then_double", "MAP {'k': 0.5::FLOAT}", "MAP {'k': 1e300::DOUBLE}", "m.value", "1e301",
			`SELECT * FROM (SELECT unnest(map_values(m)) AS v FROM "t") WHERE v > 1e301`, true},
		{"list_of_structs_date_then_timestamp", "[{'x': DATE '2024-01-01'}]", "[{'x': TIMESTAMP '2024-01-01 12:00:00'}]", "l[].x", "0",
			`SELECT x FROM (SELECT unnest(l).x AS x FROM "t") GROUP BY x HAVING count(*) > 1`, true},
		{"struct_float_then_double_exact", "{'x': 0.5::FLOAT}", "{'x': 0.25::DOUBLE}", "s.x", "0.5",
			`SELECT * FROM "t" WHERE s.x > 0.5`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := c.path[:1]
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT "+c.first+" AS "+col)
			src.write(t, "b1", "t/part-1.parquet", "SELECT "+c.second+" AS "+col)
			dir := filepath.Join(src.root, "b1", "t")
			rep, res, _ := auditLikePandas(t, src, nestedUnionScript, []string{dir, c.path, c.bound}, FormatParquet, Check{Kind: KindSQL, SQL: c.sql}, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") || !strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, c.path) {
				t.Fatalf("%s %q (%s); pandas reads a failing value: want it refused naming both files and %s", res.Status, res.Message, res.Observed, c.path)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestNested61TypesUnionedAcrossFilesAreRefusedIncrementally: the attack
// of TestNested61TypesUnionedAcrossFilesAreRefused by a batch onto main
// whose attestation lets it be audited incrementally: a batch writing a
// struct s of DOUBLE x 0.1 and 0.1000000001 beside main's STRUCT(x FLOAT)
// file (first by path: pandas reads both as the FLOAT 0.1, a unique check
// on s fails), and a batch writing a FLOAT struct that sorts before
// main's DOUBLE one. The incremental audit, which reads the batch's files
// alone, sees the column's two types (schemaDisagreement: STRUCT(x FLOAT)
// and STRUCT(x DOUBLE)), runs full and refuses the table, naming the leaf.
func TestNested61TypesUnionedAcrossFilesAreRefusedIncrementally(t *testing.T) {
	floats, doubles := "{'x': 0.5::FLOAT}", "{'x': unnest([0.1, 0.1000000001])::DOUBLE}"
	for _, c := range []struct {
		name, mainValues, batchPath, batchValues string
	}{
		{"doubles_after_main_floats", floats, "data/t/part-b.parquet", doubles},
		{"floats_before_main_doubles", doubles, "data/t/a.parquet", floats},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Name: "u", Kind: KindUnique, Table: "t", Column: "s"}}}
			audit := attestedBatches(t, suite, "SELECT "+c.mainValues+" AS s")
			// A first batch of main's type: passed, and attested.
			first := strings.ReplaceAll(c.mainValues, "0.", "2.")
			if rep := audit("data/t/part-?.parquet", "SELECT "+first+" AS s"); !rep.Passed {
				t.Fatalf("a batch of main's type: %s %q", rep.Checks[0].Status, rep.Checks[0].Message)
			}
			rep := audit(c.batchPath, "SELECT "+c.batchValues+" AS s")
			res := rep.Checks[0]
			if rep.Passed || rep.Mode != ModeFull || res.Status != schemas.StatusError || !strings.Contains(res.Message, `leaf "s.x" is DOUBLE there and FLOAT in file`) {
				t.Fatalf("passed=%v %s (%q) %s %q: want the table refused by a full audit", rep.Passed, rep.Mode, rep.ModeReason, res.Status, res.Message)
			}
			t.Logf("%s (%s): %s", rep.Mode, rep.ModeReason, res.Message)
		})
	}
}

// TestNested61TooManyNestedLeavesAreRefused: a file whose struct has more
// nested leaves than unionValues compares (maxUnionLeaves), beside
// another file of the table, a check reading the column: refused, naming
// the file and the bound, not passed uncompared.
func TestNested61TooManyNestedLeavesAreRefused(t *testing.T) {
	fields := make([]string, maxUnionLeaves+1)
	for i := range fields {
		fields[i] = fmt.Sprintf("'f%d': 0.5::FLOAT", i)
	}
	src := newBatchSource(t)
	src.write(t, "b1", "t/part-0.parquet", "SELECT {"+strings.Join(fields, ", ")+"} AS s")
	src.write(t, "b1", "t/part-1.parquet", "SELECT {'f0': 1e300::DOUBLE} AS s")
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Kind: KindSQL, Table: "t", SQL: `SELECT * FROM "t" WHERE s.f0 > 1e301`}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Checks[0]
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet has more than 4096 nested leaves") {
		t.Fatalf("%s %q: want the file of too many leaves refused", res.Status, res.Message)
	}
	t.Logf("refused: %s", res.Message)
}
