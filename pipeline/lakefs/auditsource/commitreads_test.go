package auditsource

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestConcurrentHookCallsNamingLargeCommitsHoldBoundedAnswers: after
// lakefs.MaxCommitAnswer, a caller with the token every action file has
// still named, on each of the server's 512 connections at once, another
// commit just under 1 MiB (a writer who may create commit records makes
// them): lakewap held every answer whole at once, 512 MiB and their
// decoding. Only the first lakefs.FreeCommitAnswer bytes of an answer are
// read by any number of calls at once (lakeFS's and lakewap's commits are a
// few KiB); the rest of at most lakefs.MaxCommitReads answers at a time.
//
// lakeFS here holds the last bytes of each answer until every call reads
// no further: all of its answer but those bytes, or its first
// FreeCommitAnswer+1 bytes (waiting for room). The peak of what open
// answers had read is then exact, whatever the scheduling.
func TestConcurrentHookCallsNamingLargeCommitsHoldBoundedAnswers(t *testing.T) {
	const (
		calls     = 48
		metaBytes = 900 << 10
	)
	head, source := strings.Repeat("a", 64), strings.Repeat("b", 64)
	ids := make([]string, calls)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i+1)
	}
	// Every answer is start + metadata + tail; held until release.
	mainLen := len(answerStart(ids[0], head, source)) + metaBytes
	held := &heldAnswers{calls: calls, mainLen: mainLen, gateLen: lakefs.FreeCommitAnswer + 1, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		i := strings.LastIndex(r.URL.Path, "/commits/")
		if i < 0 {
			if strings.HasSuffix(r.URL.Path, "/branches") {
				_ = json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{{"id": "main", "commit_id": head}},
					"pagination": map[string]any{"has_more": false, "next_offset": "", "results": 1, "max_per_page": 1000}})
				return
			}
			http.NotFound(w, r)
			return
		}
		id := r.URL.Path[i+len("/commits/"):]
		if _, err := io.WriteString(w, answerStart(id, head, source)+strings.Repeat("x", metaBytes)); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-held.release:
			_, _ = io.WriteString(w, `"}}`)
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	lake, err := lakefs.New(lakefs.Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK",
		Wrap: func(rt http.RoundTripper) http.RoundTripper { return heldTransport{rt: rt, h: held} }})
	if err != nil {
		t.Fatal(err)
	}
	h, err := audit.NewPreMergeHandler(audit.PreMergeOptions{Guards: noGuards{}, Runner: noRunner{}, Merges: Merges{Lake: lake}})
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]int, calls)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			body := fmt.Sprintf(`{"event_type":"pre-merge","repository_id":"lake","branch_id":"main","source_ref":%q,"commit_id":%q}`, source, id)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", strings.NewReader(body)))
			codes[i] = rec.Code
		})
	}
	wg.Wait()
	// Every call is still answered: the commits are well under MaxCommitAnswer.
	for i, code := range codes {
		if code != http.StatusOK {
			t.Errorf("call %d naming a commit of %d KiB of metadata: %d, want 200", i, metaBytes>>10, code)
		}
	}
	bound := lakefs.MaxCommitReads*lakefs.MaxCommitAnswer + calls*(lakefs.FreeCommitAnswer+1)
	if peak := held.peakBytes(); peak > bound {
		t.Errorf("%d calls at once, each naming a commit of %d KiB: lakewap held %d KiB of their answers at once; want at most %d KiB (%d answers whole, the first %d KiB of the others)",
			calls, metaBytes>>10, peak>>10, bound>>10, lakefs.MaxCommitReads, lakefs.FreeCommitAnswer>>10)
	}
}

func answerStart(id, head, source string) string {
	return fmt.Sprintf(`{"id":%q,"parents":[%q,%q],"committer":"writer","message":"m","creation_date":1,"meta_range_id":"","metadata":{"k":"`, id, head, source)
}

// heldAnswers counts what lakewap's client has read of the commit answers
// still open, and releases their last bytes once no call reads further.
type heldAnswers struct {
	calls, mainLen, gateLen int
	release                 chan struct{}

	mu       sync.Mutex
	read     map[*heldBody]int
	now      int
	peak     int
	released bool
}

func (a *heldAnswers) add(b *heldBody, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.read == nil {
		a.read = map[*heldBody]int{}
	}
	a.read[b] += n
	a.now += n
	a.peak = max(a.peak, a.now)
	if a.released || len(a.read) < a.calls {
		return
	}
	for _, k := range a.read {
		if k != a.mainLen && k != a.gateLen {
			return
		}
	}
	a.released = true
	close(a.release)
}

func (a *heldAnswers) closed(b *heldBody) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now -= a.read[b]
	a.read[b] = a.mainLen // done: it reads no further
}

func (a *heldAnswers) peakBytes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

type heldTransport struct {
	rt http.RoundTripper
	h  *heldAnswers
}

func (t heldTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && strings.Contains(req.URL.Path, "/commits/") {
		b := &heldBody{ReadCloser: resp.Body, h: t.h}
		t.h.add(b, 0)
		resp.Body = b
	}
	return resp, err
}

type heldBody struct {
	io.ReadCloser
	h    *heldAnswers
	once sync.Once
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.h.add(b, n)
	return n, err
}

func (b *heldBody) Close() error {
	b.once.Do(func() { b.h.closed(b) })
	return b.ReadCloser.Close()
}
