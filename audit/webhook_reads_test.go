package audit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingBody gives prefix, then says when it is read further and
// blocks until released: a caller sending its body slowly.
type blockingBody struct {
	prefix  []byte
	once    sync.Once
	started chan<- struct{}
	release <-chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	b.once.Do(func() { b.started <- struct{}{} })
	<-b.release
	return 0, http.ErrBodyReadAfterClose
}

func (b *blockingBody) Close() error { return nil }

// TestPreMergeBodiesAreReadFewAtATime: every writer has the hook's token,
// and each call's body (up to 1 MiB) is read and decoded whole before
// lakeFS is asked anything, so callers sending bodies at once made the
// daemon hold as many bodies as they opened connections (2.1 MiB allocated
// for each 1 MiB body read and decoded). At most maxHookReads bodies are read
// at once; a call that finds no room within the handler's timeout is
// answered 503 without its body being read. Bodies of up to
// maxFreeHookBody need no slot (TestPreMergeSmallBodiesAreReadWithoutASlot):
// here the bodies are longer.
func TestPreMergeBodiesAreReadFewAtATime(t *testing.T) {
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{}, Runner: &countingRunner{}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range maxHookReads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", nil)
			r.Body = &blockingBody{prefix: []byte(strings.Repeat(" ", maxFreeHookBody+1)), started: started, release: release}
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
	}
	for range maxHookReads {
		<-started
	}
	body := `{"event_type":"pre-merge","repository_id":"repo","branch_id":"main","source_ref":"b1","x":"` + strings.Repeat("a", maxFreeHookBody) + `"}`
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", strings.NewReader(body)))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("a call while %d bodies are being read: %d %s; want 503, its body not read", maxHookReads, w.Code, w.Body)
	}
	close(release)
	wg.Wait()
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", strings.NewReader(body)))
	if w.Code == http.StatusServiceUnavailable {
		t.Errorf("a call once the bodies were read: %d %s; want it decided", w.Code, w.Body)
	}
}
