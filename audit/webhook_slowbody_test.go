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

// TestPreMergeSmallBodiesAreReadWithoutASlot: every writer has the hook's
// token, and a caller may hold a read slot for the hook's whole timeout
// (its body sent slowly: TestPreMergeSlowBodiesDoNotHoldTheReadSlots);
// callers that reconnect, with more queued for a slot than it has, keep
// every slot taken. Then lakeFS's call for lakewap's own publish (a body
// of a few hundred bytes, sent at once) waited for a slot until its
// timeout and was answered 503, which refuses the merge: writers could
// fail every publish. Here the slots are taken by the test; a body of up
// to maxFreeHookBody is read without one (the server's connection limit
// bounds those at once), and one over it still waits.
func TestPreMergeSmallBodiesAreReadWithoutASlot(t *testing.T) {
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{}, Runner: &countingRunner{}, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range maxHookReads {
		h.reads <- struct{}{} // held by slow callers
	}
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/webhooks/lakefs/pre-merge", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"event_type":"pre-merge","repository_id":"repo","branch_id":"main","source_ref":"b1"}`
	if code := post(body); code == http.StatusServiceUnavailable {
		t.Errorf("a call of %d bytes while the read slots were held: %d; want it decided", len(body), code)
	}
	big := `{"event_type":"pre-merge","repository_id":"repo","branch_id":"main","source_ref":"b1","x":"` + strings.Repeat("a", maxFreeHookBody) + `"}`
	if code := post(big); code != http.StatusServiceUnavailable {
		t.Errorf("a call of %d bytes while the read slots were held: %d; want 503", len(big), code)
	}
}
