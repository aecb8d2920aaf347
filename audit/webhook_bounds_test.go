package audit

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPreMergeEventFieldsAreBounded: the hook's caller has the token every
// action file carries, so what it sends is an outside input. Each field of
// the event is bounded: a repository, branch or ref of 600 KiB (within the
// 1 MiB body) used to be logged whole and sent back in the answer. It is
// refused (400) naming the field, before lakeFS is asked, and neither the
// answer nor the log carries it.
func TestPreMergeEventFieldsAreBounded(t *testing.T) {
	var log bytes.Buffer
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{}, Runner: &countingRunner{},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 600<<10)
	for _, field := range []string{"repository_id", "branch_id", "source_ref", "committer", "merge_source", "commit_id", "event_time"} {
		t.Run(field, func(t *testing.T) {
			log.Reset()
			ev := map[string]string{"event_type": "pre-merge", "event_time": "2026-12-05T10:00:00Z", "repository_id": "repo",
				"branch_id": "dev", "source_ref": "b1", "committer": "writer", "merge_source": "b1"}
			ev[field] = huge
			body, _ := json.Marshal(ev)
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/webhooks/lakefs/pre-merge", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var answer bytes.Buffer
			if _, err := answer.ReadFrom(resp.Body); err != nil {
				t.Fatal(err)
			}
			var ans PreMergeAnswer
			if err := json.Unmarshal(answer.Bytes(), &ans); err != nil {
				t.Fatalf("answer is not JSON: %v", err)
			}
			if resp.StatusCode != http.StatusBadRequest || ans.Allowed || !strings.Contains(ans.Error, field) {
				t.Errorf("status %d, error %.200q; want 400 naming %s", resp.StatusCode, ans.Error, field)
			}
			if answer.Len() > 4<<10 || log.Len() > 4<<10 {
				t.Errorf("answer of %d bytes, log of %d bytes: the field of %d bytes was echoed", answer.Len(), log.Len(), len(huge))
			}
		})
	}
}
