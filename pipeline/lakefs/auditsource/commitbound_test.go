package auditsource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/commits/"+fat):
			// {"id":..., "parents":[head, source], ..., "metadata":{"k":"xxxx..."}}
			start := fmt.Sprintf(`{"id":%q,"parents":[%q,%q],"committer":"writer","message":"m","creation_date":1,"meta_range_id":"","metadata":{"k":"`, fat, head, source)
			if _, err := w.Write([]byte(start)); err != nil {
				return
			}
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range metaBytes / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return // lakewap hung up
				}
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
	// What lakewap reads of lakeFS's answers, counted where its client
	// takes them from the connection.
	var read atomic.Int64
	lake, err := lakefs.New(lakefs.Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK",
		Wrap: func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, n: &read} }})
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
	if rec.Code == http.StatusOK {
		t.Errorf("the call naming a commit of %d MiB of metadata was decided (200): %s", metaBytes>>20, rec.Body)
	}
	if n := read.Load(); n > 2*lakefs.MaxCommitAnswer {
		t.Errorf("lakewap read %d MiB of lakeFS's answers for a call naming a commit of %d MiB of metadata; want the read stopped at lakefs.MaxCommitAnswer (%d KiB)",
			n>>20, metaBytes>>20, lakefs.MaxCommitAnswer>>10)
	}
}

// countingTransport counts the bytes read of each answer's body into n.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = countingBody{ReadCloser: resp.Body, n: c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}
