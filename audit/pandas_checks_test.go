package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// pandasViolations is a Python script: it reads the Parquet tables of
// argv[2:] (NAME=DIR) with pandas.read_parquet, as their users do, and
// prints how many violations pandas finds of the check argv[1] names:
// "unique:a,b[:where col=val]", "accepted:col:v1,v2", "isin:child.col:parent.col".
const pandasViolations = `
import sys, pandas as pd
check = sys.argv[1].split(":")
t = {a.split("=", 1)[0]: pd.read_parquet(a.split("=", 1)[1]) for a in sys.argv[2:]}
if check[0] == "unique":
    df = t["t"]
    if len(check) > 2:
        col, val = check[2].split("=")
        df = df[df[col] == int(val)]
    cols = check[1].split(",")
    if len(cols) == 1:
        print(int(df[cols[0]].dropna().duplicated().sum()))
    else:
        print(int(df.duplicated(subset=cols).sum()))
elif check[0] == "accepted":
    s = t["t"][check[1]].dropna()
    print(int((~s.isin([int(v) for v in check[2].split(",")])).sum()))
else:
    ct, cc = check[1].split("."); pt, pc = check[2].split(".")
    s = t[ct][cc].dropna()
    print(int((~s.isin(t[pt][pc].dropna())).sum()))
`

// relationshipsSQL is dbtCheck's SQL of relationships from child.col to
// parent.field.
func relationshipsSQL(t *testing.T, child, col, parent, field string) string {
	t.Helper()
	c, err := dbtCheck(child, dbtTest{kind: "relationships", args: map[string]any{"column_name": col, "to": "ref('" + parent + "')", "field": field}},
		func(m string) (string, bool) { return m, true })
	if err != nil {
		t.Fatal(err)
	}
	return c.SQL
}

// TestPandasFloatUnderOtherChecks: pandas reads a 64-bit integer column
// that holds a NULL as float64, where 2^53 and 2^53+1 read as one value
// (TestPandasReadsBigIdsWithNullsAsFloat refuses a single-column unique
// over it). The other checks over such a column read otherwise in pandas
// too (pandas 3.1.1, run here): a multi-column unique over (a, b) with a =
// 2^53, 2^53+1 and b equal counts a duplicate in pandas' duplicated, none
// in DuckDB; a unique with where whose NULL lies in a row the condition
// leaves out (pandas converts the column before it filters); an
// accepted_values of 2^53+1 over a column holding it (pandas' isin compares
// the float 2^53 with the int 2^53+1 exactly: not in the list); dbt's
// relationships from a child column holding 2^53+1 and a NULL to a parent
// holding 2^53+1, or the reverse (isin of the one in the other is False).
// Before the fix the audit passed all five; now each is refused naming
// pandas and the column. Without the NULL, or with ids within 2^53, they
// pass.
func TestPandasFloatUnderOtherChecks(t *testing.T) {
	const big = "9007199254740993"
	cases := []struct {
		name    string
		tables  map[string]string // table name: its one file's query
		check   Check
		pandas  string // the script's check
		refused bool
		column  string // the column the refusal names
	}{
		{"multi_unique", map[string]string{"t": "SELECT * FROM (VALUES (9007199254740992::BIGINT, 1), (9007199254740993, 1), (NULL, 2)) v(a, b)"},
			Check{Kind: KindUnique, Table: "t", Columns: []string{"a", "b"}}, "unique:a,b", true, "a"},
		{"multi_unique_second_column", map[string]string{"t": "SELECT * FROM (VALUES (1, 9007199254740992::BIGINT), (1, 9007199254740993), (2, NULL)) v(b, a)"},
			Check{Kind: KindUnique, Table: "t", Columns: []string{"b", "a"}}, "unique:b,a", true, "a"},
		{"multi_unique_without_null", map[string]string{"t": "SELECT * FROM (VALUES (9007199254740992::BIGINT, 1), (9007199254740993, 1), (3, 2)) v(a, b)"},
			Check{Kind: KindUnique, Table: "t", Columns: []string{"a", "b"}}, "unique:a,b", false, ""},
		{"unique_where", map[string]string{"t": "SELECT * FROM (VALUES (9007199254740992::BIGINT, 1), (9007199254740993, 1), (NULL, 0)) v(id, x)"},
			Check{Kind: KindUnique, Table: "t", Column: "id", Where: "x = 1"}, "unique:id:x=1", true, "id"},
		{"accepted_values", map[string]string{"t": "SELECT * FROM (VALUES (9007199254740993::BIGINT), (NULL)) v(id)"},
			Check{Kind: KindAcceptedValues, Table: "t", Column: "id", Values: []string{big, "1"}}, "accepted:id:" + big + ",1", true, "id"},
		{"accepted_values_small", map[string]string{"t": "SELECT * FROM (VALUES (9007199254740991::BIGINT), (NULL)) v(id)"},
			Check{Kind: KindAcceptedValues, Table: "t", Column: "id", Values: []string{"9007199254740991"}}, "accepted:id:9007199254740991", false, ""},
		{"relationships_child", map[string]string{"c": "SELECT * FROM (VALUES (9007199254740993::BIGINT), (NULL)) v(fk)", "p": "SELECT 9007199254740993::BIGINT AS id"},
			Check{Kind: KindCrossTable, SQL: relationshipsSQL(t, "c", "fk", "p", "id")}, "isin:c.fk:p.id", true, "fk"},
		{"relationships_parent", map[string]string{"c": "SELECT 9007199254740993::BIGINT AS fk", "p": "SELECT * FROM (VALUES (9007199254740993::BIGINT), (NULL)) v(id)"},
			Check{Kind: KindCrossTable, SQL: relationshipsSQL(t, "c", "fk", "p", "id")}, "isin:c.fk:p.id", true, "id"},
		{"relationships_without_null", map[string]string{"c": "SELECT 9007199254740993::BIGINT AS fk", "p": "SELECT 9007199254740993::BIGINT AS id"},
			Check{Kind: KindCrossTable, SQL: relationshipsSQL(t, "c", "fk", "p", "id")}, "isin:c.fk:p.id", false, ""},
	}
	python, perr := testPython()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			var tables []Table
			var args []string
			for name, q := range c.tables {
				src.write(t, "b1", name+"/part-0.parquet", q)
				tables = append(tables, Table{Name: name, Path: name + "/"})
				args = append(args, name+"="+filepath.Join(src.root, "b1", name))
			}
			if perr == nil && !testing.Short() {
				out, err := exec.Command(python, append([]string{"-c", pandasViolations, c.pandas}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("pandas: %v: %s", err, out)
				}
				if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
					t.Fatalf("pandas finds %s violations: the case shows nothing", out)
				}
			}
			c.check.Name = "c"
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: tables, Checks: []Check{c.check}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("refused, though pandas reads it as DuckDB does: %s %q", res.Status, res.Message)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas reads") ||
				!strings.Contains(res.Message, fmt.Sprintf("column %q", c.column)) || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds violations: want it refused naming column %s and pandas", res.Status, res.Message, c.column)
			}
		})
	}
}

// newMemoRigSQL is newMemoRigOf whose files are queries: old's at c000,
// then s0's file as an attested publish c001.
func newMemoRigSQL(t *testing.T, cache bool, old map[string]string, s0 string, suite Suite) *memoRig {
	lake := newLakeSim(t)
	lake.commit(cid("c000"), nil, nil)
	for p, q := range old {
		lake.write(t, cid("c000"), p, q)
	}
	r := &memoRig{t: t, lake: lake, suite: suite}
	r.engines(cache)
	s := r.batchSQL("c000", "s0", "data/t/s0/part-0.parquet", s0)
	rep := r.audit(Request{Ref: s, BaseRef: cid("c000"), Full: true})
	r.publish("c000", "s0", "c000", "c001", rep)
	return r
}

// batchSQL is batch of a file written by query q.
func (r *memoRig) batchSQL(from, name, path, q string) string {
	from, name = cid(from), cid(name)
	r.lake.branch(r.t, from, name)
	r.lake.commit(name, []string{from}, nil)
	r.lake.write(r.t, name, path, q)
	return name
}

// TestPandasFloatUnderOtherChecksIncrementally: pandas converts the whole
// column when any row is NULL, so an attested file holding the NULL and a
// batch holding ids beyond 2^53 (or the reverse) read otherwise in pandas
// for a multi-column unique and an accepted_values check, which the
// incremental audit judges from the batch's rows and the unchanged files'
// statistics. Before the fix both passed incrementally (and were refused by
// the full audit); now the incremental audit refuses them from the
// statistics, as TestPandasFloatRefusedIncrementally does a single-column
// unique. Ids within 2^53 pass incrementally.
func TestPandasFloatUnderOtherChecksIncrementally(t *testing.T) {
	multi := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindUnique, Table: "t", Columns: []string{"id", "b"}}}}
	accepted := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindAcceptedValues, Table: "t", Column: "id",
		Values: []string{"1", "2", "3000", "9007199254740991", "9007199254740992", "9007199254740993"}}}}
	pairs := func(rows ...string) string { return "SELECT * FROM (VALUES " + strings.Join(rows, ", ") + ") v(id, b)" }
	cases := []struct {
		name           string
		suite          Suite
		old, s0, batch string
		refused        bool
	}{
		{"multi_null_before", multi, pairs("(NULL::BIGINT, 1)", "(1, 1)"), pairs("(3000::BIGINT, 1)"), pairs("(9007199254740992::BIGINT, 1)", "(9007199254740993, 1)"), true},
		{"multi_big_before", multi, pairs("(9007199254740993::BIGINT, 1)", "(1, 1)"), pairs("(3000::BIGINT, 1)"), pairs("(NULL::BIGINT, 2)", "(9007199254740992, 1)"), true},
		{"multi_small_pass", multi, pairs("(NULL::BIGINT, 1)", "(1, 1)"), pairs("(3000::BIGINT, 1)"), pairs("(9007199254740991::BIGINT, 1)", "(2, 1)"), false},
		{"accepted_null_before", accepted, idsSQL("NULL", "1"), idsSQL("3000"), idsSQL("9007199254740993"), true},
		{"accepted_big_before", accepted, idsSQL("9007199254740993", "1"), idsSQL("3000"), idsSQL("NULL", "2"), true},
		{"accepted_small_pass", accepted, idsSQL("NULL", "1"), idsSQL("3000"), idsSQL("9007199254740991"), false},
	}
	eachCache(t, func(t *testing.T, cache bool) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": c.old}, c.s0, c.suite)
				s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", c.batch)
				if !c.refused {
					if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); !rep.Passed || rep.Mode != ModeIncremental {
						t.Fatalf("%s %q passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
					}
					return
				}
				rep := wantFailsAsFull(t, r, s, cid("c001"), ModeIncremental, "")
				if u := check(rep, c.suite.Checks[0].Kind); u.Status != schemas.StatusError || !strings.Contains(u.Message, "pandas reads") ||
					!strings.Contains(u.Message, `column "id"`) {
					t.Fatalf("%s: %s %q", c.suite.Checks[0].Kind, u.Status, u.Message)
				}
			})
		}
	})
}

// TestPandasFiguresDoNotRereadLongText: the statistics an incremental
// audit keeps for pandas' reading (every column of a unique key, an
// accepted_values column) need a column's non-NULL count, and its min and
// max only when it is an integer: a text key column whose values are longer
// than maxStatValueBytes (no min or max stored) must not make the unchanged
// files be read again at every audit, as a column whose min and max a plan
// compares does. Asked first for the count and then for the range (another
// check), the column needs both.
func TestPandasFiguresDoNotRereadLongText(t *testing.T) {
	text := fileStats{Rows: 2, Schema: [][2]string{{"url", "VARCHAR"}}, Cols: map[string]colStats{"url": {Type: "VARCHAR", NonNull: 2}}, Spark: noSparkFacts}
	ints := fileStats{Rows: 2, Schema: [][2]string{{"id", "BIGINT"}}, Cols: map[string]colStats{"id": {Type: "BIGINT", NonNull: 2}}, Spark: noSparkFacts}
	var count, both statsNeed
	count.addCol(colNeed{name: "url", countOnly: true})
	both.addCol(colNeed{name: "url", countOnly: true})
	both.addCol(colNeed{name: "url"})
	if !text.has(count) {
		t.Error("a long text column's count is wanted again")
	}
	if text.has(both) || len(both.cols) != 1 || both.cols[0].countOnly {
		t.Errorf("asked for its range too, the column needs it: %+v", both.cols)
	}
	var id statsNeed
	id.addCol(colNeed{name: "id", countOnly: true})
	if ints.has(id) {
		t.Error("an integer column without its min and max is taken for pandas' reading")
	}
	if summaryKey("r", Table{Path: "t/"}, count) == summaryKey("r", Table{Path: "t/"}, both) {
		t.Error("a summary of counts only is taken for one of ranges")
	}
}

// TestRelationshipsOfReadsDbtSQL: relationshipsOf reads back the tables and
// columns of the SQL dbtCheck writes, with a where condition and quotes in
// names too, and nothing of other SQL.
func TestRelationshipsOfReadsDbtSQL(t *testing.T) {
	for _, c := range []struct {
		child, col, parent, field, where string
	}{
		{"orders", "customer_id", "customers", "id", ""},
		{`we"ird`, `c"ol`, "p", "f", ""},
		{"orders", "customer_id", "customers", "id", "status = 'x' AND (a) = (b)\n-- note"},
	} {
		args := map[string]any{"column_name": c.col, "to": "ref('" + c.parent + "')", "field": c.field}
		if c.where != "" {
			args["where"] = c.where
		}
		chk, err := dbtCheck(c.child, dbtTest{kind: "relationships", args: args}, func(m string) (string, bool) { return m, true })
		if err != nil {
			t.Fatal(err)
		}
		child, col, parent, field, ok := relationshipsOf(chk.SQL)
		if !ok || child != c.child || col != c.col || parent != c.parent || field != c.field {
			t.Errorf("%q: read %q %q %q %q %v", chk.SQL, child, col, parent, field, ok)
		}
	}
	for _, q := range []string{
		"SELECT * FROM t WHERE id IS NULL",
		`SELECT child.* FROM "c" AS child WHERE child."a" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "p" AS parent WHERE parent."id" = child."b")`,
	} {
		if _, _, _, _, ok := relationshipsOf(q); ok {
			t.Errorf("%q read as relationships", q)
		}
	}
}

// TestRegexOverColumnsPandasRendersOtherwise: a regex check matches the
// pattern against the column's values as text. DuckDB renders an INTEGER
// 12345 as "12345" and a BOOLEAN as "true"; pandas reads an integer column
// holding a NULL as float64, and Great Expectations' pandas regex
// (column.astype(str).str.contains, great_expectations' _pandas of
// column_values.match_regex) matches "12345.0", and a boolean as "True".
// pandas 3.1.1 (run here) finds ^[0-9]{5}$ unmatched and ^(true|false)$
// too, where the audit passed both; and a batch of one NULL onto an
// attested table of ids 1, 2, 3000 passed ^[0-9]+$ incrementally (its own
// row is NULL) and fully, where pandas now renders every id "1.0". Now
// they are refused, full and incremental; an integer column without a
// NULL, and a text column, pass.
func TestRegexOverColumnsPandasRendersOtherwise(t *testing.T) {
	cases := []struct {
		name, query, pattern string
		refused              bool
	}{
		{"int_with_null", "SELECT * FROM (VALUES (12345), (NULL)) v(c)", "^[0-9]{5}$", true},
		{"bigint_with_null", "SELECT * FROM (VALUES (12345::BIGINT), (NULL)) v(c)", "^[0-9]{5}$", true},
		{"boolean", "SELECT * FROM (VALUES (true), (false)) v(c)", "^(true|false)$", true},
		{"int_without_null", "SELECT * FROM (VALUES (12345), (54321)) v(c)", "^[0-9]{5}$", false},
		{"text_with_null", "SELECT * FROM (VALUES ('12345'), (NULL)) v(c)", "^[0-9]{5}$", false},
		// Types whose text pandas renders otherwise than DuckDB's CAST to
		// VARCHAR, whatever their NULLs: pandas 3.1.1 reads each of these
		// from Parquet as shown (the test runs it).
		{"timestamp_midnights", "SELECT * FROM (VALUES (TIMESTAMP '2024-01-01 00:00:00'), (TIMESTAMP '2024-01-02 00:00:00')) v(c)", `^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`, true}, // 2024-01-01
		{"timestamp_fraction", "SELECT * FROM (VALUES (TIMESTAMP '2024-01-01 01:02:03.5')) v(c)", `:03\.5$`, true},                                                                 // 01:02:03.500
		{"timestamp_ns", "SELECT * FROM (VALUES (TIMESTAMP_NS '2024-01-01 01:02:03.5')) v(c)", `:03\.5$`, true},
		{"timestamptz", "SELECT * FROM (VALUES (TIMESTAMPTZ '2024-01-01 01:02:03+00')) v(c)", `:03\+00$`, true},         // 01:02:03+00:00
		{"time_fraction", "SELECT * FROM (VALUES (TIME '01:02:03.5')) v(c)", `:03\.5$`, true},                           // 01:02:03.500000
		{"float", "SELECT * FROM (VALUES (1e15::FLOAT), (0.0001::FLOAT)) v(c)", `^[0-9.]+$`, true},                      // 1e+15, 1e-04
		{"decimal_scale_7", "SELECT * FROM (VALUES (0.0000001::DECIMAL(18,7)), (0::DECIMAL(18,7))) v(c)", `^0\.`, true}, // 1E-7, 0E-7
		{"blob", `SELECT * FROM (VALUES ('\x00a'::BLOB)) v(c)`, `^\\x00a$`, true},                                       // a NUL and a
		{"list", "SELECT * FROM (VALUES ([1, 2])) v(c)", `^\[1, 2\]$`, true},                                            // [1 2]
		{"struct", "SELECT * FROM (VALUES ({'a': 1, 'b': 'x'})) v(c)", `'b': x\}$`, true},                               // {'a': 1, 'b': 'x'}
		{"map", "SELECT * FROM (VALUES (MAP {'k': 1})) v(c)", `^\{k=1\}$`, true},                                        // [('k', 1)]
		{"interval", "SELECT * FROM (VALUES (INTERVAL 1 DAY)) v(c)", `day`, true},                                       // its 12 bytes
		{"timestamp_whole_seconds", "SELECT * FROM (VALUES (TIMESTAMP '2024-01-01 01:02:03'), (TIMESTAMP '2024-01-02 00:00:00'), (NULL)) v(c)", `^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`, false},
		{"timestamp_ms_whole_seconds", "SELECT * FROM (VALUES (TIMESTAMP_MS '2024-01-01 01:02:03'), (NULL)) v(c)", `^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`, false},
		{"date", "SELECT * FROM (VALUES (DATE '2024-01-01'), (NULL)) v(c)", `^\d{4}-\d{2}-\d{2}$`, false},
		// pandas renders doubles as DuckDB does (1e+16, 1e-05 too); Spark
		// does not beyond 10^7 and under 10^-3: TestRegexOverDoublesSparkRendersOtherwise.
		{"double", "SELECT * FROM (VALUES (0.001::DOUBLE), (9999999.5::DOUBLE), (0.1::DOUBLE), (-2.5::DOUBLE)) v(c)", `^-?(?:0\.001|9999999\.5|0\.1|2\.5)$`, false},
		{"decimal_scale_6", "SELECT * FROM (VALUES (0.000001::DECIMAL(18,6)), (0::DECIMAL(18,6)), (NULL)) v(c)", `^0\.[0-9]{6}$`, false},
		{"uuid", "SELECT * FROM (VALUES ('550e8400-e29b-41d4-a716-446655440000'::UUID)) v(c)", `^[0-9a-f-]{36}$`, false},
	}
	python, perr := testPython()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", c.query)
			if perr == nil && !testing.Short() {
				out, err := exec.Command(python, "-c", "import sys, pandas as pd; s = pd.read_parquet(sys.argv[1])['c'].dropna(); print(int((~s.astype(str).str.contains(sys.argv[2])).sum()))",
					filepath.Join(src.root, "b1", "t"), c.pattern).CombinedOutput()
				if err != nil {
					t.Fatalf("pandas: %v: %s", err, out)
				}
				if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
					t.Fatalf("pandas finds %s rows unmatched: the case shows nothing", out)
				}
			}
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "c", Kind: KindRegex, Table: "t", Column: "c", Pattern: c.pattern}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("refused, though pandas renders it as DuckDB does: %s %q", res.Status, res.Message)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas") ||
				!strings.Contains(res.Message, `column "c"`) || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds rows unmatched: want it refused naming column c and pandas", res.Status, res.Message)
			}
		})
	}
	// Incremental: the batch brings a NULL to an attested table of ids,
	// whose rows (unchanged, passed) pandas now renders with a fraction.
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindRegex, Table: "t", Column: "id", Pattern: "^[0-9]+$"}}}
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": idsSQL("1", "2")}, idsSQL("3000"), suite)
		s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", idsSQL("NULL"))
		rep := wantFailsAsFull(t, r, s, cid("c001"), ModeIncremental, "")
		if u := check(rep, KindRegex); u.Status != schemas.StatusError || !strings.Contains(u.Message, "pandas") {
			t.Fatalf("regex: %s %q", u.Status, u.Message)
		}
	})
}

// TestJSONIdsBeyondInt64UnderOtherChecks: pyarrow's JSON reader (26.0.1)
// reads an integer beyond the int64 range as a double, where DuckDB reads
// HUGEINT; a single-column unique over such a column is refused
// (TestReview12JSONIdsBeyondInt64AreRefusedUnderUnique). pyarrow (run
// here: read_json, to_pandas) reads (2^64-2, 1) and (2^64-1, 1) as one row
// of a multi-column unique, and isin([2^64-1]) of either is False, where
// the audit passed both. Now refused; ids within int64 pass.
func TestJSONIdsBeyondInt64UnderOtherChecks(t *testing.T) {
	cases := []struct {
		name, json string
		check      Check
		pyarrow    string // the script's check, as pandasViolations's
		refused    bool
	}{
		{"multi_unique", "{\"a\": 18446744073709551614, \"b\": 1}\n{\"a\": 18446744073709551615, \"b\": 1}\n",
			Check{Kind: KindUnique, Columns: []string{"a", "b"}}, "unique:a,b", true},
		{"accepted_values", "{\"a\": 18446744073709551614, \"b\": 1}\n{\"a\": 18446744073709551615, \"b\": 2}\n",
			Check{Kind: KindAcceptedValues, Column: "a", Values: []string{"18446744073709551614", "18446744073709551615"}}, "accepted:a:18446744073709551614,18446744073709551615", true},
		{"within_int64", "{\"a\": 9223372036854775806, \"b\": 1}\n{\"a\": 9223372036854775807, \"b\": 1}\n",
			Check{Kind: KindUnique, Columns: []string{"a", "b"}}, "unique:a,b", false},
	}
	python, perr := testPython()
	src := newBatchSource(t)
	e := newEngine(t, src, "")
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.jsonl", c.json)
		if perr == nil && !testing.Short() {
			script := strings.Replace(pandasViolations, `pd.read_parquet(a.split("=", 1)[1])`, `pj.read_json(a.split("=", 1)[1]).to_pandas()`, 1)
			out, err := exec.Command(python, "-c", "import pyarrow.json as pj\n"+script, c.pyarrow, "t="+filepath.Join(src.root, "b1", c.name, "a.jsonl")).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: pyarrow: %v: %s", c.name, err, out)
			}
			if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
				t.Fatalf("%s: pyarrow finds %s violations: the case shows nothing", c.name, out)
			}
		}
		rep := auditTableAt(t, e, c.name+"/", FormatJSONL, c.check)
		res := rep.Checks[0]
		if c.refused && (rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pyarrow reads") || !strings.Contains(res.Message, `column "a"`)) {
			t.Errorf("%s: %s %q; pyarrow reads the ids as one: want it refused naming pyarrow and column a", c.name, res.Status, res.Message)
		}
		if !c.refused && !rep.Passed {
			t.Errorf("%s: refused: %s %q", c.name, res.Status, res.Message)
		}
	}
}

// TestGreatExpectationsValueSetOfAnotherType: Great Expectations' pandas
// expect_column_values_to_be_in_set is column.isin(value_set) (its
// _pandas of column_values.in_set), which compares values of their types:
// the string "1" is not the integer 1, 0.1 is not the float32 0.1 nor
// Decimal("0.1"), "2024-01-01" is not a date. The audit compares the
// column's text with the values' (FromGreatExpectations keeps each one's
// JSON text), which finds them. pandas 3.1.1 (run here) finds rows not in
// the set where the audit passed each case marked refused; now those are
// refused naming the column and the value, and the value sets whose types
// pandas compares as DuckDB does pass.
func TestGreatExpectationsValueSetOfAnotherType(t *testing.T) {
	cases := []struct {
		name, query, valueSet string
		refused               bool
	}{
		{"strings_in_bigint", "SELECT * FROM (VALUES (1::BIGINT), (2::BIGINT)) v(c)", `["1", "2"]`, true},
		{"numbers_in_text", "SELECT * FROM (VALUES ('1'), ('2')) v(c)", `[1, 2]`, true},
		{"boolean_in_text", "SELECT * FROM (VALUES ('true'), (NULL)) v(c)", `[true]`, true},
		{"strings_in_boolean", "SELECT * FROM (VALUES (true), (false)) v(c)", `["true", "false"]`, true},
		{"string_in_double", "SELECT * FROM (VALUES (0.5::DOUBLE)) v(c)", `["0.5"]`, true},
		{"number_in_float", "SELECT * FROM (VALUES (0.1::FLOAT), (0.5::FLOAT)) v(c)", `[0.1, 0.5]`, true},
		{"number_in_decimal", "SELECT * FROM (VALUES (0.1::DECIMAL(10,1)), (1.5::DECIMAL(10,1))) v(c)", `[0.1, 1.5]`, true},
		{"string_in_date", "SELECT * FROM (VALUES (DATE '2024-01-01')) v(c)", `["2024-01-01"]`, true},
		{"string_in_timestamp", "SELECT * FROM (VALUES (TIMESTAMP '2024-01-01 01:02:03')) v(c)", `["2024-01-01 01:02:03"]`, true},
		{"string_in_uuid", "SELECT * FROM (VALUES ('550e8400-e29b-41d4-a716-446655440000'::UUID)) v(c)", `["550e8400-e29b-41d4-a716-446655440000"]`, true},
		{"numbers_in_bigint", "SELECT * FROM (VALUES (1::BIGINT), (2::BIGINT), (NULL)) v(c)", `[1, 2]`, false},
		{"strings_in_text", "SELECT * FROM (VALUES ('a'), ('b'), (NULL)) v(c)", `["a", "b", null]`, false},
		{"booleans_in_boolean", "SELECT * FROM (VALUES (true), (false)) v(c)", `[true, false]`, false},
		{"number_in_double", "SELECT * FROM (VALUES (0.1::DOUBLE), (1e16::DOUBLE)) v(c)", `[0.1, 1e+16]`, false},
		{"exact_number_in_float", "SELECT * FROM (VALUES (0.5::FLOAT), (1.5::FLOAT)) v(c)", `[0.5, 1.5]`, false},
		{"exact_number_in_decimal", "SELECT * FROM (VALUES (1.5::DECIMAL(10,1)), (2::DECIMAL(10,1))) v(c)", `[1.5, 2.0]`, false},
	}
	python, perr := testPython()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", c.query)
			if perr == nil && !testing.Short() {
				out, err := exec.Command(python, "-c", "import sys, json, pandas as pd; s = pd.read_parquet(sys.argv[1])['c'].dropna(); print(int((~s.isin(json.loads(sys.argv[2]))).sum()))",
					filepath.Join(src.root, "b1", "t"), c.valueSet).CombinedOutput()
				if err != nil {
					t.Fatalf("pandas: %v: %s", err, out)
				}
				if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
					t.Fatalf("pandas finds %s rows not in the set: the case shows nothing", out)
				}
			}
			suite := fmt.Sprintf(`{"name": "s", "expectations": [{"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "c", "value_set": %s}}]}`, c.valueSet)
			imp, err := FromGreatExpectations([]byte(suite), "t")
			if err != nil || len(imp.Checks) != 1 {
				t.Fatalf("import: %v %+v", err, imp)
			}
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: imp.Checks}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("refused, though pandas compares it as DuckDB does: %s %q", res.Status, res.Message)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas") ||
				!strings.Contains(res.Message, `column "c"`) || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds rows not in the set: want it refused naming column c and pandas", res.Status, res.Message)
			}
		})
	}
}

// TestRegexOverTimestampsIncrementally: pandas renders a timestamp column
// by all its values (a fraction in one row gives every row its digits:
// 01:02:03.000), which the statistics of the unchanged files do not tell.
// An attested table of whole seconds and a batch of one value with a
// fraction: the full audit refuses the pattern, which pandas finds
// unmatched in the attested rows; the incremental audit, which read only
// the batch's rows, passed it. Now it runs full, saying why.
func TestRegexOverTimestampsIncrementally(t *testing.T) {
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindRegex, Table: "t", Column: "ts", Pattern: `:\d{2}(?:\.\d)?$`}}}
	ts := func(vs ...string) string {
		return "SELECT * FROM (VALUES " + strings.Join(each(vs, func(v string) string { return "(TIMESTAMP '" + v + "')" }), ", ") + ") v(ts)"
	}
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": ts("2024-01-01 01:02:03")}, ts("2024-01-02 01:02:03"), suite)
		s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", ts("2024-01-03 01:02:03.5"))
		rep := wantFailsAsFull(t, r, s, cid("c001"), ModeFull, "pandas renders by all the column's values")
		if u := check(rep, KindRegex); u.Status != schemas.StatusError || !strings.Contains(u.Message, "fraction") {
			t.Fatalf("regex: %s %q", u.Status, u.Message)
		}
	})
}

// sparkRegex reads each directory of Parquet files with Spark (a "dir
// pattern" argument each) and prints, one line each, the non-NULL values
// of column c that Great Expectations' Spark regex finds unmatched
// (column.rlike(pattern), Spark casting the column to text).
const sparkRegex = `
import sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
for arg in sys.argv[1:]:
    d, pattern = arg.split("\t", 1)
    c = F.col("c")
    print(spark.read.parquet(d).filter(c.isNotNull() & ~c.rlike(pattern)).count(), flush=True)
spark.stop()
`

// TestRegexOverDoublesSparkRendersOtherwise: Great Expectations' Spark
// regex is column.rlike(regex), and Spark 4.3.0 casts a double to text as
// Java does: 1.2345678E7, 1.0E-4, NaN, where DuckDB's text is 12345678.0,
// 0.0001, nan (pandas renders DuckDB's). Spark (run here) finds the
// patterns below unmatched where the audit passed them; now they are
// refused, and doubles from 10^-3 to 10^7, which both render alike,
// pass. Incrementally, the statistics do not tell the unchanged files'
// values: the audit runs full.
func TestRegexOverDoublesSparkRendersOtherwise(t *testing.T) {
	cases := []struct {
		name, query, pattern string
		refused              bool
	}{
		{"beyond_1e7", "SELECT * FROM (VALUES (12345678.0::DOUBLE), (1.5::DOUBLE), (NULL)) v(c)", `^[0-9]+\.[0-9]+$`, true},
		{"under_1e-3", "SELECT * FROM (VALUES (0.0001::DOUBLE), (0.5::DOUBLE)) v(c)", `^0\.[0-9]+$`, true},
		{"nan", "SELECT * FROM (VALUES ('nan'::DOUBLE), (0.5::DOUBLE)) v(c)", `^[a-z0-9.]+$`, true},
		{"within", "SELECT * FROM (VALUES (0.001::DOUBLE), (9999999.5::DOUBLE), (0::DOUBLE), (-2.5::DOUBLE), (NULL)) v(c)", `^-?[0-9]+\.[0-9]+$`, false},
	}
	src := newBatchSource(t)
	var args []string
	for _, c := range cases {
		src.write(t, "b1", c.name+"/part-0.parquet", c.query)
		args = append(args, filepath.Join(src.root, "b1", c.name)+"\t"+c.pattern)
	}
	if python, err := sparkPython(); err == nil && !testing.Short() {
		cmd := exec.Command(python, append([]string{"-c", sparkRegex}, args...)...)
		cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+python)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("spark: %v", err)
		}
		counts := strings.Fields(string(out))
		if len(counts) != len(cases) {
			t.Fatalf("spark printed %q", out)
		}
		for i, c := range cases {
			if (counts[i] != "0") != c.refused {
				t.Fatalf("%s: Spark finds %s rows unmatched: the case shows nothing", c.name, counts[i])
			}
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/"}}, Checks: []Check{{Name: "c", Kind: KindRegex, Table: "t", Column: "c", Pattern: c.pattern}}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		switch {
		case !c.refused && !rep.Passed:
			t.Errorf("%s: refused, though Spark renders it as DuckDB does: %s %q", c.name, res.Status, res.Message)
		case c.refused && (rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "Spark") || !strings.Contains(res.Message, "readers disagree")):
			t.Errorf("%s: %s %q; Spark finds rows unmatched: want it refused naming Spark", c.name, res.Status, res.Message)
		}
	}
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindRegex, Table: "t", Column: "v", Pattern: `^[0-9]+\.[0-9]+$`}}}
	doubles := func(v string) string { return "SELECT * FROM (VALUES (" + v + "::DOUBLE)) v(v)" }
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": doubles("1.5")}, doubles("2.5"), suite)
		s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", doubles("12345678.0"))
		rep := wantFailsAsFull(t, r, s, cid("c001"), ModeFull, "Spark renders otherwise")
		if u := check(rep, KindRegex); u.Status != schemas.StatusError || !strings.Contains(u.Message, "Spark") {
			t.Fatalf("regex: %s %q", u.Status, u.Message)
		}
	})
}

// TestJSONDateNamedColumnsPandasReadsAsDatetimes: pandas.read_json (lines)
// converts a column named like a date (updated_at, created_at, *_time,
// timestamp*, date, modified) to datetimes: numbers when every one is
// beyond a year in seconds (1704067200 reads 2024-01-01), and text it can
// parse (01/02/2024 reads 2024-01-02). DuckDB reads the numbers and the
// text as they are, so a regex matching epoch seconds and Great
// Expectations' value_set of them passed where pandas (3.1.1, run here)
// finds every row unmatched. Now they are refused; a column of another
// name, or of numbers pandas leaves as they are (one under a year in
// seconds), passes.
func TestJSONDateNamedColumnsPandasReadsAsDatetimes(t *testing.T) {
	cases := []struct {
		name, text, col, pattern, valueSet string
		refused                            bool
	}{
		{"epoch_regex", "{\"id\": 1, \"updated_at\": 1704067200}\n{\"id\": 2, \"updated_at\": 1704153600}\n", "updated_at", `^[0-9]{10}$`, "", true},
		{"epoch_value_set", "{\"id\": 1, \"updated_at\": 1704067200}\n{\"id\": 2, \"updated_at\": null}\n", "updated_at", "", `[1704067200]`, true},
		{"text_regex", "{\"id\": 1, \"created_at\": \"01/02/2024\"}\n", "created_at", `^\d{2}/\d{2}/\d{4}$`, "", true},
		{"small_number_too", "{\"id\": 1, \"updated_at\": 1704067200}\n{\"id\": 2, \"updated_at\": 1000}\n", "updated_at", `^[0-9]+$`, "", false},
		{"other_name", "{\"id\": 1, \"epoch\": 1704067200}\n", "epoch", `^[0-9]{10}$`, "", false},
	}
	python, perr := testPython()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.writeRaw(t, "b1", "t/a.jsonl", c.text)
			check := Check{Name: "c", Kind: KindRegex, Table: "t", Column: c.col, Pattern: c.pattern}
			script := "import sys, json, pandas as pd; s = pd.read_json(sys.argv[1], lines=True)[sys.argv[2]].dropna(); print(int((~s.astype(str).str.contains(sys.argv[3])).sum()))"
			arg := c.pattern
			if c.valueSet != "" {
				suite := fmt.Sprintf(`{"name": "s", "expectations": [{"type": "expect_column_values_to_be_in_set", "kwargs": {"column": %q, "value_set": %s}}]}`, c.col, c.valueSet)
				imp, err := FromGreatExpectations([]byte(suite), "t")
				if err != nil || len(imp.Checks) != 1 {
					t.Fatalf("import: %v %+v", err, imp)
				}
				check = imp.Checks[0]
				script = "import sys, json, pandas as pd; s = pd.read_json(sys.argv[1], lines=True)[sys.argv[2]].dropna(); print(int((~s.isin(json.loads(sys.argv[3]))).sum()))"
				arg = c.valueSet
			}
			if perr == nil && !testing.Short() {
				out, err := exec.Command(python, "-c", script, filepath.Join(src.root, "b1", "t", "a.jsonl"), c.col, arg).CombinedOutput()
				if err != nil {
					t.Fatalf("pandas: %v: %s", err, out)
				}
				if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
					t.Fatalf("pandas finds %s rows unmatched: the case shows nothing", out)
				}
			}
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatJSONL}}, Checks: []Check{check}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("refused, though pandas reads it as DuckDB does: %s %q", res.Status, res.Message)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds rows unmatched: want it refused naming read_json", res.Status, res.Message)
			}
		})
	}
}

// TestJSONNumericTextPandasReadsAsNumbers: pandas.read_json (lines)
// converts a column of strings that are all numbers' text to numbers
// (dtype's default): "01" and "1" read as 1, "007" as 7, "NaN" as missing.
// DuckDB (and pyarrow, Spark) read the text. pandas 3.1.1 (run here) finds
// a duplicate, unmatched rows, rows not in the set and a NULL where the
// audit passed unique, a regex, Great Expectations' value_set and
// not_null; now they are refused. A column of text that is not all
// numbers, and not_null over numbers' text without a NaN, pass.
func TestJSONNumericTextPandasReadsAsNumbers(t *testing.T) {
	codes := "{\"id\": 1, \"code\": \"01\"}\n{\"id\": 2, \"code\": \"1\"}\n{\"id\": 3, \"code\": \"007\"}\n"
	cases := []struct {
		name, text string
		check      Check
		pandas     string // prints the rows pandas finds failing the check, column c
		refused    bool
	}{
		{"unique", codes, Check{Kind: KindUnique, Column: "code"}, "print(int(c.dropna().duplicated().sum()))", true},
		{"regex", codes, Check{Kind: KindRegex, Column: "code", Pattern: `^(?:0|1$)`}, `print(int((~c.dropna().astype(str).str.contains("^(?:0|1$)")).sum()))`, true},
		{"value_set", codes, Check{Kind: KindAcceptedValues, Column: "code", Values: []string{"01", "1", "007"}, ValueTypes: []string{"string", "string", "string"}},
			`print(int((~c.dropna().isin(["01", "1", "007"])).sum()))`, true},
		{"not_null_nan", "{\"x\": \"NaN\"}\n{\"x\": \"1\"}\n", Check{Kind: KindNotNull, Column: "x"}, "print(int(c.isna().sum()))", true},
		{"not_null_numbers", "{\"x\": \"2\"}\n{\"x\": \"1\"}\n", Check{Kind: KindNotNull, Column: "x"}, "print(int(c.isna().sum()))", false},
		{"unique_one_text_each", "{\"code\": \"1\"}\n{\"code\": \"2\"}\n", Check{Kind: KindUnique, Column: "code"}, "print(int(c.dropna().duplicated().sum()))", false},
		{"regex_rendered_alike", "{\"code\": \"1\"}\n{\"code\": \"25\"}\n", Check{Kind: KindRegex, Column: "code", Pattern: `^[0-9]+$`}, `print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`, false},
		{"regex_fraction", "{\"code\": \"1.50\"}\n{\"code\": \"2.50\"}\n", Check{Kind: KindRegex, Column: "code", Pattern: `0$`}, `print(int((~c.dropna().astype(str).str.contains("0$")).sum()))`, true},
		{"whole_doubles_regex", "{\"v\": 1.0}\n{\"v\": 2.0}\n", Check{Kind: KindRegex, Column: "v", Pattern: `\.0$`}, `print(int((~c.dropna().astype(str).str.contains("\\.0$")).sum()))`, true},
		{"whole_doubles_with_null", "{\"v\": 1.0}\n{\"v\": null}\n", Check{Kind: KindRegex, Column: "v", Pattern: `\.0$`}, `print(int((~c.dropna().astype(str).str.contains("\\.0$")).sum()))`, false},
		{"doubles_with_a_fraction", "{\"v\": 1.5}\n{\"v\": 2.0}\n", Check{Kind: KindRegex, Column: "v", Pattern: `\.[05]$`}, `print(int((~c.dropna().astype(str).str.contains("\\.[05]$")).sum()))`, false},
		{"text_not_all_numbers", "{\"code\": \"01\"}\n{\"code\": \"abc\"}\n", Check{Kind: KindRegex, Column: "code", Pattern: `^(?:0|a)`}, `print(int((~c.dropna().astype(str).str.contains("^(?:0|a)")).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.writeRaw(t, "b1", "t/a.jsonl", c.text)
			rep, res, refused := auditLikePandas(t, src, "import sys, pandas as pd; c = pd.read_json(sys.argv[1], lines=True)[sys.argv[2]]; "+c.pandas,
				[]string{filepath.Join(src.root, "b1", "t", "a.jsonl"), c.check.Column}, FormatJSONL, c.check, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds rows failing: want it refused naming read_json", res.Status, res.Message)
			}
		})
	}
}

// TestJSONDateNamedColumnRangePandasComparesDatetimes (review 25):
// pandas.read_json (lines) reads a column named like a date whose numbers
// are all beyond a year in seconds as datetimes, and Great Expectations'
// pandas expect_column_values_to_be_between compares them with the
// check's numbers, which pandas (3.1.1, run here) refuses with TypeError
// (Invalid comparison between dtype=datetime64 and int): the check errs
// there, where DuckDB reads the numbers and the audit passed it. Now it is
// refused; a column of another name, or holding a number under a year in
// seconds (pandas leaves every one a number), passes.
func TestJSONDateNamedColumnRangePandasComparesDatetimes(t *testing.T) {
	cases := []struct {
		name, text, col string
		refused         bool
	}{
		{"epoch", "{\"id\": 1, \"updated_at\": 1704067200}\n{\"id\": 2, \"updated_at\": 1704153600}\n", "updated_at", true},
		{"epoch_doubles_null", "{\"id\": 1, \"event_time\": 1704067200.5}\n{\"id\": 2, \"event_time\": null}\n", "event_time", true},
		{"small_number_too", "{\"id\": 1, \"updated_at\": 1704067200}\n{\"id\": 2, \"updated_at\": 1000}\n", "updated_at", false},
		{"other_name", "{\"id\": 1, \"epoch\": 1704067200}\n", "epoch", false},
	}
	python, perr := testPython()
	lo, hi := 0.0, 2e9
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.writeRaw(t, "b1", "t/a.jsonl", c.text)
			if perr == nil && !testing.Short() {
				script := "import sys, pandas as pd\ns = pd.read_json(sys.argv[1], lines=True)[sys.argv[2]].dropna()\ntry:\n    print(int((~((s >= 0) & (s <= 2e9))).sum()) + int(not 0 <= s.max() <= 2e9))\nexcept TypeError as e:\n    print('TypeError', e)"
				out, err := exec.Command(python, "-c", script, filepath.Join(src.root, "b1", "t", "a.jsonl"), c.col).CombinedOutput()
				if err != nil {
					t.Fatalf("pandas: %v: %s", err, out)
				}
				if got := strings.TrimSpace(string(out)) != "0"; got != c.refused {
					t.Fatalf("pandas: %s: the case shows nothing", out)
				}
			}
			// range, and stat's max (GE's expect_column_max_to_be_between,
			// whose pandas max is a Timestamp: 0 <= max raises TypeError too).
			for _, check := range []Check{
				{Name: "c", Kind: KindRange, Table: "t", Column: c.col, Min: &lo, Max: &hi},
				{Name: "c", Kind: KindStat, Stat: StatMax, Table: "t", Column: c.col, Min: &lo, Max: &hi},
			} {
				rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatJSONL}}, Checks: []Check{check}}})
				if err != nil {
					t.Fatal(err)
				}
				res := rep.Checks[0]
				if !c.refused {
					if !rep.Passed {
						t.Fatalf("%s refused, though pandas reads it as DuckDB does: %s %q", check.Kind, res.Status, res.Message)
					}
					continue
				}
				if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
					t.Fatalf("%s %s %q; pandas errs comparing datetimes with numbers: want it refused naming read_json", check.Kind, res.Status, res.Message)
				}
			}
		})
	}
}

// TestJSONDateNamedTextNaTPandasReadsAsMissing (review 25):
// pandas.read_json (lines) parses the text of a column named like a date
// with to_datetime, which reads "" and NaT's and NaN's spellings (NaT, nat,
// NAT, nan, NaN, NAN) as NaT, a missing value. DuckDB reads the text, so
// a not_null passed where pandas (3.1.1, run here) finds a NULL. Now it is
// refused; "None" (pandas then keeps the text) and a column of another
// name pass.
func TestJSONDateNamedTextNaTPandasReadsAsMissing(t *testing.T) {
	cases := []struct {
		name, text, col string
		refused         bool
	}{
		{"empty", "{\"id\": 1, \"created_at\": \"2024-01-02\"}\n{\"id\": 2, \"created_at\": \"\"}\n", "created_at", true},
		{"nat", "{\"id\": 1, \"date\": \"2024-01-02\"}\n{\"id\": 2, \"date\": \"NaT\"}\n", "date", true},
		{"nan", "{\"id\": 1, \"event_time\": \"2024-01-02 10:00:00\"}\n{\"id\": 2, \"event_time\": \"NAN\"}\n", "event_time", true},
		{"none_kept", "{\"id\": 1, \"created_at\": \"2024-01-02\"}\n{\"id\": 2, \"created_at\": \"None\"}\n", "created_at", false},
		{"other_name", "{\"id\": 1, \"created\": \"2024-01-02\"}\n{\"id\": 2, \"created\": \"\"}\n", "created", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.writeRaw(t, "b1", "t/a.jsonl", c.text)
			rep, res, refused := auditLikePandas(t, src, "import sys, pandas as pd; print(int(pd.read_json(sys.argv[1], lines=True)[sys.argv[2]].isna().sum()))",
				[]string{filepath.Join(src.root, "b1", "t", "a.jsonl"), c.col}, FormatJSONL, Check{Kind: KindNotNull, Column: c.col}, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds a missing value: want it refused naming read_json", res.Status, res.Message)
			}
		})
	}
}

// TestJSONDateNamedTextUniquePandasReadsAsOneTime (review 25):
// pandas.read_json (lines) parses the text of a column named like a date
// with to_datetime, so two texts of one time ("2024-01-02" and
// "2024-01-02 00:00:00", "2024-01-02T10:00:00" and "...10:00:00.000")
// read as one value, a
// duplicate pandas (3.1.1, run here) finds where DuckDB compares the
// text and the audit passed. Now it is refused; texts of distinct times,
// and a column of another name, pass.
func TestJSONDateNamedTextUniquePandasReadsAsOneTime(t *testing.T) {
	cases := []struct {
		name, text, col string
		refused         bool
	}{
		{"date_and_midnight", "{\"id\": 1, \"created_at\": \"2024-01-02\"}\n{\"id\": 2, \"created_at\": \"2024-01-02 00:00:00\"}\n", "created_at", true},
		{"iso_t", "{\"id\": 1, \"event_time\": \"2024-01-02T10:00:00\"}\n{\"id\": 2, \"event_time\": \"2024-01-02 10:00:00.000\"}\n", "event_time", true},
		{"distinct_times", "{\"id\": 1, \"created_at\": \"2024-01-02\"}\n{\"id\": 2, \"created_at\": \"2024-01-03 00:00:00\"}\n", "created_at", false},
		{"other_name", "{\"id\": 1, \"created\": \"2024-01-02\"}\n{\"id\": 2, \"created\": \"2024-01-02 00:00:00\"}\n", "created", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.writeRaw(t, "b1", "t/a.jsonl", c.text)
			rep, res, refused := auditLikePandas(t, src, "import sys, pandas as pd; s = pd.read_json(sys.argv[1], lines=True)[sys.argv[2]].dropna(); print(int(s.duplicated().sum()))",
				[]string{filepath.Join(src.root, "b1", "t", "a.jsonl"), c.col}, FormatJSONL, Check{Kind: KindUnique, Column: c.col}, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas finds a duplicate: want it refused naming read_json", res.Status, res.Message)
			}
		})
	}
}

// auditLikePandas runs the pandas script (python -c script, then args),
// whose output is how many rows pandas finds failing, when the interop
// Python is there, and fails the test when that does not agree with
// refused (the case would show nothing); then it audits table t of format
// under the one check and, for a case pandas reads as DuckDB does, fails
// the test when it is refused. It returns the report, the check's result
// and refused, for the caller to judge a refusal.
func auditLikePandas(t *testing.T, src *dirSource, script string, args []string, format string, check Check, refused bool) (schemas.AuditReport, schemas.CheckResult, bool) {
	t.Helper()
	if python, err := testPython(); err == nil && !testing.Short() {
		out, err := exec.Command(python, append([]string{"-c", script}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pandas: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)) != "0"; got != refused {
			t.Fatalf("pandas finds %s rows failing: the case shows nothing", out)
		}
	}
	check.Name, check.Table = "c", "t"
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: format}}, Checks: []Check{check}}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Checks[0]
	if !refused && !rep.Passed {
		t.Fatalf("refused, though pandas reads it as DuckDB does: %s %q", res.Status, res.Message)
	}
	return rep, res, refused
}
