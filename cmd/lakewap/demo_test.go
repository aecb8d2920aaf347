package main

import (
	"bytes"
	"strings"
	"testing"
)

// The README's demo command must keep working: it runs the whole story on
// the embedded stack and exits 0.
func TestDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"demo"}, &out, &errOut); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{
		"publishing      → published",
		"auditing        → aborted         audit_failed: 1 check(s) failed: billing_id_not_null",
		"1000 billing_fact rows, 0 with NULL billing_id",
		"40 rows with NULL billing_id never reached main",
		"slack │",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
