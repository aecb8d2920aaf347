package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReader63AcceptedValuesOverTypesPandasRendersOtherwise: pandas 3.1.1
// renders a FLOAT 0.0001 as 1e-04, a BLOB as its characters (\x00a where
// DuckDB's text is \x00a escaped), an INTERVAL as its 12 bytes (DuckDB: 1
// month) and a DECIMAL(10,7) 0.0000001 as 1E-7 (astype(str)); a regex over
// such a column was refused (pandasOtherText), an accepted_values of
// DuckDB's text passed where pandas' astype(str).isin found every row
// failing. Refused now, naming the column and its type; a DOUBLE, a
// DECIMAL of scale 2 and a UUID, rendered alike, pass.
func TestReader63AcceptedValuesOverTypesPandasRendersOtherwise(t *testing.T) {
	for _, c := range []struct {
		name, value, text string
		refused           bool
	}{
		{"float", "0.0001::FLOAT", "0.0001", true},
		{"blob", `'\x00a'::BLOB`, `\x00a`, true},
		{"interval", "INTERVAL 1 MONTH", "1 month", true},
		{"decimal_scale_7", "0.0000001::DECIMAL(10,7)", "0.0000001", true},
		{"double", "0.5::DOUBLE", "0.5", false},
		{"decimal_scale_2", "1.50::DECIMAL(10,2)", "1.50", false},
		{"uuid", "'550e8400-e29b-41d4-a716-446655440000'::UUID", "550e8400-e29b-41d4-a716-446655440000", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT "+c.value+" AS x")
			dir := filepath.Join(src.root, "b1", "t")
			check := Check{Kind: KindAcceptedValues, Column: "x", Values: []string{c.text}}
			rep, res, _ := auditLikePandas(t, src, renderedScript, []string{dir, "x", "in", c.text}, FormatParquet, check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, `column "x"`) {
				t.Fatalf("passed=%v %s %q (%s); pandas renders the values otherwise: want it refused naming the column", rep.Passed, res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
