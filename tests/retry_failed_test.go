package tests

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestRetryTakesFailedRuns: a batch whose merges kept failing until its
// retry budget ran out ends failed; once lakeFS merges again, lakewap retry
// publishes it (it used to refuse anything but aborted runs).
func TestRetryTakesFailedRuns(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	e := startE2E(t, func(c *config.Config) {
		u, err := url.Parse(c.LakeFS.Endpoint)
		must(t, err)
		rp := httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuse.Load() && r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/merge/") {
				http.Error(w, `{"message":"service unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		c.LakeFS.Endpoint = srv.URL
		c.Runner.RetryBudget = config.Duration(time.Second)
	})
	ev := e.runBatch(t, "failed-1", billingRows(880000, 0, 100, "BIGINT"))
	if f, ok := ev.(schemas.BatchFailed); !ok {
		t.Fatalf("batch ended with %+v; want failed after its retry budget", ev)
	} else {
		t.Logf("failed: %s", f.Error)
	}
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if code, out := e.ask(t, "retry", "-batch", "failed-1", "-by", "ana"); code != 0 || !strings.Contains(out, "published batch failed-1") {
		t.Fatalf("retry of a failed run exited %d:\n%s", code, out)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=failed-1/", ""); err != nil || n != 100 {
		t.Errorf("main has %d rows of the retried batch (err %v)", n, err)
	}
}
