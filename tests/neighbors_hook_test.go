package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/schemas"
)

// TestNeighborAlreadyFailingWithTheHook: with lakewap's pre-merge action
// on main, which already fails orders' check (an order of customer 999,
// committed by hand), the runner and the hook judge alike. A customers
// batch publishes (orders' check warn), where before its own hook refused
// its merge (the hook blocked any failing check) until the retry budget ran
// out; a person's merge that does not make the check worse is allowed; one
// that orphans another order is refused.
func TestNeighborAlreadyFailingWithTheHook(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-r20")
	e := startE2E(t, func(c *config.Config) {
		shopConfig(c)
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "hook-secret-r20"
		c.Runner.RetryBudget = config.Duration(20 * time.Second)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("c1-%d", run))
	publishedOK(t, "the first customers batch", e.runShop(t, ctx, c1, customerRows(span(1, 10)...)))
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	must(t, e.WriteParquet(ctx, "main", ordersFile("by-hand"), orderRows(1, 3, 999)))
	_, err := e.Lake.Commit(ctx, "lake", "main", "by hand: an order of customer 999", nil)
	must(t, err)

	c2 := customersBatch(fmt.Sprintf("c2-%d", run))
	p := publishedOK(t, "a customers batch while orders already fails on main", e.runShop(t, ctx, c2, customerRows(11, 12)))
	if c := check(&p.Report, ordersCheck); c.Status != schemas.StatusWarn || !strings.Contains(c.Message, "already") {
		t.Errorf("orders' check in the customers batch's report: %+v; want warn, saying it failed already", c)
	}

	// A person's merges: adding customer 13 leaves the one orphan; removing
	// customer 3 (whose order main holds) makes two.
	for _, m := range []struct {
		branch, query, remove string
		refused               bool
	}{
		{"add-13", customerRows(13), "", false},
		{"drop-3", customerRows(span(1, 10, 3)...), customersFile(c1.id), true},
	} {
		_, err := e.Lake.EnsureBranch(ctx, "lake", m.branch, "main")
		must(t, err)
		if m.remove != "" {
			del, err := e.lakeFSAPI(t).DeleteObjectWithResponse(ctx, "lake", m.branch, &apigen.DeleteObjectParams{Path: m.remove})
			must(t, err)
			if del.StatusCode() != http.StatusNoContent {
				t.Fatalf("delete %s on %s: %d %s", m.remove, m.branch, del.StatusCode(), del.Body)
			}
		}
		must(t, e.WriteParquet(ctx, m.branch, customersFile("by-hand-"+m.branch), m.query))
		_, err = e.Lake.Commit(ctx, "lake", m.branch, "by hand: "+m.branch, nil)
		must(t, err)
		before, err := e.Lake.Head(ctx, "lake", "main")
		must(t, err)
		_, err = e.Lake.Merge(ctx, "lake", m.branch, "main", "merge by hand: "+m.branch, nil)
		if got := status412(err); got != m.refused || (!m.refused && err != nil) {
			t.Errorf("merge of %s: %v; want refused %v", m.branch, err, m.refused)
		}
		if after, err := e.Lake.Head(ctx, "lake", "main"); m.refused && (err != nil || after != before) {
			t.Errorf("main moved from %s to %s on a refused merge (err %v)", before, after, err)
		}
	}
}

// TestAuditCommandJudgesTheNeighbors: lakewap audit of a customers branch
// that removes a customer main's orders reference fails, by orders' check,
// as the runner would abort the batch; one adding a customer passes with
// orders' check in its report. Before, the command ran customers' suite
// alone and passed both.
func TestAuditCommandJudgesTheNeighbors(t *testing.T) {
	e := startE2E(t, shopConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("c1-%d", run))
	publishedOK(t, "the customers batch", e.runShop(t, ctx, c1, customerRows(span(1, 10)...)))
	publishedOK(t, "the orders batch", e.runShop(t, ctx, ordersBatch(fmt.Sprintf("o1-%d", run)), orderRows(1, span(1, 10)...)))
	for _, b := range []struct {
		branch, query, remove string
		code                  int
		status                string
	}{
		{"drop-10", customerRows(span(1, 9)...), customersFile(c1.id), 1, "FAIL"},
		{"add-11", customerRows(11), "", 0, "PASS"},
	} {
		_, err := e.Lake.EnsureBranch(ctx, "lake", b.branch, "main")
		must(t, err)
		if b.remove != "" {
			del, err := e.lakeFSAPI(t).DeleteObjectWithResponse(ctx, "lake", b.branch, &apigen.DeleteObjectParams{Path: b.remove})
			must(t, err)
			if del.StatusCode() != http.StatusNoContent {
				t.Fatalf("delete %s: %d", b.remove, del.StatusCode())
			}
		}
		must(t, e.WriteParquet(ctx, b.branch, customersFile(b.branch), b.query))
		_, err = e.Lake.Commit(ctx, "lake", b.branch, b.branch, nil)
		must(t, err)
		code, out, errOut := runCLI(t, "audit", "-config", writeAuditConfig(t, e, e.cfg.LakeFS.Endpoint), "-dataset", "customers", "-ref", b.branch)
		if code != b.code || !containsLine(out, ordersCheck, b.status) {
			t.Errorf("lakewap audit of %s: exit %d, want %d with %s %s\n%s%s", b.branch, code, b.code, ordersCheck, b.status, out, errOut)
		}
	}
}
