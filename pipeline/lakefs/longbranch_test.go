package lakefs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// TestBranchListingLeavesOutNamesLongerThanLakewapMakes: lakeFS itself
// bounds no branch name (`^\w[-\w]*$`; its key-value store may: about
// 2.7 KB on PostgreSQL, 1 KiB on DynamoDB, none on its local store), and
// anyone with a writer's key can make `wap-` branches of such names. The
// janitor lists every `wap-` branch whole, up to audit.max_list_objects
// (1,000,000) of them, a page of 1,000 read whole up to 64 MiB: a million
// names of 2.7 KB made each sweep of the daemon hold 2.7 GB, 20,000 of
// 60 KiB on the local store 1.2 GB. No branch lakewap makes
// has a name over schemas.MaxLakewapBranchNameLen bytes: the listing leaves the
// longer ones out as it reads each page, so what it holds is bounded by the
// entries' count, not by what a writer names them.
func TestBranchListingLeavesOutNamesLongerThanLakewapMakes(t *testing.T) {
	const long = 200
	var refs []map[string]string
	for i := range long {
		refs = append(refs, map[string]string{"id": fmt.Sprintf("wap-%04d-", i) + strings.Repeat("x", 32<<10), "commit_id": strings.Repeat("a", 64)})
	}
	ours := schemas.BranchName("billing", strings.Repeat("b", 200)) // the longest lakewap makes
	refs = append(refs, map[string]string{"id": ours, "commit_id": strings.Repeat("c", 64)})
	body, err := json.Marshal(map[string]any{"results": refs, "pagination": map[string]any{"has_more": false, "next_offset": "", "results": len(refs), "max_per_page": 1000}})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := newFake(t, map[string]answer{"GET /api/v1/repositories/lake/branches": {200, string(body)}})
	bs, err := cl.ListBranches(context.Background(), "lake", "wap-")
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, b := range bs {
		held += len(b.Name)
	}
	if len(bs) != 1 || bs[0].Name != ours {
		t.Errorf("the listing holds %d branches, %d bytes of names; want %s alone (%d branches of 32 KiB names are no branches lakewap makes)",
			len(bs), held, ours, long)
	}
}

// TestBranchListingKeepsRevertScratchBranches: the janitor deletes a
// revert's scratch branch (the run's branch and "-revert-audit") a crash
// left behind, as a branch without a run; the scratch branch of a run whose
// branch name is the longest lakewap makes is longer than that name, and
// must still be listed, or it is never deleted.
func TestBranchListingKeepsRevertScratchBranches(t *testing.T) {
	longest := schemas.BranchName(strings.Repeat("d", 100), strings.Repeat("b", 200))
	scratch := longest + "-revert-audit"
	body, err := json.Marshal(map[string]any{"results": []map[string]string{{"id": longest, "commit_id": strings.Repeat("a", 64)},
		{"id": scratch, "commit_id": strings.Repeat("c", 64)}},
		"pagination": map[string]any{"has_more": false, "next_offset": "", "results": 2, "max_per_page": 1000}})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := newFake(t, map[string]answer{"GET /api/v1/repositories/lake/branches": {200, string(body)}})
	bs, err := cl.ListBranches(context.Background(), "lake", "wap-")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[1].Name != scratch {
		t.Errorf("the listing holds %v; want %s and its revert's scratch branch %s", bs, longest, scratch)
	}
}

// TestBranchListingHoldsNoLongCommitIDs: a branch's head is any commit
// its writer points it at, and lakeFS's createCommitRecord takes the id
// from its caller, a writer (how long an id the real server keeps is not
// checked here). The listing kept each branch's head
// id whole: 200 branches named as lakewap names them, at heads of 32 KiB
// ids, held 6.5 MB (a million, gigabytes). An id longer than
// pipeline.MaxCommitIDBytes is no commit lakewap reads: it is kept empty,
// so the janitor reports the branch's head unreadable and keeps it.
func TestBranchListingHoldsNoLongCommitIDs(t *testing.T) {
	var refs []map[string]string
	for i := range 200 {
		refs = append(refs, map[string]string{"id": fmt.Sprintf("wap-billing-b%04d", i), "commit_id": strings.Repeat("a", 32<<10)})
	}
	body, err := json.Marshal(map[string]any{"results": refs, "pagination": map[string]any{"has_more": false, "next_offset": "", "results": len(refs), "max_per_page": 1000}})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := newFake(t, map[string]answer{"GET /api/v1/repositories/lake/branches": {200, string(body)}})
	bs, err := cl.ListBranches(context.Background(), "lake", "wap-")
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, b := range bs {
		held += len(b.CommitID)
	}
	if len(bs) != 200 || held > 200*pipeline.MaxCommitIDBytes {
		t.Errorf("the listing holds %d branches, %d bytes of head ids; want the 200 branches, at most %d bytes", len(bs), held, 200*pipeline.MaxCommitIDBytes)
	}
}
