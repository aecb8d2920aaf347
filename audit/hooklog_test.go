package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHookCallLogsAreBounded (review 60): every writer has the hook's
// token, and each call it sends was logged: the decision line of every
// call that reached lakewap's checks (a refused one too), and a refusal's
// own line, each of up to 2 KiB of fields the caller chose. A
// caller sending calls as fast as the server answers them (a refusal of a
// commit_id that is no commit id asks lakeFS nothing) wrote the log, and
// the disk under it, without bound. At most maxHookLogs lines of each kind
// are logged a minute, the next one saying how many were not; the metrics
// count every call.
func TestHookCallLogsAreBounded(t *testing.T) {
	var logs bytes.Buffer
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, src := hex("1"), hex("2")
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: passFunc(func() {}),
		Token: "tok", Merges: mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{}},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	const calls = 500
	committer := strings.Repeat("m", maxHookCommitter)
	send := func(body string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", strings.NewReader(body))
		req.Header.Set(TokenHeader, "tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	event := func(commit string) string {
		b, _ := json.Marshal(map[string]string{"event_type": "pre-merge", "repository_id": "repo", "branch_id": "main",
			"source_ref": src, "commit_id": commit, "committer": committer})
		return string(b)
	}
	for i := range calls {
		// No commit id: refused before lakeFS is asked; then a commit
		// lakeFS does not have.
		for _, body := range []string{event("x"), event(fmt.Sprintf("%064x", i+1))} {
			if code := send(body); code != http.StatusForbidden {
				t.Fatalf("call %d answered %d, want 403", i, code)
			}
		}
	}
	lines := func() []map[string]any {
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("log line %q: %v", sc.Text(), err)
			}
			out = append(out, l)
		}
		return out
	}
	// Two kinds of line: the decision of an unverified call, and the
	// refusal of a commit lakeFS does not have.
	if n, max := len(lines()), 2*maxHookLogs; n > max {
		t.Fatalf("%d calls logged %d lines (%d bytes) within a minute; want at most %d", 2*calls, n, logs.Len(), max)
	}
	// A minute later a line is logged again, saying how many were not.
	now = now.Add(time.Minute)
	logs.Reset()
	if code := send(event("x")); code != http.StatusForbidden {
		t.Fatalf("late call answered %d", code)
	}
	got := lines()
	if len(got) != 1 || fmt.Sprint(got[0]["not_logged"]) != fmt.Sprint(2*calls-maxHookLogs) {
		t.Errorf("the late call logged %v; want one line saying %d lines of its kind were not logged", got, 2*calls-maxHookLogs)
	}
}
