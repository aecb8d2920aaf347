package main

import "testing"

// Run texts come from events and lakeFS: `lakewap runs` must not hand a
// terminal its escape sequences.
func TestPrintableEscapesControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain batch-1":            "plain batch-1",
		"\x1b[2J\x1b]0;owned\x07":  `\x1b[2J\x1b]0;owned\x07`,
		"csi \u009b31m":            `csi \x9b31m`,
		"tab\tnewline\n":           `tab\x09newline\x0a`,
		"bad \xff utf8":            `bad \xff utf8`,
		`back\slash`:               `back\\slash`,
		"ünïcode ok \u2028":        "ünïcode ok \u2028",
		"replacement \uFFFD stays": "replacement \uFFFD stays",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
