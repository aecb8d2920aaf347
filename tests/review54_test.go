package tests

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// TestRevertOntoAnUnmovedHeadIsAuditedOnce (real lakeFS, lakewap's
// pre-merge action on main; review 54): the revert's audit judges its
// scratch revert commit onto main's head, and lakewap merges that commit
// onto the same head, which the hook judges. The merge leaves exactly the
// audited commit, and the hook takes the revert's passing audit from the
// daemon's reports instead of auditing again: its lookup hits. Before, it
// missed and audited the same commit a second time. The demo's has_rows
// (a batch-scoped row count) is dropped: a revert adds no rows, so it
// fails after every revert and on the head alike, the revert's audit does
// not pass outright but is excused, and the hook judges such a revert
// itself (it asks more than the runner does: whether the revert makes a
// failing check worse).
func TestRevertOntoAnUnmovedHeadIsAuditedOnce(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-54")
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.WebhookToken = "hook-secret-54"
		ds := c.Datasets["billing"]
		ds.Suite.Checks = slices.DeleteFunc(ds.Suite.Checks, func(k audit.Check) bool { return k.Name == "has_rows" })
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := "http://" + e.d.HTTPAddr()
	installAction(t, e.Env, base+daemon.PreMergePath)
	for _, b := range []struct{ batch, rows string }{{"rv54-1", harness.GoodBillingRows}, {"keep54-2", secondBillingRows}} {
		if ev := e.runBatch(t, b.batch, b.rows); ev.EventType() != schemas.TypeBatchPublished {
			t.Fatalf("%s ended with %s: %+v", b.batch, ev.EventType(), ev)
		}
	}
	lookups := func() (hit, miss, allowed float64) {
		fams := scrape(t, base+"/metrics")
		return value(t, fams, "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "hit"}),
			value(t, fams, "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"}),
			value(t, fams, "lakewap_premerge_hooks_total", map[string]string{"outcome": "allow", "via": "audit"})
	}
	hit0, miss0, allowed0 := lookups()
	if code, out := e.ask(t, "revert", "-batch", "rv54-1", "-reason", "review 54", "-by", "test"); code != 0 {
		t.Fatalf("revert exited %d:\n%s", code, out)
	}
	got, err := e.Watcher.Await(ctx, "rv54-1", schemas.TypeBatchReverted)
	must(t, err)
	if rv := got.(schemas.BatchReverted); !rv.Audited {
		t.Fatalf("BatchReverted %+v; want audited", rv)
	}
	hit, miss, allowed := lookups()
	if allowed != allowed0+1 {
		t.Fatalf("hooks allowed by audit %v -> %v; want the hook run on the revert's merge", allowed0, allowed)
	}
	if miss != miss0 || hit != hit0+1 {
		t.Errorf("the hook's lookups on the revert's merge: hits %v -> %v, misses %v -> %v; want one hit (the revert's audit), no miss (a second audit)",
			hit0, hit, miss0, miss)
	}
}
