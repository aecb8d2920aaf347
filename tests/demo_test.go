package tests

import (
	"strings"
	"testing"
)

// The README's demo command must keep working: it runs the whole story on
// the embedded stack and exits 0.
func TestDemo(t *testing.T) {
	code, out, errOut := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"publishing      → published",
		"auditing        → aborted         audit_failed: 1 check(s) failed: billing_id_not_null",
		"1000 billing_fact rows, 0 with NULL billing_id",
		"40 rows with NULL billing_id never reached main",
		"slack │",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
