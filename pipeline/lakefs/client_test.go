package lakefs

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Calls made at once, as the runner's steps and the audit's downloads
// make them, keep their connections for the next ones: Go's default
// transport keeps 2 idle connections per host and closes the others, so
// every burst of calls dialled lakeFS anew.
func TestConcurrentCallsKeepTheirConnections(t *testing.T) {
	const calls, rounds = 16, 4
	var dialled atomic.Int64
	arrived := make(chan struct{})
	var mu sync.Mutex
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		wait := release
		mu.Unlock()
		arrived <- struct{}{}
		<-wait
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","committer":"x","message":"m","creation_date":1,"meta_range_id":"","parents":[]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				if _, err := c.GetCommit(context.Background(), "repo", "main"); err != nil {
					t.Error(err)
				}
			})
		}
		for range calls { // all in flight at once
			<-arrived
		}
		mu.Lock()
		close(release)
		release = make(chan struct{})
		mu.Unlock()
		wg.Wait()
	}
	if n := dialled.Load(); n != calls {
		t.Errorf("%d rounds of %d calls at once dialled %d connections, want %d (the first round's, kept)", rounds, calls, n, calls)
	}
}
