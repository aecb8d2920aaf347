package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// Every command, and every event of emit, prints its usage to stdout and
// exits 0 on -h and --help; a bad flag still exits 2. The commands are
// those the main usage lists, so a new one is covered by being documented.
func TestHelpExitsZero(t *testing.T) {
	var cmds []string
	for _, m := range regexp.MustCompile(`(?m)^  lakewap (\w+)`).FindAllStringSubmatch(usage(), -1) {
		cmds = append(cmds, m[1])
	}
	if len(cmds) < 13 {
		t.Fatalf("found only %d commands in the usage: %v", len(cmds), cmds)
	}
	cmds = append(cmds, "emit landed", "emit write", "emit cancel")
	for _, cmd := range cmds {
		for _, h := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			args := append(strings.Fields(cmd), h)
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Errorf("lakewap %s %s: exit %d (stderr %q), want 0", cmd, h, code, stderr.String())
			}
			name := strings.Fields(cmd)[0]
			if !strings.Contains(stdout.String(), "lakewap "+name) || stderr.Len() > 0 {
				t.Errorf("lakewap %s %s: stdout %q, stderr %q; want the usage on stdout", cmd, h, stdout.String(), stderr.String())
			}
		}
		var stdout, stderr bytes.Buffer
		if code := run(append(strings.Fields(cmd), "--no-such-flag"), &stdout, &stderr); code != 2 ||
			!strings.Contains(stderr.String(), "flag provided but not defined: -no-such-flag") {
			t.Errorf("lakewap %s --no-such-flag: exit %d, stderr %q; want 2 naming the flag", cmd, code, stderr.String())
		}
	}
}
