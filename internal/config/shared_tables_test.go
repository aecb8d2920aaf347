package config

import (
	"strings"
	"testing"
)

// Two datasets of one repository and target that declare the same table
// path are each other's neighbors: a batch of one is judged by the other's
// checks. Declared with other markers, an object one lists as a marker (not
// read) the other takes for data; declared in another format, the other's
// checks read the batch's files as what they are not, err at the batch and
// at the target alike, and were excused as failing there already. Start-up
// refuses both, naming the field; the same markers spelled in another order
// or another target's table are fine.
func TestSharedTableMustBeDeclaredAlike(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	for _, tc := range []struct {
		name, table, target, want string
	}{
		{"other markers", "markers: [_SUCCESS, _extra*]", "main",
			"datasets.customers.tables[0].markers: [_SUCCESS _extra*] differ from datasets.billing.tables[0].markers [_SUCCESS _committed_* _started_*] (the default)"},
		{"another format", "format: csv", "main", `datasets.customers.tables[0].format: "csv" differs from datasets.billing.tables[0].format "parquet"`},
		{"the same markers", "markers: [_started_*, _SUCCESS, _committed_*]", "main", ""},
		{"another target", "markers: [_extra*]", "staging", ""},
		// A pattern listed twice is one pattern: the audit skips the same objects.
		{"the same markers, one listed twice", "markers: [_started_*, _SUCCESS, _committed_*, _SUCCESS]", "main", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := good + `
  customers:
    repository: lake
    target: ` + tc.target + `
    tables:
      - {name: clients, path: gold/billing_fact/, ` + tc.table + `}
    checks:
      - {kind: not_null, table: clients, columns: [billing_id]}
`
			_, err := ParseIn([]byte(src), vars, "")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v\n%s", err, src)
			case tc.want != "" && err == nil:
				t.Fatalf("loaded:\n%s", src)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
