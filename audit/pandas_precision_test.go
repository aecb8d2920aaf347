package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// pandasAnswer is what pandas_unique.py printed for one table.
type pandasAnswer struct {
	Dtype      string `json:"dtype"`
	Duplicates int64  `json:"duplicates"`
	Error      string `json:"error"`
}

// TestPandasReadsBigIdsWithNullsAsFloat: pandas reads a 64-bit integer
// column that holds a NULL as float64 (pyarrow's to_pandas, read_parquet,
// read_csv alike), and float64 does not hold every integer beyond ±2^53:
// the ids 2^53 and 2^53+1 both read 9007199254740992.0. A unique(id) check
// over such a table counts no duplicates (DuckDB reads BIGINT) while a
// pandas reader of main finds two rows of one id. Before the fix lakewap
// passed the check; now it refuses it, naming the column and pandas. The
// same ids without the NULL (pandas reads int64), and ids within ±2^53
// with a NULL, are read alike and pass.
func TestPandasReadsBigIdsWithNullsAsFloat(t *testing.T) {
	cases := []struct {
		name, format, query string
		refused             bool
	}{
		{"big_with_null", FormatParquet, "SELECT * FROM (VALUES (9007199254740992::BIGINT), (9007199254740993), (NULL)) v(id)", true},
		{"negative_big_with_null", FormatParquet, "SELECT * FROM (VALUES (-9007199254740992::BIGINT), (-9007199254740993), (NULL), (5)) v(id)", true},
		{"ubigint_big_with_null", FormatParquet, "SELECT * FROM (VALUES (18446744073709551614::UBIGINT), (18446744073709551615::UBIGINT), (NULL)) v(id)", true},
		{"csv_big_with_null", FormatCSV, "SELECT id, 'x' AS name FROM (VALUES (1152921504606846977::BIGINT), (1152921504606846976), (NULL)) v(id)", true},
		{"big_without_null", FormatParquet, "SELECT * FROM (VALUES (9007199254740992::BIGINT), (9007199254740993)) v(id)", false},
		{"small_with_null", FormatParquet, "SELECT * FROM (VALUES (9007199254740991::BIGINT), (9007199254740990), (NULL)) v(id)", false},
	}
	src := newDirSource(t)
	var args []string
	for _, c := range cases {
		ext := map[string]string{FormatParquet: ".parquet", FormatCSV: ".csv"}[c.format]
		src.write(t, "b1", c.name+"/a"+ext, c.query)
		format := map[string]string{FormatParquet: "parquet", FormatCSV: "csv"}[c.format]
		args = append(args, format+":id:"+filepath.Join(src.root, "b1", c.name))
	}
	if python, err := testPython(); err != nil {
		t.Logf("pandas not run (%v); scripts/pyenv.sh installs it (./test.sh runs it)", err)
	} else if !testing.Short() {
		answers := runPandas(t, python, args)
		for i, c := range cases {
			a := answers[i]
			if a.Error != "" {
				t.Fatalf("%s: pandas cannot read it: %s", c.name, a.Error)
			}
			// A refused table is one pandas reads otherwise: float64 and
			// duplicates, where DuckDB reads none.
			if got := a.Dtype == "float64" && a.Duplicates > 0; got != c.refused {
				t.Fatalf("%s: pandas reads %s with %d duplicates: the case shows nothing", c.name, a.Dtype, a.Duplicates)
			}
		}
	}
	// Each way a unique check is counted: a bitmap in the aggregate scan
	// (newEngine's), the hash table in it, the grouped scan.
	bitmap, hashed, grouped := newEngine(t, src, ""), newEngine(t, src, ""), newEngine(t, src, "")
	hashed.bitmapUniqueBytes = 1 << 62
	grouped.bitmapUniqueBytes, grouped.groupedUniqueBytes = 1<<62, 0
	for _, e := range []*Engine{bitmap, hashed, grouped} {
		for _, c := range cases {
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: c.format}},
					Checks: []Check{{Kind: KindUnique, Table: "t", Column: "id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Errorf("%s: refused, though pandas reads it as DuckDB does: %s %q", c.name, res.Status, res.Message)
				}
				continue
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas reads") ||
				!strings.Contains(res.Message, `column "id" of table t`) || !strings.Contains(res.Message, "readers disagree") {
				t.Errorf("%s: unique(id) %s %q; pandas reads duplicate ids: want it refused naming the column and pandas", c.name, res.Status, res.Message)
			}
		}
	}
}

// TestPandasFloatRefusedIncrementally: pandas converts the whole column
// when any row is NULL, so the condition is table-wide: an attested file
// holds the NULL and the batch the big ids, or an attested file holds a
// big id and the batch the NULL and an id that collides with it as
// float64. The incremental audit refuses as the full one does, from the
// unchanged files' stored statistics (NonNull, Min, Max), without reading
// them. Before the fix both passed.
func TestPandasFloatRefusedIncrementally(t *testing.T) {
	cases := []struct {
		name            string
		attested, batch []string
		refused         bool
	}{
		{"null_before", []string{"NULL", "1"}, []string{"9007199254740992", "9007199254740993"}, true},
		{"big_before", []string{"9007199254740993", "1"}, []string{"NULL", "9007199254740992"}, true},
		{"small_ids_pass", []string{"NULL", "1"}, []string{"9007199254740991", "2"}, false},
	}
	eachCache(t, func(t *testing.T, cache bool) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := newMemoRigOf(t, cache, map[string][]string{"data/t/d.parquet": c.attested}, uniqueSuite())
				s := r.batch("c001", "s1", "data/t/s1/part-0.parquet", c.batch...)
				if !c.refused {
					if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); !rep.Passed || rep.Mode != ModeIncremental {
						t.Fatalf("%s %q passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
					}
					return
				}
				rep := wantFailsAsFull(t, r, s, cid("c001"), ModeIncremental, "")
				if u := check(rep, KindUnique); u.Status != schemas.StatusError || !strings.Contains(u.Message, "pandas reads") {
					t.Fatalf("unique: %s %q", u.Status, u.Message)
				}
			})
		}
	})
}

// runPandas runs pandas_unique.py over args and returns its answers.
func runPandas(t *testing.T, python string, args []string) []pandasAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return scriptAnswers[pandasAnswer](t, ctx, python, "pandas_unique.py", args)
}
