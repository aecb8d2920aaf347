package tests

import (
	"bytes"
	"context"
	"io"
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

// TestPublishLateAnswerOnLastAttempt: the run's last publish attempt is a
// merge that the real lakeFS carries out, but whose answer never reaches
// lakewap within its step timeout (a proxy forwards the merge, waits for
// lakeFS's answer, and then holds it until lakewap gives up). The first
// merge is refused (503, not forwarded), so the retry budget is spent when
// the second attempt times out. The batch is on main: the run must end
// published naming that merge, never failed (a BatchFailed invites a
// re-run that would publish the batch twice), and main holds it once.
func TestPublishLateAnswerOnLastAttempt(t *testing.T) {
	var merges, forwarded atomic.Int32
	e := startE2E(t, func(c *config.Config) {
		u, err := url.Parse(c.LakeFS.Endpoint)
		must(t, err)
		rp := httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "/merge/") {
				rp.ServeHTTP(w, r)
				return
			}
			if merges.Add(1) == 1 {
				_, _ = io.Copy(io.Discard, r.Body)
				http.Error(w, `{"message":"service unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			// Forward the merge and wait until lakeFS has carried it out...
			body, _ := io.ReadAll(r.Body)
			out, _ := http.NewRequestWithContext(context.Background(), r.Method, u.String()+r.URL.RequestURI(), bytes.NewReader(body))
			out.Header = r.Header.Clone()
			if resp, err := http.DefaultClient.Do(out); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					forwarded.Add(1)
				}
			}
			// ...then never answer: lakewap's step times out.
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		c.LakeFS.Endpoint = srv.URL
		c.Runner.StepTimeout = config.Duration(10 * time.Second)
		c.Runner.RetryBudget = config.Duration(time.Second)
	})
	ev := e.runBatch(t, "late-1", billingRows(870000, 0, 100, "BIGINT"))
	if forwarded.Load() != 1 {
		t.Fatalf("%d merges carried out by lakeFS (of %d asked); the attack needs exactly one", forwarded.Load(), merges.Load())
	}
	pub, ok := ev.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch ended with %+v although its merge is on main; want BatchPublished", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sealed := sealedOf(ctx, t, e, pub, "late-1")
	if m := mergesOfSealed(t, e, sealed.ID); len(m) != 1 || m[0] != pub.CommitID {
		t.Errorf("merges of the sealed commit on main: %v; want only %s", m, pub.CommitID)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=late-1/", ""); err != nil || n != 100 {
		t.Errorf("main has %d rows of the batch (err %v), want 100", n, err)
	}
	for _, ev := range e.Watcher.All("late-1") {
		if f, ok := ev.(schemas.BatchFailed); ok {
			t.Errorf("a BatchFailed was sent as well: %+v", f)
		}
	}
}
