package daemon

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestHTTPServerLimitsConnections: whoever reaches the port could open
// connections without end, each costing the server a goroutine, buffers
// and up to 64 KiB of header for 5 s: the heap grew with the connections
// held. The listener hands the server at most maxConns at a time; a
// connection past it waits (in the kernel's queue) until one closes, then
// is served.
func TestHTTPServerLimitsConnections(t *testing.T) {
	const limit = 4
	var mu sync.Mutex
	accepted := 0
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), time.Minute)
	srv.ReadHeaderTimeout = time.Minute // held connections stay until closed here
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			accepted++
			mu.Unlock()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConns(ln, limit)
	done := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(done) }()
	defer func() { _ = srv.Close(); <-done }()
	addr := ln.Addr().String()
	count := func() int { mu.Lock(); defer mu.Unlock(); return accepted }

	var held []net.Conn
	for range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: lakewap\r\nX-Slow: a")
		held = append(held, c)
	}
	waitUntil(t, func() bool { return count() == limit })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_, _ = io.WriteString(extra, "GET / HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	// Either the listener holds it back, or the server took it.
	waitUntil(t, func() bool { return lim.waiting() || count() > limit })
	if n := count(); n > limit {
		t.Fatalf("the server took %d connections at once, want at most %d", n, limit)
	}
	held[0].Close()
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the connection past the limit, once one closed: %v %v; want it served", resp, err)
	}
	resp.Body.Close()
}

// waitUntil waits for cond, failing after a minute.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}
