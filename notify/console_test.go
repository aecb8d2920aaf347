package notify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConsoleShowsWhatSlackWould(t *testing.T) {
	var out strings.Builder
	c, err := NewConsole(&out, testUI)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "console", Mention: oncall}}, []Sink{c}, Options{})
	if _, err := d.Notify(context.Background(), note(abortedAuditEvent(), StateAborted)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	wantContains(t, "console", got,
		":no_entry: orders aborted: audit failed · batch b-42\n",
		"\n  Branch: wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42)\n",
		"\n  Checks: 1 passed · 2 failed · 1 warned\n",
		"\n  ↳ thread:\n    *Failing checks* (2 of 4)\n",
		`    {"id":7,"email":null,"note":"<script>"}`,
	)
	// The same text Slack gets: render the Slack blocks and compare.
	r := runOf(Notification{Event: abortedAuditEvent(), State: StateAborted, Mention: oncall, LandedAt: landedAt})
	if main := renderText(mainMessage(r, links{base: testUI}).Blocks, ""); !strings.HasPrefix(got, main) {
		t.Errorf("console output does not start with the Slack message's text:\n%s\nwant prefix\n%s", got, main)
	}
}

func TestNewConsoleRejectsBadUIURL(t *testing.T) {
	if _, err := NewConsole(&strings.Builder{}, "lakefs.test"); err == nil ||
		err.Error() != `console: lakeFS UI URL "lakefs.test" is not an http(s) URL` {
		t.Errorf("error %v", err)
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  xoxb-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n\t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LAKEWAP_TEST_TOKEN", " xoxb-from-env \n")
	t.Setenv("LAKEWAP_TEST_EMPTY", "")

	cases := []struct {
		env, file, want, wantErr string
	}{
		{"LAKEWAP_TEST_TOKEN", file, "xoxb-from-env", ""}, // the environment wins
		{"LAKEWAP_TEST_EMPTY", file, "xoxb-from-file", ""},
		{"", file, "xoxb-from-file", ""},
		{"LAKEWAP_TEST_EMPTY", "", "", "secret: environment variable LAKEWAP_TEST_EMPTY is unset or empty"},
		{"", empty, "", "secret: file " + empty + " is empty"},
		{"", filepath.Join(dir, "missing"), "", "secret: read file " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"", "", "", "secret: neither an environment variable nor a file is configured"},
	}
	for _, tc := range cases {
		got, err := ReadSecret(tc.env, tc.file)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("ReadSecret(%q, %q) = %q, %v; want %q, %q", tc.env, tc.file, got, err, tc.want, tc.wantErr)
		}
	}
	_, err := ReadSecret("", filepath.Join(dir, "missing"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file error %v does not wrap os.ErrNotExist", err)
	}
}
