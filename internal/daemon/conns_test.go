package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
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
	lim := serveLimited(srv, ln, limit)
	lim.grace = time.Hour // closing half-sent headers is TestSlowClientsDoNotLockOutCallers's
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

// TestIdleConnectionsAreShedAtTheLimit: counting idle keep-alive
// connections against the limit let anyone who reaches the port lock every
// caller out (lakeFS's hook calls included) with maxConns connections
// that each sent one request and then waited, for the 2 minutes of the
// idle timeout. When a connection finds the limit reached, the server
// closes its idle connections first, and it is served.
func TestIdleConnectionsAreShedAtTheLimit(t *testing.T) {
	const limit = 4
	var mu sync.Mutex
	done := map[net.Conn]bool{} // answered: idle, or closed
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), time.Minute)
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if s == http.StateIdle || s == http.StateClosed {
			done[c] = true
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := serveLimited(srv, ln, limit)
	stopped := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(stopped) }()
	defer func() { _ = srv.Close(); <-stopped }()
	addr := ln.Addr().String()

	get := func(c net.Conn) error {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: lakewap\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := get(c); err != nil {
			t.Fatal(err)
		}
	}
	// The server holds them idle (or closed those idle when the limit was
	// first reached: its next Accept takes a slot before a connection).
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == limit })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	served := make(chan error, 1)
	go func() { served <- get(extra) }()
	var got error
	waitUntil(t, func() bool {
		select {
		case got = <-served:
			return true
		default:
			return lim.waiting()
		}
	})
	if lim.waiting() {
		t.Fatalf("a new connection waits while %d idle ones hold the limit", limit)
	}
	if got != nil {
		t.Fatalf("the new connection: %v", got)
	}
}

// TestSlowClientsDoNotLockOutCallers: maxConns connections that each sent
// half a request header (or half a body) held every slot until the
// server's timeouts closed them (5 s for a header, 30 s for a body), and an
// attacker who opened them again at once, with more waiting in the
// kernel's queue, kept /readyz, /metrics and lakeFS's hook calls waiting:
// with 2,000 half headers against the daemon's 512 slots each /readyz took
// 10 s, with 5,000 40 s; one GET with a 100,000-byte body never sent got
// its answer, and gave its slot back, after 30 s. When every slot is
// taken, a new connection closes the one that has waited longest for its
// client (past the grace) and is served; a body its handler does not read
// is not waited for.
func TestSlowClientsDoNotLockOutCallers(t *testing.T) {
	const limit = 4
	for _, tc := range []struct{ name, sent string }{
		{"half a header", "GET /readyz HTTP/1.1\r\nHost: lakewap\r\nX-Slow: a"},
		{"a body the handler does not read, never sent", "POST /readyz HTTP/1.1\r\nHost: lakewap\r\nContent-Length: 100000\r\n\r\nab"},
		{"a body the handler reads, half sent", "POST /hook HTTP/1.1\r\nHost: lakewap\r\nContent-Length: 100000\r\n\r\nab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ready") })
			mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				_, _ = io.WriteString(w, "ok")
			})
			srv := newHTTPServer(mux, time.Minute)
			// The slow clients hold for the whole test, as if renewed.
			srv.ReadHeaderTimeout = time.Hour
			srv.ReadTimeout = time.Hour
			var mu sync.Mutex
			accepted := 0
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
			lim := serveLimited(srv, ln, limit)
			lim.grace = 0 // the slow clients below have waited long enough
			stopped := make(chan struct{})
			go func() { _ = srv.Serve(lim); close(stopped) }()
			defer func() { _ = srv.Close(); <-stopped }()
			addr := ln.Addr().String()

			for i := range limit {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_, _ = io.WriteString(c, tc.sent)
				waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return accepted == i+1 })
			}
			caller, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer caller.Close()
			_, _ = io.WriteString(caller, "GET /readyz HTTP/1.1\r\nHost: lakewap\r\n\r\n")
			answered := make(chan error, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(caller), nil)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				answered <- err
			}()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatalf("the caller: %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("the caller got no answer within a minute while %d slow clients held every connection", limit)
			}
		})
	}
}

// TestConnectionsGoneIdleWhileOneWaitsAreShed: a connection that found
// every slot taken by requests being served waited, once those requests
// were answered, for their connections' idle timeout (2 minutes): idle
// connections were shed only when it first arrived. While it waits it
// sheds them again each time it looks, and is served.
func TestConnectionsGoneIdleWhileOneWaitsAreShed(t *testing.T) {
	const limit = 4
	gate := make(chan struct{})
	var serving atomic.Int32
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/held" {
			serving.Add(1)
			<-gate
		}
		_, _ = io.WriteString(w, "ok")
	}), time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := serveLimited(srv, ln, limit)
	stopped := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(stopped) }()
	defer func() { _ = srv.Close(); <-stopped }()
	addr := ln.Addr().String()

	answered := func(c net.Conn) chan error {
		done := make(chan error, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		return done
	}
	var held []chan error
	for range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /held HTTP/1.1\r\nHost: lakewap\r\n\r\n")
		held = append(held, answered(c))
	}
	waitUntil(t, func() bool { return serving.Load() == limit })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_, _ = io.WriteString(extra, "GET / HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	waitUntil(t, lim.waiting)
	close(gate) // the held requests are answered; their connections stay open, idle
	for _, done := range held {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-answered(extra):
		if err != nil {
			t.Fatalf("the waiting connection: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the waiting connection got no answer within a minute while %d idle connections held every slot", limit)
	}
}

// TestShutdownWhileAConnectionWaitsForASlot: http.Server.Shutdown waits,
// whatever its context, for Serve to return, and Serve returns when Accept
// does. An Accept waiting for a slot held by a request being served (a
// pre-merge audit may take minutes) did not notice the listener closing,
// so the daemon's shutdown hung until that request ended. Closing the
// listener ends the wait.
func TestShutdownWhileAConnectionWaitsForASlot(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	var serving atomic.Int32
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serving.Add(1)
		<-gate
	}), time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := serveLimited(srv, ln, 1)
	stopped := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(stopped) }()
	addr := ln.Addr().String()
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, _ = io.WriteString(busy, "POST /webhooks/lakefs/pre-merge HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	waitUntil(t, func() bool { return serving.Load() == 1 })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	waitUntil(t, lim.waiting)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Shutdown need not wait for the held request
	go func() { _ = srv.Shutdown(ctx) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return within a minute of Shutdown while a connection waited for a slot")
	}
}

// TestClientsThatDoNotReadTheirAnswersDoNotLockOutCallers: a client that
// reads no answer keeps its connection in a request being served, the
// server blocked writing the answer once the kernel's buffers are full,
// which no timeout ends before the response timeout (the step's + 30 s,
// 5.5 minutes by default) and which was neither idle nor waiting for the
// client's bytes, so never closed to make room. Answers of a few bytes do
// it too, pipelined: on loopback a connection sending 100,000 requests for
// /healthz (no token needed) without reading blocked the server after
// 35,659 answers. maxConns such connections locked every caller out,
// lakeFS's hook calls included, for that long, renewable. A connection
// blocked writing to its client past the grace is closed like one blocked
// reading from it. (The test's answer is one larger than the kernel's
// buffers, so that the server is known to be blocked once it writes it.)
func TestClientsThatDoNotReadTheirAnswersDoNotLockOutCallers(t *testing.T) {
	const limit = 4
	var answering atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/answer", func(w http.ResponseWriter, r *http.Request) {
		answering.Add(1)
		chunk := make([]byte, 64<<10)
		for range 1024 { // 64 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ready") })
	srv := newHTTPServer(mux, time.Minute)
	srv.WriteTimeout = time.Hour // the unread answers hold for the whole test, as if renewed
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := serveLimited(srv, ln, limit)
	lim.grace = 0 // the clients below have not read for long enough
	stopped := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(stopped) }()
	defer func() { _ = srv.Close(); <-stopped }()
	addr := ln.Addr().String()

	for i := range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /answer HTTP/1.1\r\nHost: lakewap\r\n\r\n")
		waitUntil(t, func() bool { return answering.Load() == int32(i+1) })
	}
	caller, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	_, _ = io.WriteString(caller, "GET /readyz HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	answered := make(chan error, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(caller), nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the caller: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the caller got no answer within a minute while %d clients that read no answer held every connection", limit)
	}
}

// TestConnectionGoneIdleIsShedForOneWaitingAtOnce: a connection that found
// every slot taken, by a request being served and a connection waiting for
// its client (a hook call under way), looked again only when that one
// reached the grace: the served request's connection, idle once answered,
// was not shed before, and the new connection waited for nothing. Under
// load it made TestKeepAliveRequestUnderWayIsNotShed fail one run in 50:
// its other caller's answer is sent before the server counts the
// connection idle. A connection going idle wakes the wait.
func TestConnectionGoneIdleIsShedForOneWaitingAtOnce(t *testing.T) {
	const limit = 2
	gate := make(chan struct{})
	var serving atomic.Int32
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/held" {
			serving.Add(1)
			<-gate
		}
		_, _ = io.WriteString(w, "ok")
	}), time.Minute)
	srv.ReadHeaderTimeout = time.Hour // the call under way waits for the whole test
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := serveLimited(srv, ln, limit)
	lim.grace = time.Hour // only idle connections may be closed here
	stopped := make(chan struct{})
	go func() { _ = srv.Serve(lim); close(stopped) }()
	defer func() { _ = srv.Close(); <-stopped }()
	addr := ln.Addr().String()

	underWay, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer underWay.Close()
	_, _ = io.WriteString(underWay, "POST /webhooks/lakefs/pre-merge HTTP/1.1\r\nHost: lakewap\r\n")
	waitUntil(t, func() bool { lim.mu.Lock(); defer lim.mu.Unlock(); return len(lim.reading) == 1 })
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, _ = io.WriteString(held, "GET /held HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	waitUntil(t, func() bool { return serving.Load() == 1 })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_, _ = io.WriteString(extra, "GET / HTTP/1.1\r\nHost: lakewap\r\n\r\n")
	waitUntil(t, lim.waiting)
	close(gate) // the held request is answered; its connection stays open, idle
	if resp, err := http.ReadResponse(bufio.NewReader(held), nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the waiting connection: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting connection got no answer within a minute while an idle connection held a slot")
	}
	// The call under way was not the one closed.
	lim.mu.Lock()
	n := len(lim.reading)
	lim.mu.Unlock()
	if n != 1 {
		t.Errorf("%d connections wait for their client, want the call under way", n)
	}
}
