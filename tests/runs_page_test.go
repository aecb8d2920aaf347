package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/schemas"
)

// The daemon serves /runs: a published and an aborted batch are there,
// with their states and checks, as JSON for a client that asks for it.
func TestRunsPageOnTheDaemon(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	good := e.runBatch(t, "runs-good-1", harness.GoodBillingRows)
	bad := e.runBatch(t, "runs-bad-1", harness.BadBillingRows)
	if good.EventType() != schemas.TypeBatchPublished || bad.EventType() != schemas.TypeBatchAborted {
		t.Fatalf("outcomes %s and %s", good.EventType(), bad.EventType())
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.d.HTTPAddr()+"/runs?dataset=billing", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var pg status.Page
	if err := json.NewDecoder(resp.Body).Decode(&pg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/runs: %d %v", resp.StatusCode, err)
	}
	states := map[string]string{}
	failed := map[string][]string{}
	for _, r := range pg.Runs {
		states[r.BatchID] = r.State
		for _, c := range r.Checks {
			if c.Status == schemas.StatusFail {
				failed[r.BatchID] = append(failed[r.BatchID], c.Name)
			}
		}
		if len(r.Checks) > 0 && r.Checks[0].SampleRows != nil {
			t.Errorf("%s: sample rows shown without http.runs_samples", r.BatchID)
		}
	}
	if states["runs-good-1"] != "published" || states["runs-bad-1"] != "aborted" ||
		strings.Join(failed["runs-bad-1"], ",") != "billing_id_not_null" || len(failed["runs-good-1"]) != 0 {
		t.Errorf("/runs says states %v, failed checks %v", states, failed)
	}
}
