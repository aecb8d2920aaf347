package tests

import (
	"context"
	"fmt"
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

// claimedCSV is a CSV of passing rows of exactly n bytes, billing ids from
// firstID. lakeFS's getObject copies the stored bytes in 32 KiB writes
// under a Content-Length of the claimed size: a claimed size that ends a
// write is served whole, any other makes the download end early.
func claimedCSV(n int, firstID int) string {
	var b strings.Builder
	b.WriteString("billing_id,customer_id,amount_cents,currency,note\n")
	for i := firstID; b.Len() < n-150; i++ {
		fmt.Fprintf(&b, "%d,%d,%d,EUR,%s\n", i, 10+i, 100*i, strings.Repeat("x", 40))
	}
	last := fmt.Sprintf("%d,1,1,EUR,\n", firstID+900_000)
	b.WriteString(last[:len(last)-1] + strings.Repeat("y", n-b.Len()-len(last)) + "\n")
	return b.String()
}

// TestStagedObjectClaimingAPrefixIsRefused performs the size attack on
// the real lakeFS server: a writer uploads a CSV whose first rows pass and
// whose last row has no billing_id, then stages the same physical address
// at the same path claiming only the size of the passing rows. lakeFS
// serves the claimed prefix through its API, so the audit reads only good
// rows; presigned and direct readers of the blockstore read the whole
// object, NULL included. With audit.blockstore set (lakeFS's local
// blockstore), the batch must be aborted by the check stored_sizes, naming
// the path, the claimed size and the stored size, and main must not get it.
func TestStagedObjectClaimingAPrefixIsRefused(t *testing.T) {
	var stack *devstack.Stack
	e := startE2EOn(t, devstack.Options{}, func(s *devstack.Stack, cfg *config.Config) {
		stack = s
		ds := cfg.Datasets["billing"]
		ds.Suite.Tables = []audit.Table{{Name: "billing_fact", Path: "gold/billing_fact/", Format: "csv"}}
		cfg.Datasets["billing"] = ds
		cfg.Audit.Blockstore = &config.Blockstore{Type: "local", Path: s.BlockstorePath}
	}, daemon.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)

	// An ordinary upload is stored with the size lakeFS lists: published.
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "good-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, "good-1", schemas.TypeBranchReady)
	must(t, err)
	goodPath := "gold/billing_fact/batch=good-1/part-0.csv"
	must(t, e.Lake.Upload(ctx, "lake", ev.(schemas.BranchReady).Branch, goodPath, strings.NewReader(claimedCSV(1000, 1_000_000))))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "good-1", Dataset: "billing", Write: "billing_fact",
		Paths: []string{goodPath}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if final, err := e.Watcher.Await(ctx, "good-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("an uploaded batch with audit.blockstore set: %v %+v", err, final)
	}

	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "prefix-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err = e.Watcher.Await(ctx, "prefix-1", schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=prefix-1/part-0.csv"
	good := claimedCSV(32<<10, 1)
	whole := good + ",12,300,EUR,\n" // a NULL billing_id, past the claimed size
	// The writer asks lakeFS where to put the object, puts the whole
	// object there (on S3, through the presigned upload URL; here, into
	// lakeFS's local blockstore) and links it claiming the good rows' size.
	no := false
	loc, err := api.GetPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.GetPhysicalAddressParams{Path: path, Presign: &no})
	must(t, err)
	if loc.JSON200 == nil || loc.JSON200.PhysicalAddress == nil {
		t.Fatalf("get physical address: %d %s", loc.StatusCode(), loc.Body)
	}
	full := *loc.JSON200.PhysicalAddress
	i := strings.Index(full, "/lake/data/")
	if i < 0 || !strings.HasPrefix(full, "local://"+stack.BlockstorePath+"/") {
		t.Fatalf("the address lakeFS gave: %s", full)
	}
	file := strings.TrimPrefix(full, "local://")
	must(t, os.MkdirAll(filepath.Dir(file), 0o755))
	must(t, os.WriteFile(file, []byte(whole), 0o644))
	// As the storage namespace names it (local://lake/data/...), lakeFS
	// takes the address as its own and keeps it relative.
	addr := "local://lake/" + full[i+len("/lake/"):]
	link, err := api.LinkPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.LinkPhysicalAddressParams{Path: path},
		apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: &addr}, Checksum: "0123456789abcdef", SizeBytes: int64(len(good))})
	must(t, err)
	if link.StatusCode() != http.StatusOK {
		t.Fatalf("link physical address: %d %s", link.StatusCode(), link.Body)
	}
	staged, err := e.Lake.List(ctx, "lake", branch, path)
	must(t, err)
	if len(staged) != 1 || staged[0].PhysicalAddress != full || staged[0].Size != int64(len(good)) {
		t.Fatalf("the linked object: %+v, want %s claiming %d bytes", staged, full, len(good))
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "prefix-1", Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "prefix-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("the batch of an object claiming a prefix ended %s %+v, want aborted by its audit", final.EventType(), final)
	}
	want := fmt.Sprintf("%s (claimed %d bytes, stored %d)", path, len(good), len(whole))
	var named bool
	for _, c := range ab.Report.Failed() {
		named = named || (c.Kind == "stored_sizes" && strings.Contains(c.Observed, want))
	}
	if !named {
		t.Errorf("no failed stored_sizes check saying %q: %+v", want, ab.Report.Failed())
	}
	objs, err := e.Lake.List(ctx, "lake", "main", "gold/billing_fact/batch=prefix-1/")
	must(t, err)
	if len(objs) != 0 {
		t.Errorf("main has the staged object: %+v", objs)
	}
}
