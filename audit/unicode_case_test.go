package audit

import (
	"context"
	"strings"
	"testing"
)

// TestColumnsSparkFoldsAsOneAreRefused: Spark 4.3.0 (caseSensitive false,
// its default) matches column names by Java's String.toLowerCase, whose
// Greek capital sigma at the end of a word is the final sigma: ΑΣ and ας
// are one column to it, and it read a.parquet's ας ("bad") and b.parquet's
// ΑΣ ("x") as one column ΑΣ, where DuckDB reads two and the
// accepted_values check over ΑΣ judged "x" alone (checked by hand with
// PySpark 4.3.0: select ΑΣ gave bad, x). Go's strings.ToLower folds ΑΣ to
// ασ, so the collision went unseen. One file holding both fails in Spark
// (COLUMN_ALREADY_EXISTS) and is refused as names differing in case are.
func TestColumnsSparkFoldsAsOneAreRefused(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		refused bool
	}{
		{"final_sigma_across_files", map[string]string{
			"a.parquet": `SELECT 1::BIGINT AS id, 'bad' AS "ας"`,
			"b.parquet": `SELECT 2::BIGINT AS id, 'x' AS "ΑΣ"`}, true},
		{"final_sigma_in_one_file", map[string]string{
			"a.parquet": `SELECT 1::BIGINT AS id, 'bad' AS "ας", 'x' AS "ΑΣ"`}, true},
		{"kelvin_sign_across_files", map[string]string{ // K (U+212A) lowers to k in Java and Go alike: refused before too
			"a.parquet": "SELECT 1::BIGINT AS id, 'bad' AS \"\u212AΣ\"",
			"b.parquet": "SELECT 2::BIGINT AS id, 'x' AS \"kΣ\""}, true},
		{"one_spelling", map[string]string{
			"a.parquet": `SELECT 1::BIGINT AS id, 'x' AS "ΑΣ"`,
			"b.parquet": `SELECT 2::BIGINT AS id, 'x' AS "ΑΣ"`}, false},
	}
	src := newBatchSource(t)
	for _, c := range cases {
		for p, q := range c.files {
			src.write(t, "b1", c.name+"/"+p, q)
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		check := Check{Kind: KindAcceptedValues, Table: "t", Column: "ΑΣ", Values: []string{"x"}}
		if strings.HasPrefix(c.name, "kelvin") {
			check.Column = "kΣ"
		}
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		switch {
		case !c.refused && !rep.Passed:
			t.Errorf("%s: refused, though every reader reads one column: %s %s", c.name, res.Status, res.Message)
		case c.refused && rep.Passed:
			t.Errorf("%s: lakewap passes %s (%s) while Spark reads the other file's \"bad\" as column %s", c.name, check.Kind, res.Observed, check.Column)
		case c.refused && !strings.Contains(res.Message, "readers disagree"):
			t.Errorf("%s: refused, but not saying readers disagree: %s %s", c.name, res.Status, res.Message)
		case c.refused:
			t.Logf("%s: refused: %s", c.name, res.Message)
		}
	}
}
