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
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// lossyProxy stands between lakewap and lakeFS like a load balancer with a
// short timeout: it forwards every call, but the answer to the next
// `lose` merges is replaced by a 504 once release is closed, while lakeFS
// goes on with the merge.
type lossyProxy struct {
	*httptest.Server
	rp      *httputil.ReverseProxy
	lakeFS  *url.URL
	mu      sync.Mutex
	lose    int
	release chan struct{}
	merges  chan string // the path of each merge call, as it arrives
}

func newLossyProxy(t *testing.T, lakeFSEndpoint string) *lossyProxy {
	u, err := url.Parse(lakeFSEndpoint)
	must(t, err)
	p := &lossyProxy{rp: httputil.NewSingleHostReverseProxy(u), lakeFS: u, release: make(chan struct{}), merges: make(chan string, 16)}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *lossyProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "/merge/") {
		p.rp.ServeHTTP(w, r)
		return
	}
	select {
	case p.merges <- r.URL.Path:
	default:
	}
	p.mu.Lock()
	lose := p.lose > 0
	if lose {
		p.lose--
	}
	p.mu.Unlock()
	if !lose {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	out, _ := http.NewRequestWithContext(context.Background(), r.Method, p.lakeFS.String()+r.URL.RequestURI(), bytes.NewReader(body))
	out.Header = r.Header.Clone()
	go func() {
		if resp, err := http.DefaultClient.Do(out); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-p.release:
	case <-r.Context().Done():
		return
	}
	http.Error(w, "upstream request timeout", http.StatusGatewayTimeout)
}

// slowHook is a pre-merge webhook whose first call waits until released and
// then answers first; later calls answer 200 at once.
type slowHook struct {
	*httptest.Server
	mu      sync.Mutex
	calls   int
	entered chan struct{}
	release chan struct{}
	first   int
}

func newSlowHook(t *testing.T, first int) *slowHook {
	h := &slowHook{entered: make(chan struct{}), release: make(chan struct{}), first: first}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.calls++
		n := h.calls
		h.mu.Unlock()
		if n > 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		close(h.entered)
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		w.WriteHeader(h.first)
	}))
	t.Cleanup(h.Close)
	return h
}

// mergesOfSealed lists the commits on main that have sealed as a merged
// parent: what really brought the batch in, whatever the labels say.
// sealedOf is the commit pub's merge brought into main: its second parent,
// which must be batch's sealed commit.
func sealedOf(ctx context.Context, t *testing.T, e *e2e, pub schemas.BatchPublished, batch string) lakefs.Commit {
	t.Helper()
	c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	if len(c.Parents) != 2 {
		t.Fatalf("published commit %s has parents %v; want the merge of the sealed commit", pub.CommitID, c.Parents)
	}
	sealed, err := e.Lake.GetCommit(ctx, "lake", c.Parents[1])
	must(t, err)
	if sealed.Metadata[pipeline.MetaSealedBatchID] != batch {
		t.Fatalf("published merge brought in %s (%v), not the batch's sealed commit", sealed.ID, sealed.Metadata)
	}
	return sealed
}

func mergesOfSealed(t *testing.T, e *e2e, sealed string) []string {
	t.Helper()
	log, err := e.Lake.Log(context.Background(), "lake", "main", 1000)
	must(t, err)
	var out []string
	for _, c := range log {
		for _, p := range c.Parents[min(1, len(c.Parents)):] {
			if p == sealed {
				out = append(out, c.ID)
			}
		}
	}
	return out
}

// TestPublishIdentityAttacks performs the attacks on "is this batch
// published?" against the real lakeFS server, with the lakeFS pre-merge
// hook slow and a proxy that loses merge answers:
//   - a forged marker: while lakewap's merge waits on the hook, an ordinary
//     commit on main carrying the batch's wap.batch_id label is made; the
//     batch must still end with its own sealed commit merged into main;
//   - a merge retried after an ambiguous answer, then lakewap revert: one
//     merge of the sealed commit only, and the revert removes the rows.
func TestPublishIdentityAttacks(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "unused") // the action sends it; these hooks ignore it
	var proxy *lossyProxy
	e := startE2E(t, func(c *config.Config) {
		proxy = newLossyProxy(t, c.LakeFS.Endpoint)
		c.LakeFS.Endpoint = proxy.URL
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// One action, whose URL points at whichever hook the subtest sets.
	var hookMu sync.Mutex
	var hook *slowHook
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		h := hook
		hookMu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		h.Config.Handler.ServeHTTP(w, r)
	}))
	defer router.Close()
	installAction(t, e.Env, router.URL)
	useHook := func(h *slowHook) { hookMu.Lock(); hook = h; hookMu.Unlock() }
	run := func(batch string) <-chan schemas.Event {
		ch := make(chan schemas.Event, 1)
		go func() {
			defer close(ch)
			ch <- e.runBatch(t, batch, billingRows(900000+len(batch)*1000, 0, 1000, "BIGINT"))
		}()
		return ch
	}

	t.Run("forged marker during a slow hook", func(t *testing.T) {
		h := newSlowHook(t, http.StatusPreconditionFailed)
		useHook(h)
		proxy.mu.Lock()
		proxy.lose, proxy.release = 1, make(chan struct{})
		proxy.mu.Unlock()
		done := run("forged-1")
		select {
		case <-h.entered:
		case <-ctx.Done():
			t.Fatal("the publish never reached the pre-merge hook")
		}
		// The attacker's commit: on main, labelled as the batch's publish.
		must(t, e.Lake.Upload(ctx, "lake", "main", "notes/forged.txt", strings.NewReader("not the batch\n")))
		forged, err := e.Lake.Commit(ctx, "lake", "main", "lakewap: publish billing batch forged-1",
			map[string]string{pipeline.MetaBatchID: "forged-1", pipeline.MetaDataset: "billing"})
		must(t, err)
		close(proxy.release) // lakewap's merge answer is lost...
		close(h.release)     // ...and that merge is refused by the hook
		ev, ok := <-done
		if !ok {
			t.FailNow()
		}
		pub, ok := ev.(schemas.BatchPublished)
		if !ok {
			t.Fatalf("batch ended with %+v", ev)
		}
		if pub.CommitID == forged {
			t.Fatalf("BatchPublished names the forged commit %s", forged)
		}
		sealedOf(ctx, t, e, pub, "forged-1")
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=forged-1/", ""); err != nil || n != 1000 {
			t.Errorf("main has %d rows of the batch (err %v), want 1000", n, err)
		}
	})

	t.Run("ambiguous merge retried then reverted", func(t *testing.T) {
		h := newSlowHook(t, http.StatusOK)
		useHook(h)
		proxy.mu.Lock()
		proxy.lose, proxy.release = 1, make(chan struct{})
		close(proxy.release) // answer 504 at once; lakeFS carries on
		proxy.mu.Unlock()
		for len(proxy.merges) > 0 {
			<-proxy.merges
		}
		done := run("ambiguous-1")
		<-proxy.merges // the first merge, whose answer is lost
		select {
		case <-h.entered:
		case <-ctx.Done():
			t.Fatal("the publish never reached the pre-merge hook")
		}
		// lakewap tries again while lakeFS still runs the first merge's
		// hook; only then does that hook allow the first merge.
		select {
		case <-proxy.merges:
		case <-ctx.Done():
			t.Fatal("lakewap never retried the merge")
		}
		close(h.release)
		ev, ok := <-done
		if !ok {
			t.FailNow()
		}
		pub, ok := ev.(schemas.BatchPublished)
		if !ok {
			t.Fatalf("batch ended with %+v", ev)
		}
		c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
		must(t, err)
		if len(c.Parents) != 2 {
			t.Fatalf("published commit %s has parents %v", pub.CommitID, c.Parents)
		}
		sealed := c.Parents[1]
		if m := mergesOfSealed(t, e, sealed); len(m) != 1 || m[0] != pub.CommitID {
			t.Errorf("merges of the sealed commit on main: %v; want only %s", m, pub.CommitID)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=ambiguous-1/", ""); err != nil || n != 1000 {
			t.Fatalf("main has %d rows of the batch (err %v), want 1000", n, err)
		}
		if code, out := e.ask(t, "revert", "-batch", "ambiguous-1", "-reason", "attack test", "-by", "test"); code != 0 {
			t.Fatalf("revert exited %d:\n%s", code, out)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=ambiguous-1/", ""); err != nil || n != 0 {
			t.Errorf("main has %d rows of the reverted batch (err %v), want 0", n, err)
		}
	})
}
