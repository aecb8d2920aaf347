package audit

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPreMergeSlowBodiesDoNotHoldTheReadSlots: the hook reads at most
// maxHookReads bodies at once, and every writer has its token. A caller
// that sends its headers and then its body a few bytes at a time held a
// read slot for as long as the server let the connection be read (30 s in
// the daemon), whatever the hook's timeout: maxHookReads such callers,
// reconnecting, made every pre-merge call (lakewap's own publishes too)
// answered 503. A body is read within the call's timeout; a caller past
// it is answered, and its slot is free for the next call.
func TestPreMergeSlowBodiesDoNotHoldTheReadSlots(t *testing.T) {
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{}, Runner: &countingRunner{}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for i := range maxHookReads {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Headers, and 10 of the 100 bytes of body announced; no more.
		if _, err := fmt.Fprintf(c, "POST /webhooks/lakefs/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"event_ty"); err != nil {
			t.Fatal(err)
		}
		// The hang guard: far beyond the hook's timeout.
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("slow caller %d: no answer: %v", i, err)
		}
		resp.Body.Close()
	}
	body := `{"event_type":"pre-merge","repository_id":"repo","branch_id":"main","source_ref":"b1"}`
	resp, err := http.Post(srv.URL+"/webhooks/lakefs/pre-merge", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("a call after %d slow callers were answered: %d; want it decided", maxHookReads, resp.StatusCode)
	}
}
