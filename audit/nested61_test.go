package audit

import (
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
