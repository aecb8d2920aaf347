package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestJanitorsReadsDoNotChurnTheRunnersLakeFSCaches: the janitor reads the
// head commit of every `wap-` branch that has no run, and anyone with a
// lakeFS writer's key can make such branches, each on a commit of its own.
// Built as the daemon builds it (daemon.NewJanitor over the daemon's lakeFS
// client), the janitor reads through the client's outside view: a sweep over
// more writer-made branches than the commit cache holds (1,024) leaves the
// seal the runner made in the runner's cache, and the runner's read of it
// asks lakeFS nothing. Over the runner's own view, the sweep pushed the seal
// out and the runner asked lakeFS for it again.
func TestJanitorsReadsDoNotChurnTheRunnersLakeFSCaches(t *testing.T) {
	const branches = 1100 // over the commit cache's 1,024
	k := kafkatest.StartFake(t, kfake.SeedTopics(1, "wap.events", "wap.runs"))
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	seal, parent := strings.Repeat("e", 64), strings.Repeat("a", 64)
	commitJSON := func(cid, committer string, parents ...string) string {
		b, _ := json.Marshal(map[string]any{"id": cid, "parents": parents, "committer": committer, "message": "m",
			// A day old at most: the sweep keeps the writers' branches.
			"creation_date": time.Now().Unix(), "meta_range_id": "", "metadata": map[string]string{}})
		return string(b)
	}
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		p := strings.TrimPrefix(r.URL.Path, "/api/v1")
		switch {
		case p == "/user":
			_, _ = w.Write([]byte(`{"user":{"id":"lakewap","creation_date":1}}`))
		case r.Method == http.MethodPost && p == "/repositories/lake/branches/wap-billing-b1/commits":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(commitJSON(seal, "lakewap", parent)))
		case p == "/repositories/lake/commits/"+seal:
			_, _ = w.Write([]byte(commitJSON(seal, "lakewap", parent)))
		case strings.HasPrefix(p, "/repositories/lake/commits/"):
			cid := strings.TrimPrefix(p, "/repositories/lake/commits/")
			_, _ = w.Write([]byte(commitJSON(cid, "mallory", parent)))
		case r.Method == http.MethodGet && p == "/repositories/lake/branches":
			// The writer's branches wap-mallory-0000.., a page at a time.
			from := 0
			if a := r.URL.Query().Get("after"); a != "" {
				n, err := strconv.Atoi(strings.TrimPrefix(a, "wap-mallory-"))
				if err != nil {
					http.Error(w, "bad after", http.StatusBadRequest)
					return
				}
				from = n + 1
			}
			amount, _ := strconv.Atoi(r.URL.Query().Get("amount"))
			to := min(branches, from+max(amount, 1))
			var refs []map[string]string
			for i := from; i < to; i++ {
				refs = append(refs, map[string]string{"id": fmt.Sprintf("wap-mallory-%04d", i), "commit_id": id(i)})
			}
			b, _ := json.Marshal(map[string]any{"results": refs, "pagination": map[string]any{"has_more": to < branches,
				"next_offset": fmt.Sprintf("wap-mallory-%04d", to-1), "results": len(refs), "max_per_page": 1000}})
			_, _ = w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lake, j := janitorOver(t, k.Brokers[0], srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The runner seals a batch; lakeFS's answer is kept.
	got, err := lake.Seal(ctx, "lake", "wap-billing-b1", "seal", nil)
	if err != nil || got != seal {
		t.Fatalf("Seal = %q, %v", got, err)
	}
	ds, err := j.Sweep(ctx, false)
	must(t, err)
	heads := 0
	for _, d := range ds {
		if d.Delete || d.Err != "" {
			t.Errorf("the sweep deleted or failed on a young branch without a run: %+v", d)
		}
		if d.State == "" {
			heads++
		}
	}
	if heads != branches {
		t.Fatalf("the sweep judged %d branches by their head commit; want %d", heads, branches)
	}
	mu.Lock()
	before := len(asked)
	mu.Unlock()
	if cm, err := lake.GetCommit(ctx, "lake", seal); err != nil || cm.ID != seal {
		t.Fatalf("GetCommit(seal) = %v, %v", cm.ID, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(asked) - before; n != 0 {
		t.Errorf("after a sweep over %d writer-made branches the runner asked lakeFS %d times for its own seal (%v); want none", branches, n, asked[before:])
	}
}

// TestJanitorKeepsAForgottenRunsSealAsLongAsAnAbortedRun: the store forgets
// a finished run before its retention when max_finished_runs newer runs of
// its dataset finish on its partition, and a producer can make those (land
// and cancel batches). The janitor then finds the run's kept branch without
// a run and judged it by its head commit's age against
// janitor.abandoned_after (24 h), not the aborted run's retention (72 h):
// an audit-failed batch's evidence, its head lakewap's seal of 30 hours
// ago, was deleted. A head commit lakewap's own lakeFS user made (lakeFS
// names the committer; no writer can) is now kept for the longest
// aborted_retention of the repository's datasets; a writer's head as old
// is still deleted.
func TestJanitorKeepsAForgottenRunsSealAsLongAsAnAbortedRun(t *testing.T) {
	k := kafkatest.StartFake(t, kfake.SeedTopics(1, "wap.events", "wap.runs"))
	seal, mallorys, parent := strings.Repeat("e", 64), strings.Repeat("5", 64), strings.Repeat("a", 64)
	old := time.Now().Add(-30 * time.Hour).Unix()
	commitJSON := func(cid, committer string) string {
		b, _ := json.Marshal(map[string]any{"id": cid, "parents": []string{parent}, "committer": committer, "message": "m",
			"creation_date": old, "meta_range_id": "", "metadata": map[string]string{}})
		return string(b)
	}
	var mu sync.Mutex
	var deleted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		p := strings.TrimPrefix(r.URL.Path, "/api/v1")
		switch {
		case p == "/user":
			_, _ = w.Write([]byte(`{"user":{"id":"lakewap","creation_date":1}}`))
		case p == "/repositories/lake/commits/"+seal:
			_, _ = w.Write([]byte(commitJSON(seal, "lakewap")))
		case p == "/repositories/lake/commits/"+mallorys, p == "/repositories/lake/commits/wap-mallory": // by id, or its branch's head
			_, _ = w.Write([]byte(commitJSON(mallorys, "mallory")))
		case r.Method == http.MethodGet && p == "/repositories/lake/branches/wap-mallory/diff": // nothing staged
			_, _ = w.Write([]byte(`{"results":[],"pagination":{"has_more":false,"next_offset":"","results":0,"max_per_page":1000}}`))
		case r.Method == http.MethodGet && p == "/repositories/lake/branches":
			_, _ = w.Write([]byte(`{"results":[{"id":"wap-billing-evidence","commit_id":"` + seal + `"},{"id":"wap-mallory","commit_id":"` + mallorys +
				`"}],"pagination":{"has_more":false,"next_offset":"","results":2,"max_per_page":1000}}`))
		case r.Method == http.MethodDelete && strings.HasPrefix(p, "/repositories/lake/branches/"):
			mu.Lock()
			deleted = append(deleted, strings.TrimPrefix(p, "/repositories/lake/branches/"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, j := janitorOver(t, k.Brokers[0], srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := j.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(deleted, []string{"wap-mallory"}) {
		t.Errorf("the janitor deleted %v; want wap-mallory alone (wap-billing-evidence's head is lakewap's seal of 30 h ago, within the 72 h an aborted run's branch is kept)", deleted)
	}
}

// janitorOver builds the janitor as the daemon does (daemon.NewJanitor over
// daemon.Lake) for a billing dataset in repository lake on the lakeFS at
// url; the test's end closes it.
func janitorOver(t *testing.T, broker, url string) (*lakefs.Client, *janitor.Janitor) {
	t.Helper()
	cfg, err := config.ParseIn([]byte(`
kafka: {brokers: ["`+broker+`"]}
lakefs: {endpoint: "`+url+`", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables: [{name: t, path: gold/t/}]
    checks: [{kind: row_count, table: t, min: 1}]
`), func(string) (string, bool) { return "", false }, "")
	must(t, err)
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lake, err := daemon.Lake(cfg, log, nil, nil)
	must(t, err)
	j, err := daemon.NewJanitor(cfg, lake, log, nil)
	must(t, err)
	t.Cleanup(j.Close)
	return lake, j
}
