package schemas

import (
	"strings"
	"testing"
)

func TestParseTraceContext(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name, parent, state string
		want                TraceContext
	}{
		{"valid", valid, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", TraceContext{valid, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}},
		{"no state", valid, "", TraceContext{Parent: valid}},
		{"later version with more fields", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "", TraceContext{Parent: valid[:0] + "01" + valid[2:]}},
		{"upper case", strings.ToUpper(valid), "a=b", TraceContext{}},
		{"version ff", "ff" + valid[2:], "", TraceContext{}},
		{"00 with trailing data", valid + "-x", "", TraceContext{}},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", TraceContext{}},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", TraceContext{}},
		{"short", valid[:54], "", TraceContext{}},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", "", TraceContext{}},
		{"state over budget is dropped", valid, strings.Repeat("k=v,", 200), TraceContext{Parent: valid}},
		{"state with control bytes is dropped", valid, "a=b\n", TraceContext{Parent: valid, State: "a=b"}},
		{"state with a newline inside is dropped", valid, "a=b\nc=d", TraceContext{Parent: valid}},
		{"state without parent", "", "a=b", TraceContext{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseTraceContext(tc.parent, tc.state); got != tc.want {
				t.Errorf("ParseTraceContext(%q, %q) = %+v, want %+v", tc.parent, tc.state, got, tc.want)
			}
		})
	}
	if id := ParseTraceContext(valid, "").TraceID(); id != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID %q", id)
	}
}
