package audit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Every kind is one registry entry from a file of its own, and evaluates
// one way: in its table's aggregate scan (with a judge) or alone.
func TestKindRegistry(t *testing.T) {
	if len(checkKinds) != 14 {
		t.Errorf("%d kinds registered: %v", len(checkKinds), Kinds())
	}
	for name, k := range checkKinds {
		if _, err := os.Stat("kind_" + name + ".go"); err != nil {
			t.Errorf("kind %s: %v (each kind lives in kind_<name>.go)", name, err)
		}
		if k.aggregated() == (k.run != nil) || (k.aggregated() && k.judge == nil) {
			t.Errorf("kind %s: aggregated %v, run %v, judge %v", name, k.aggregated(), k.run != nil, k.judge != nil)
		}
		if !k.aggregated() && (k.failing != nil || k.countOnly || k.plan != nil || k.resample != nil) {
			t.Errorf("kind %s runs alone but has aggregate-scan hooks", name)
		}
		if (k.failing != nil || k.resample != nil) != k.reads("mostly") {
			t.Errorf("kind %s: row-level (failing rows) %v but reads mostly %v", name, k.failing != nil || k.resample != nil, k.reads("mostly"))
		}
	}
	seen := map[string]bool{}
	for _, f := range checkFields {
		if seen[f.name] || f.set == nil {
			t.Errorf("field %s is listed twice or has no test of being set", f.name)
		}
		seen[f.name] = true
	}
}

// Adding a kind is one registry entry (here from this test file): the
// validator, the SQL and the evaluation all come from it.
func TestAddedKindRunsFromItsEntry(t *testing.T) {
	const kindEven = "even"
	registerKind(&checkKind{
		name:   kindEven,
		fields: []string{"column", "where", "mostly"},
		validate: func(c Check, add addFunc) {
			needColumns(c, add, true)
		},
		agg:     countFailing,
		failing: func(c Check) string { return quoteIdent(c.Column) + " % 2 <> 0" },
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			bad := asInt(v[0])
			return r.judged(c, bad > 0, fmt.Sprintf("%d odd rows of %d", bad, total), "even")
		},
	})
	t.Cleanup(func() { delete(checkKinds, kindEven) })

	s := Suite{Tables: tables, Checks: []Check{{Kind: kindEven, Table: "billing", Column: "id", Min: f64(1)}, {Kind: kindEven, Table: "billing"}}}
	var got []string
	for _, err := range s.Validate("x") {
		got = append(got, err.Error())
	}
	want := "x.checks[0].min: not used by even checks\nx.checks[1].column: missing"
	if strings.Join(got, "\n") != want {
		t.Errorf("validation:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}

	e := newEngine(t, fixture(t), "")
	r := only(t, audit(t, e, "b1", Check{Kind: kindEven, Table: "billing", Column: "id", Where: "id <= 10"}))
	if r.Status != schemas.StatusFail || r.Observed != "5 odd rows of 10" || len(r.SampleRows) != 3 ||
		!strings.Contains(r.SampleRows[0], `"id":`) {
		t.Errorf("even(id) over ids 1..10: %s %q samples %v, want fail, 5 odd rows and 3 samples", r.Status, r.Observed, r.SampleRows)
	}
	r = only(t, audit(t, e, "b1", Check{Kind: kindEven, Table: "billing", Column: "id", Mostly: f64(0.4), Where: "id <= 10"}))
	if r.Status != schemas.StatusPass {
		t.Errorf("even(id) mostly 0.4: %s %q", r.Status, r.Observed)
	}
}

// A failed unique check over an integer key counted with a bitmap takes its
// sample from the lowest key ranges (buckets of 65,536 keys) that hold
// duplicates, grouping only their rows: the keys 5 (3 copies), 70,000 and
// 250,000 (2 each), not 299,999 (4 copies) of the last bucket.
func TestUniqueSampleFromDuplicateBuckets(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "t/a.parquet", `SELECT i::BIGINT AS id FROM range(300000) r(i)
		UNION ALL SELECT * FROM (VALUES (5), (5), (70000), (250000), (299999), (299999), (299999)) v(id)`)
	e := newEngine(t, src, "") // SampleRows: 3
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Kind: KindUnique, Table: "t", Column: "id"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := only(t, rep)
	want := []string{`{"id":5,"duplicate_count":3}`, `{"id":70000,"duplicate_count":2}`, `{"id":250000,"duplicate_count":2}`}
	if r.Status != schemas.StatusFail || r.Observed != "7 duplicate rows of 300007" || fmt.Sprint(r.SampleRows) != fmt.Sprint(want) {
		t.Errorf("%s %q samples %v, want fail, 7 duplicate rows of 300007, %v", r.Status, r.Observed, r.SampleRows, want)
	}
	if w := sampleBucket(0, 299999); w != 65536 {
		t.Errorf("buckets of a 300,000-key range: %d keys, want 65536", w)
	}
	if w := sampleBucket(-1e9, 1e9); w != 2e9/256+1 {
		t.Errorf("buckets of a 2e9-key range: %d keys, want 256 buckets", w)
	}
}

// Failed row-level checks of one scan share a sample query; a check whose
// failing rows that query did not reach (they come after the other's)
// still gets its own, and every sample row fails its check. A sample row
// is the whole row even when a column is named s (the alias the sample
// queries once gave the row, so that to_json(s) was that column).
func TestRowSamplesOfOneScan(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "t/a.parquet", `SELECT i AS id, CASE WHEN i <= 50 THEN NULL ELSE i END AS x,
		CASE WHEN i = 1000 THEN -1 WHEN i % 100 = 7 THEN 500 ELSE 1 END AS y, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'zz' END AS s
		FROM range(1, 1001) r(i)`)
	e := newEngine(t, src, "") // SampleRows: 3
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
			{Name: "x", Kind: KindNotNull, Table: "t", Column: "x"},
			{Name: "y_min", Kind: KindRange, Table: "t", Column: "y", Min: f64(0)},
			{Name: "y_max", Kind: KindRange, Table: "t", Column: "y", Max: f64(100)},
			{Name: "s", Kind: KindAcceptedValues, Table: "t", Column: "s", Values: []string{"a"}},
			{Name: "sql", Kind: KindSQL, Table: "t", SQL: "SELECT s FROM t WHERE s = 'zz'"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		n    int
		fail string
	}{"x": {3, `"x":null`}, "y_min": {1, `"y":-1`}, "y_max": {3, `"y":500`}, "s": {3, `"s":"zz"`}, "sql": {3, `{"s":"zz"}`}}
	for _, c := range rep.Checks {
		w := want[c.Name]
		if c.Status != schemas.StatusFail || len(c.SampleRows) != w.n {
			t.Errorf("%s: %s, %d samples %v, want fail and %d", c.Name, c.Status, len(c.SampleRows), c.SampleRows, w.n)
		}
		for _, s := range c.SampleRows {
			if !strings.Contains(s, w.fail) {
				t.Errorf("%s: sample %s does not fail it", c.Name, s)
			}
		}
	}
}
