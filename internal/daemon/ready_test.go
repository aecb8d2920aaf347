package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
)

// TestReadyzAsksLakeFSAtMostOncePerSecond: /readyz answers whoever reaches
// the port, without a token, and each call asked lakeFS's health check, so
// a caller could make lakewap open as many calls to lakeFS as it sent to
// /readyz. Calls share one health check at a time, and its answer for a
// second; a failure too, so an outage is not asked about once per call.
func TestReadyzAsksLakeFSAtMostOncePerSecond(t *testing.T) {
	var mu sync.Mutex
	asked, fail := 0, false
	healthy := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if fail {
			return errors.New("lakeFS down")
		}
		return nil
	}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	h := readyHandler(healthy, func() bool { return true }, func() []kafka.Refusal { return nil }, slog.New(slog.DiscardHandler), func() time.Time { return now })
	ready := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); ready() }()
	}
	wg.Wait()
	for range 50 {
		if code := ready(); code != http.StatusOK {
			t.Fatalf("/readyz = %d, want 200", code)
		}
	}
	if asked != 1 {
		t.Errorf("100 calls within a second asked lakeFS %d times, want once", asked)
	}
	now = now.Add(2 * time.Second)
	fail = true
	if code := ready(); code != http.StatusServiceUnavailable || asked != 2 {
		t.Errorf("a call 2 s later, lakeFS down: %d, lakeFS asked %d times in all; want 503 and 2", code, asked)
	}
	if code := ready(); code != http.StatusServiceUnavailable || asked != 2 {
		t.Errorf("the next call: %d, lakeFS asked %d times in all; want the failure again, 2", code, asked)
	}
}
