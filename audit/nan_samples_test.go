package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A failing check's sample rows holding NaN or an infinity (DuckDB's
// to_json writes them bare, which is not JSON) are given, each such value
// as a JSON string, instead of "sample rows unavailable".
func TestSampleRowsWithNaNAreGiven(t *testing.T) {
	src := newBatchSource(t)
	src.write(t, "b1", "t/a.parquet", `SELECT * FROM (VALUES ('nan'::DOUBLE, 'NaN text'), ('nan'::DOUBLE, 'b'), ('inf'::DOUBLE, 'c'), ('inf'::DOUBLE, 'd'), ('-inf'::DOUBLE, NULL), ('-inf'::DOUBLE, 'e')) v(x, y)`)
	e := newEngine(t, src, "")
	for _, c := range []Check{
		{Name: "c", Table: "t", Kind: KindUnique, Columns: []string{"x"}},
		{Name: "c", Table: "t", Kind: KindNotNull, Columns: []string{"y"}},
	} {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{c}}})
		if err != nil {
			t.Fatal(err)
		}
		got := rep.Checks[0]
		if rep.Passed || len(got.SampleRows) == 0 || strings.Contains(got.Message, "unavailable") {
			t.Fatalf("%s: passed %v, samples %q, message %q; want it failing with its samples", c.Kind, rep.Passed, got.SampleRows, got.Message)
		}
		text := strings.Join(got.SampleRows, " ")
		for _, row := range got.SampleRows {
			if !json.Valid([]byte(row)) {
				t.Errorf("%s: sample row %s is not JSON", c.Kind, row)
			}
		}
		if !strings.Contains(text, `"NaN"`) && !strings.Contains(text, `"Infinity"`) && !strings.Contains(text, `"-Infinity"`) {
			t.Errorf("%s: samples %s name no NaN or infinity", c.Kind, text)
		}
	}
	rows, err := jsonRows(`[{"a":NaN,"b":Infinity,"c":-Infinity,"d":"x NaN \"Infinity\"","e":[NaN,1e5,-2]},{"f":-Infinity}]`)
	want := []string{`{"a":"NaN","b":"Infinity","c":"-Infinity","d":"x NaN \"Infinity\"","e":["NaN",1e5,-2]}`, `{"f":"-Infinity"}`}
	if err != nil || strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("jsonRows: %q, %v; want %q", rows, err, want)
	}
}
