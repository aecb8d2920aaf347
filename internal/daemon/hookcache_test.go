package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// TestHookCallersDoNotChurnTheRunnersLakeFSCaches (review 60): the daemon's
// pre-merge hook and its runner share one lakeFS client, whose caches keep
// the commits the runner made and read by id (1,024) and merge-bases of
// commit ids (4,096), the oldest going first. Every writer has the hook's
// token: each call made lakewap read the commit it names into the runner's
// cache, and each call for a merge in progress (a simplified-ACL Writer's
// commit record whose parents are the target's head and a commit of theirs)
// put a merge-base there too. So a few thousand calls pushed out the
// runner's seal and the seal's merge-base with its branch point, and the
// runner asked lakeFS for them again. Hook callers now fill caches of their
// own (lakefs.Client.Outside), which the runner reads but callers' entries
// never push its own out of.
func TestHookCallersDoNotChurnTheRunnersLakeFSCaches(t *testing.T) {
	const calls = 4200 // over both caches' bounds
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	head, parent, seal := id('d'), id('a'), id('e')
	var mu sync.Mutex
	var asked []string
	commitJSON := func(cid string, parents ...string) string {
		b, _ := json.Marshal(map[string]any{"id": cid, "parents": parents, "committer": "mallory", "message": "m",
			"creation_date": 1, "meta_range_id": "", "metadata": map[string]string{}})
		return string(b)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		p := strings.TrimPrefix(r.URL.Path, "/api/v1")
		switch {
		case p == "/user":
			_, _ = answerJSON(w, `{"user":{"id":"lakewap","creation_date":1}}`)
		case r.Method == http.MethodPost && p == "/repositories/lake/branches/wap-b/commits":
			w.WriteHeader(http.StatusCreated)
			_, _ = answerJSON(w, commitJSON(seal, parent))
		case strings.HasPrefix(p, "/repositories/lake/commits/c"):
			// A hook caller's merge record: the target's head, then a
			// commit of theirs.
			cid := strings.TrimPrefix(p, "/repositories/lake/commits/")
			_, _ = answerJSON(w, commitJSON(cid, head, "5"+cid[1:]))
		case p == "/repositories/lake/commits/"+seal:
			_, _ = answerJSON(w, commitJSON(seal, parent))
		case p == "/repositories/lake/branches":
			_, _ = answerJSON(w, `{"results":[{"id":"main","commit_id":"`+head+`"}],"pagination":{"has_more":false,"next_offset":"","results":1,"max_per_page":1000}}`)
		case p == "/repositories/lake/refs/"+seal+"/merge/"+parent:
			_, _ = answerJSON(w, `{"source_commit_id":"`+seal+`","destination_commit_id":"`+parent+`","base_commit_id":"`+parent+`"}`)
		case strings.Contains(p, "/merge/"):
			// The caller's commit sits on the head: the merge-base is the head.
			_, _ = answerJSON(w, `{"source_commit_id":"x","destination_commit_id":"`+head+`","base_commit_id":"`+head+`"}`)
		case strings.Contains(p, "/diff/"):
			_, _ = answerJSON(w, `{"results":[],"pagination":{"has_more":false,"next_offset":"","results":0,"max_per_page":1000}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lake, err := lakefs.New(lakefs.Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	must(t, err)
	cfg, err := config.ParseIn([]byte(hookConfig+"  listen: \"127.0.0.1:0\"\n  webhook_token: tok\n"), func(string) (string, bool) { return "", false }, "")
	must(t, err)
	audits, err := audit.NewService(audit.ServiceOptions{Engine: noAudit{t}, Datasets: cfg.AuditDatasets(),
		Concurrency: 2, Budget: time.Minute})
	must(t, err)
	d := &Daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry(), lake: lake, audits: audits}
	h, err := d.preMergeHandler()
	must(t, err)

	ctx := context.Background()
	// The runner seals a batch: lakeFS's answer is kept, and the seal's
	// merge-base with its one parent is that parent.
	got, err := lake.Seal(ctx, "lake", "wap-b", "seal", nil)
	if err != nil || got != seal {
		t.Fatalf("Seal = %q, %v", got, err)
	}
	for i := range calls {
		cid := fmt.Sprintf("c%063x", i)
		body := fmt.Sprintf(`{"event_type":"pre-merge","repository_id":"lake","branch_id":"main","source_ref":"5%s","commit_id":%q}`, cid[1:], cid)
		req := httptest.NewRequest(http.MethodPost, PreMergePath, strings.NewReader(body))
		req.Header.Set(audit.TokenHeader, "tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("hook call %d answered %d: %s", i, rec.Code, rec.Body)
		}
	}
	mu.Lock()
	before := len(asked)
	mu.Unlock()
	// What the runner kept answers it, whatever the callers asked for.
	if cm, err := lake.GetCommit(ctx, "lake", seal); err != nil || cm.ID != seal {
		t.Fatalf("GetCommit(seal) = %v, %v", cm.ID, err)
	}
	if base, _, err := lake.MergeBase(ctx, "lake", seal, parent); err != nil || base != parent {
		t.Fatalf("MergeBase(seal, parent) = %q, %v", base, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(asked) - before; n != 0 {
		t.Errorf("after %d hook calls the runner asked lakeFS %d times for its own seal and its merge-base (%v); want none", calls, n, asked[before:])
	}
}

func answerJSON(w http.ResponseWriter, s string) (int, error) { return w.Write([]byte(s)) }

// noAudit is an engine the hook must not need: every call in the test
// touches no table.
type noAudit struct{ t *testing.T }

func (n noAudit) Run(context.Context, audit.Request) (schemas.AuditReport, error) {
	n.t.Error("an audit ran; the merges touch no table")
	return schemas.AuditReport{}, fmt.Errorf("no audits here")
}
