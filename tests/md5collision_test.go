package tests

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// TestCollidingBytesMergedIntoABatchBranchAreRefused: lakeFS's checksum of
// an ordinary upload is the MD5 of its bytes, and MD5 collisions are
// public, so a writer needs no linkPhysicalAddress to hold other bytes at
// a path under the same claimed checksum and size. Staged on its batch's
// branch, they would not reach the seal (lakeFS keeps the committed entry
// of the same identity); brought in by its own commits (a side branch
// that deletes the path and adds it again, merged into the batch's branch)
// they do, no diff names the path, and merging the seal publishes them.
// Here another dataset's manifest on main (zzzz/ledger/manifest, outside
// billing's tables and allowed paths) is replaced so; before, billing's
// batch was published and main held the writer's bytes. It must be aborted
// outside_tables naming the path, main keeping its manifest.
func TestCollidingBytesMergedIntoABatchBranchAreRefused(t *testing.T) {
	e := startE2E(t, func(*config.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Wang and Yu's MD5 collision (published test vectors), with a common suffix.
	a, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
	b, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")
	bodyA := append(a, []byte("\nledger manifest\n")...)
	bodyB := append(b, []byte("\nledger manifest\n")...)
	const manifest = "zzzz/ledger/manifest"
	must(t, e.Lake.Upload(ctx, "lake", "main", manifest, bytes.NewReader(bodyA)))
	_, err := e.Lake.Commit(ctx, "lake", "main", "ledger's manifest", nil)
	must(t, err)

	id := fmt.Sprintf("md5-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	branch := schemas.BranchName("billing", id)

	// The writer's side branch: delete the manifest, commit, add it again
	// with the colliding bytes, commit; then merge it into the batch's branch.
	side := "side-" + id
	_, err = e.Lake.EnsureBranch(ctx, "lake", side, branch)
	must(t, err)
	api := e.lakeFSAPI(t)
	if resp, err := api.DeleteObjectWithResponse(ctx, "lake", side, &apigen.DeleteObjectParams{Path: manifest}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %v", manifest, err)
	}
	_, err = e.Lake.Commit(ctx, "lake", side, "delete", nil)
	must(t, err)
	must(t, e.Lake.Upload(ctx, "lake", side, manifest, bytes.NewReader(bodyB)))
	_, err = e.Lake.Commit(ctx, "lake", side, "again", nil)
	must(t, err)
	m, err := api.MergeIntoBranchWithResponse(ctx, "lake", side, branch, apigen.MergeIntoBranchJSONRequestBody{})
	must(t, err)
	if m.StatusCode() != http.StatusOK {
		t.Fatalf("merge %s into %s: %d %s", side, branch, m.StatusCode(), m.Body)
	}
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(900000, 0, 3, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, manifest) {
		t.Errorf("the batch carrying colliding bytes at %s: %s %+v; want aborted %s naming it", manifest, ev.EventType(), ev, schemas.ReasonOutsideTables)
	}
	var onMain bytes.Buffer
	must(t, e.Lake.Download(ctx, "lake", "main", manifest, &onMain))
	if !bytes.Equal(onMain.Bytes(), bodyA) {
		t.Errorf("main's %s holds the writer's colliding bytes", manifest)
	}
}

// TestAnotherPublishRelinkingAFileDoesNotAbortAWritersCommittedBatch: a
// writer that commits on its batch's branch makes the audit compare the
// seal with the target by address, outside the batch's tables. Compared
// with the target's head, a file of another dataset that the target came
// to hold at another address under the same bytes since the branch point
// (a delete and an add of the same bytes in two commits, merged: lakeFS
// gives the new upload its own address) was named as the batch's relink,
// and the honest batch was aborted outside_tables. The batch did not touch
// it: only what the seal holds at another address than the merge-base of
// the seal and the target can be the branch's own relink.
func TestAnotherPublishRelinkingAFileDoesNotAbortAWritersCommittedBatch(t *testing.T) {
	e := startE2E(t, func(*config.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const marker = "zzzz/ledger/_SUCCESS"
	body := []byte("ledger done\n")
	must(t, e.Lake.Upload(ctx, "lake", "main", marker, bytes.NewReader(body)))
	_, err := e.Lake.Commit(ctx, "lake", "main", "ledger's marker", nil)
	must(t, err)
	api := e.lakeFSAPI(t)
	address := func(ref string) string {
		st, err := api.StatObjectWithResponse(ctx, "lake", ref, &apigen.StatObjectParams{Path: marker})
		must(t, err)
		if st.JSON200 == nil {
			t.Fatalf("stat %s on %s: %d", marker, ref, st.StatusCode())
		}
		return st.JSON200.PhysicalAddress
	}
	before := address("main")

	id := fmt.Sprintf("relinked-honest-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	branch := schemas.BranchName("billing", id)
	// The writer writes its rows and commits them on its own branch.
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(910000, 0, 3, "BIGINT")))
	_, err = e.Lake.Commit(ctx, "lake", branch, "the writer's own commit", nil)
	must(t, err)

	// Meanwhile the ledger's job writes its marker again with the same
	// bytes, in two commits, and it reaches main.
	side := "ledger-" + id
	_, err = e.Lake.EnsureBranch(ctx, "lake", side, "main")
	must(t, err)
	if resp, err := api.DeleteObjectWithResponse(ctx, "lake", side, &apigen.DeleteObjectParams{Path: marker}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %v", marker, err)
	}
	_, err = e.Lake.Commit(ctx, "lake", side, "clear", nil)
	must(t, err)
	must(t, e.Lake.Upload(ctx, "lake", side, marker, bytes.NewReader(body)))
	_, err = e.Lake.Commit(ctx, "lake", side, "done", nil)
	must(t, err)
	m, err := api.MergeIntoBranchWithResponse(ctx, "lake", side, "main", apigen.MergeIntoBranchJSONRequestBody{})
	must(t, err)
	if m.StatusCode() != http.StatusOK {
		t.Fatalf("merge %s into main: %d %s", side, m.StatusCode(), m.Body)
	}
	if after := address("main"); after == before {
		t.Fatalf("main's %s kept its address %s: the test needs it moved", marker, after)
	}

	if ev := completeBatch(t, ctx, e.Env, id); ev.EventType() != schemas.TypeBatchPublished {
		t.Errorf("an honest batch whose writer committed on its branch: %s %+v; want published", ev.EventType(), ev)
	}
}
