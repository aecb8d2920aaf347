package tests

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/schemas"
)

// TestBatchWithAnEntryPastItsLimitIsNotPublished, through the daemon on
// the real lakeFS server: the batch's writer links its data file claiming
// a checksum of 4 KiB (lakeFS takes it; no block adapter makes one over
// tens of bytes). The batch's listings refuse the entry rather than leave
// the file out of the audit: the batch ends without publishing, its
// report naming the path and the limit, and main does not hold the file.
// Before, the batch was published, and every listing of the table held
// the 4 KiB checksum from then on.
func TestBatchWithAnEntryPastItsLimitIsNotPublished(t *testing.T) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{}, func(s *devstack.Stack, cfg *config.Config) {
		stack = s
		ds := cfg.Datasets["billing"]
		ds.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/billing_fact/", Format: "csv"}}
		cfg.Datasets["billing"] = ds
	}, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)

	id := "long-1"
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	p := "gold/billing_fact/batch=" + id + "/part-0.csv"
	content := claimedCSV(4096, 1)
	no := false
	loc, err := api.GetPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.GetPhysicalAddressParams{Path: p, Presign: &no})
	must(t, err)
	if loc.JSON200 == nil || loc.JSON200.PhysicalAddress == nil {
		t.Fatalf("get physical address: %d %s", loc.StatusCode(), loc.Body)
	}
	full := *loc.JSON200.PhysicalAddress
	file := strings.TrimPrefix(full, "local://")
	must(t, os.MkdirAll(filepath.Dir(file), 0o755))
	must(t, os.WriteFile(file, []byte(content), 0o644))
	i := strings.Index(full, "/lake/data/")
	if i < 0 {
		t.Fatalf("the address lakeFS gave: %s", full)
	}
	addr := "local://lake/" + full[i+len("/lake/"):]
	link, err := api.LinkPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.LinkPhysicalAddressParams{Path: p},
		apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: &addr}, Checksum: strings.Repeat("f", 4096), SizeBytes: int64(len(content))})
	must(t, err)
	if link.StatusCode() != http.StatusOK {
		t.Fatalf("link physical address: %d %s", link.StatusCode(), link.Body)
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
		Paths: []string{p}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if final.EventType() == schemas.TypeBatchPublished {
		t.Fatalf("the batch with a 4 KiB checksum at %s was published: %+v", p, final)
	}
	ab, ok := final.(schemas.BatchAborted)
	named := false
	if ok && ab.Report != nil {
		for _, c := range ab.Report.Failed() {
			t.Logf("%s %s: %.400s", c.Name, c.Status, c.Message)
			named = named || (strings.Contains(c.Message, p) && strings.Contains(c.Message, "256"))
		}
	}
	if !named {
		t.Errorf("the batch ended %s %+v; want a failed check naming %s and the limit of 256 bytes", final.EventType(), final, p)
	}
	onMain, err := e.Lake.List(ctx, "lake", "main", "gold/billing_fact/batch="+id)
	must(t, err)
	if len(onMain) != 0 {
		t.Errorf("main holds %+v", onMain)
	}
}
