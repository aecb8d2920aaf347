package auditsource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

type noGuards struct{}

func (noGuards) Guarding(string, string) []audit.Guard { return nil }

type noRunner struct{}

func (noRunner) Run(context.Context, audit.Request) (schemas.AuditReport, error) {
	return schemas.AuditReport{}, fmt.Errorf("no audit expected")
}

// TestHookCallNamingAFatCommitReadsABoundedAnswer: the pre-merge hook asks
// lakeFS for the commit every call names, before anything else, for any
// caller holding the token every action file has. A writer who may create
// commit records (the simplified ACL's Writers: createCommitRecord writes
// any metadata, message and parents) makes commits of tens of MiB and names
// them in hook calls, up to the server's 512 connections at once: each call
// made lakewap read and decode the whole commit (up to the 64 MiB any answer
// may take), so a few dozen such calls at once held gigabytes. A commit
// lakeFS or lakewap writes is a few KiB; one over lakefs.MaxCommitAnswer is
// not read further, and the call is not decided.
func TestHookCallNamingAFatCommitReadsABoundedAnswer(t *testing.T) {
	head, source, fat := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	const metaBytes = 48 << 20
	var written atomic.Int64
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/commits/"+fat):
			wg.Add(1)
			defer wg.Done()
			// {"id":..., "parents":[head, source], ..., "metadata":{"k":"xxxx..."}}
			start := fmt.Sprintf(`{"id":%q,"parents":[%q,%q],"committer":"writer","message":"m","creation_date":1,"meta_range_id":"","metadata":{"k":"`, fat, head, source)
			if _, err := w.Write([]byte(start)); err != nil {
				return
			}
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range metaBytes / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				written.Add(int64(len(chunk)))
			}
			_, _ = w.Write([]byte(`"}}`))
		case strings.HasSuffix(r.URL.Path, "/branches"):
			_ = json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{{"id": "main", "commit_id": head}},
				"pagination": map[string]any{"has_more": false, "next_offset": "", "results": 1, "max_per_page": 1000}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lake, err := lakefs.New(lakefs.Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := audit.NewPreMergeHandler(audit.PreMergeOptions{Guards: noGuards{}, Runner: noRunner{}, Merges: Merges{Lake: lake}})
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"event_type":"pre-merge","repository_id":"lake","branch_id":"main","source_ref":%q,"commit_id":%q}`, source, fat)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", strings.NewReader(body)))
	srv.CloseClientConnections()
	wg.Wait()
	if rec.Code == http.StatusOK {
		t.Errorf("the call naming a commit of %d MiB of metadata was decided (200): %s", metaBytes>>20, rec.Body)
	}
	// What the server got written before lakewap hung up: what lakewap
	// read, and what the kernel's buffers on both sides held.
	if n := written.Load(); n > 24<<20 {
		t.Errorf("lakeFS's answer was read for %d MiB of the commit's %d MiB of metadata; want the read stopped at lakefs.MaxCommitAnswer (%d KiB)",
			n>>20, metaBytes>>20, lakefs.MaxCommitAnswer>>10)
	}
}
