package auditsource

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestWritersLongEntriesAreRefusedNotLeftOut, on the real lakeFS server.
// lakeFS's API refuses a path over 1,024 bytes (its own maxLength, an
// object key's); it takes a checksum of any length claimed by linking
// (linkPhysicalAddress). The listings held such checksums whole (a
// listing of 1,000 pages of 1,000 of them was gigabytes); leaving the
// file out of the audit would publish it unaudited. The table's listing
// and the audit are refused, naming the path and the limit.
func TestWritersLongEntriesAreRefusedNotLeftOut(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	mainHead, _, _ := s.batchOne(t)
	if _, err := s.lake.EnsureBranch(ctx, "lake", "long", "main"); err != nil {
		t.Fatal(err)
	}
	long := relinkPrefix + "batch=2/" + strings.Repeat("n", 4096) + ".csv"
	err := s.lake.Upload(ctx, "lake", "long", long, strings.NewReader(relinkBad))
	var le *lakefs.Error
	if !errors.As(err, &le) || le.Status != http.StatusBadRequest || !strings.Contains(le.Message, "1024") {
		t.Errorf("upload at a 4 KiB path: %.300v; want lakeFS's 400 naming its maximum of 1024 (why lakefs.MaxPathBytes is 1,024)", err)
	}

	p := relinkPrefix + "batch=3/part-0.csv"
	s.relink(t, "long", p, relinkBad, strings.Repeat("f", 4096), int64(len(relinkBad)))
	sealed := s.commit(t, "long", "batch 3")
	objs, err := s.src.List(ctx, "lake", sealed, relinkPrefix)
	if !errors.Is(err, lakefs.ErrEntryOverLimit) || !errors.Is(err, audit.ErrOverBudget) ||
		!strings.Contains(err.Error(), "checksum of \""+p) || !strings.Contains(err.Error(), "256") {
		t.Errorf("the table's listing: %d objects, err %v; want it refused naming the checksum of %s and 256", len(objs), err, p)
	}
	rep, err := newRelinkEngine(t, s.src).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: mainHead})
	if err == nil && rep.Passed {
		t.Errorf("the audit of a table holding a 4 KiB checksum passed: %s", notNullStatus(rep))
	}

	// An address no block adapter makes: lakeFS takes a linked address
	// within the repository's storage namespace.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "addr", "main"); err != nil {
		t.Fatal(err)
	}
	addr := "local://lake/data/" + strings.Repeat("a", 4096)
	link, err := s.api.LinkPhysicalAddressWithResponse(ctx, "lake", "addr", &apigen.LinkPhysicalAddressParams{Path: p},
		apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: &addr}, Checksum: "abc", SizeBytes: 3})
	if err != nil || link.StatusCode() != http.StatusOK {
		t.Logf("lakeFS refused a linked address of 4 KiB: %v HTTP %d %.300s", err, link.StatusCode(), link.Body)
		return
	}
	sealed = s.commit(t, "addr", "batch 4")
	objs, err = s.src.List(ctx, "lake", sealed, relinkPrefix)
	if !errors.Is(err, lakefs.ErrEntryOverLimit) || !strings.Contains(err.Error(), "physical address") {
		t.Errorf("the table's listing: %d objects, err %v; want it refused naming the physical address", len(objs), err)
	}
}
