package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadyCommandFindsTheListenerInTheConfig(t *testing.T) {
	var out, errOut strings.Builder
	if rc := run([]string{"ready", "-config", "/nonexistent/lakewap.yaml"}, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "nonexistent") {
		t.Errorf("lakewap ready with a missing config: exit %d %q, want 2 naming it", rc, errOut.String())
	}
}

// A request the daemon would dead-letter is refused before it is sent.
func TestOperatorRequestValidatedBeforeSending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.yaml")
	must(t, os.WriteFile(path, []byte("kafka: {brokers: [\"127.0.0.1:1\"]}\n"), 0o600)) // never dialled
	code, _, errb := runCLI("revert", "-config", path, "-dataset", "billing", "-batch", "b 1", "-reason", strings.Repeat("r", 2000))
	if code != 2 || !strings.Contains(errb, "batch_id") || !strings.Contains(errb, "reason: has 2000 bytes") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}

func TestOperatorCommandsCheckFlagsAndConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"revert", "-config", "x.yaml", "-batch", "b"}, 2, "-batch and -reason are required"},
		{[]string{"revert", "-config", "x.yaml", "-reason", "r"}, 2, "-batch and -reason are required"},
		{[]string{"retry", "-config", "x.yaml"}, 2, "-batch is required"},
		{[]string{"cancel", "-config", "x.yaml", "-reason", "r"}, 2, "-batch is required"},
		{[]string{"revert", "-h"}, 0, "-timeout duration"},
		{[]string{"cancel", "-config", "/nonexistent/lakewap.yaml", "-batch", "b"}, 2, "no such file"},
		{[]string{"runs", "-config", "/nonexistent/lakewap.yaml"}, 2, "no such file"},
		{[]string{"janitor", "--config", "/nonexistent/lakewap.yaml", "--dry-run"}, 2, "no such file"},
		{[]string{"janitor", "-dryrun"}, 2, "flag provided but not defined"},
		{[]string{"runs", "-state", "Published"}, 2, "not a run state"},
	} {
		var stdout, stderr bytes.Buffer
		got := run(tc.args, &stdout, &stderr)
		said := stderr.String()
		if tc.want == 0 {
			said = stdout.String() // asked-for help goes to stdout
		}
		if got != tc.want || !strings.Contains(said, tc.msg) {
			t.Errorf("%v: exit %d, said %q; want %d and %q", tc.args, got, said, tc.want, tc.msg)
		}
	}
}

// runCLI runs lakewap in-process with args.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// validate takes its file as -config like every command, or as its argument.
func TestValidateTakesConfigFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	must(t, os.WriteFile(path, []byte("kafka: {brokers: []}\n"), 0o600))
	for _, args := range [][]string{{"validate", "-config", path}, {"validate", "--config=" + path, "-json"}, {"validate", path}} {
		code, out, errOut := runCLI(args...)
		if code != 1 || !strings.Contains(out+errOut, "kafka.brokers") {
			t.Errorf("%v: exit %d, %s%s; want 1 naming kafka.brokers", args, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("validate", "-config", path, path); code != 2 {
		t.Errorf("validate with -config and an argument: exit %d (%s), want 2", code, errOut)
	}
}
