package tests

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// gatedProxy forwards to lakeFS, holding object downloads whose path
// contains match while the gate is shut: a slow blockstore, on demand.
type gatedProxy struct {
	*httptest.Server
	mu    sync.Mutex
	match string
	gate  chan struct{} // nil: open
}

func newGatedProxy(t *testing.T, lakeFSEndpoint string) *gatedProxy {
	u, err := url.Parse(lakeFSEndpoint)
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &gatedProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		gate, match := p.gate, p.match
		p.mu.Unlock()
		if gate != nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/objects") && strings.Contains(r.URL.Query().Get("path"), match) {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// TestColdHookAuditSlowerThanItsTimeout: lakewap's own publish meets a
// pre-merge hook that cannot answer from its cache (main moved after the
// publish looked at it and before lakeFS made the merge, so the hook audits
// the merge commit lakeFS is about to put on main) and whose audit takes
// longer than the hook's timeout (http.webhook_audit_timeout, scaled down to
// 1s here from the old fixed 55s). lakeFS refuses that merge with 412;
// lakewap retries it within its retry budget, audits the batch again on
// main's new head, and the hook answers that merge from the report: the
// batch is published.
func TestColdHookAuditSlowerThanItsTimeout(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "cold-secret")
	var proxy *gatedProxy
	var mu sync.Mutex
	release := make(chan struct{})
	refused := make(chan struct{})
	var refusedOnce, armOnce sync.Once
	var env *e2e
	e := startE2EWith(t, func(c *config.Config) {
		proxy = newGatedProxy(t, c.LakeFS.Endpoint)
		c.LakeFS.Endpoint = proxy.URL
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "cold-secret"
		c.HTTP.WebhookAuditTimeout = config.Duration(time.Second)
		c.Audit.CacheDir = "" // another replica's disk, say: nothing downloaded yet
	}, daemon.Options{Failpoint: func(name string) {
		if name != "before_merge" {
			return
		}
		armOnce.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			// main moves (so the hook's cache has no report for the merge
			// lakeFS makes) and the blockstore turns slow for the batch's file.
			// main gains a file of the table, so that the hook's audit reads
			// the table, the batch's file with it: the engine's query memo
			// answers a table it read before without reading (or downloading)
			// a file, as a replica with an empty memo would not.
			ctx := context.Background()
			must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=direct/part-0.parquet", billingRows(880000, 0, 10, "BIGINT")))
			_, err := env.Lake.Commit(ctx, "lake", "main", "main moves while the batch publishes", nil)
			must(t, err)
			proxy.mu.Lock()
			proxy.match, proxy.gate = "batch=cold-1/", release
			proxy.mu.Unlock()
		})
	}, Observe: func(before, after pipeline.Run) {
		if after.BatchID == "cold-1" && after.State == pipeline.StatePublishing && strings.Contains(after.LastError, "412") {
			refusedOnce.Do(func() { close(refused) })
		}
	}})
	mu.Lock()
	env = e
	mu.Unlock()
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan schemas.Event, 1)
	go func() { done <- e.runBatch(t, "cold-1", billingRows(870000, 0, 1000, "BIGINT")) }()
	select {
	case <-refused: // the cold hook ran out of time and lakeFS said 412
	case ev := <-done:
		t.Fatalf("batch ended before its merge was refused: %+v", ev)
	case <-ctx.Done():
		t.Fatal("the merge was never refused by the cold hook")
	}
	close(release)
	ev := <-done
	pub, ok := ev.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch ended with %s %+v; want published after the hook's audit finished", ev.EventType(), ev)
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != pub.CommitID {
		t.Errorf("main at %s, published %s", head.ID, pub.CommitID)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=cold-1/", ""); err != nil || n != 1000 {
		t.Errorf("main has %d rows of the batch (err %v)", n, err)
	}
}
