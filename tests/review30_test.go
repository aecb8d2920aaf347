package tests

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"
	"github.com/treeverse/lakefs/pkg/ident"

	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Review 30: adversarial probes of the seal chain (SealedOn) on the real
// lakeFS server.

// TestReview30CollidingBytesStagedBetweenTwoSealsAreRefused: lakeFS's
// commit of staged changes keeps the committed entry of the same identity,
// so a seal alone cannot relink a path; two seals can. The writer stages a
// delete of another dataset's manifest with its batch; lakewap seals it
// and stops before the diff (a restart); the writer stages the manifest
// again with colliding bytes (same MD5, same size); the restarted audit
// step seals on the stopped step's seal. Each commit of that chain is a
// one-parent seal of the batch by lakewap's user (SealedOn), yet the
// second relinks the manifest: the diff from the branch point names
// nothing outside the tables, no address was compared, and merging the
// seal put the writer's bytes on main. The batch must be aborted
// outside_tables naming the manifest, main keeping its bytes.
func TestReview30CollidingBytesStagedBetweenTwoSealsAreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)
	bodyA, bodyB := wangYuCollision()
	const manifest = "zzzz/ledger/manifest"
	repo := stack.Repository
	must(t, env.Lake.Upload(ctx, repo, "main", manifest, bytes.NewReader(bodyA)))
	_, err = env.Lake.Commit(ctx, repo, "main", "ledger's manifest", nil)
	must(t, err)

	first := startProc(t, stack, cfgPath, "during_audit")
	const batch = "review30-chain"
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBranchReady)
	must(t, err)
	if died {
		t.Fatal("the daemon died before the branch")
	}
	branch := ev.(schemas.BranchReady).Branch

	// The writer: its rows, and the manifest's delete, staged.
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	if resp, err := api.DeleteObjectWithResponse(ctx, repo, branch, &apigen.DeleteObjectParams{Path: manifest}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %v", manifest, err)
	}
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || !died || !first.killedBySIGKILL() {
		t.Fatalf("the daemon did not stop at during_audit (died %v, %v)", died, err)
	}
	// Sealed with the delete; the writer stages the colliding bytes.
	must(t, env.Lake.Upload(ctx, repo, branch, manifest, bytes.NewReader(bodyB)))
	startProc(t, stack, cfgPath, "")
	final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if ab, ok := final.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, manifest) {
		t.Errorf("the batch whose second seal relinks %s: %s %+v; want aborted %s naming it", manifest, final.EventType(), final, schemas.ReasonOutsideTables)
	}
	var onMain bytes.Buffer
	must(t, env.Lake.Download(ctx, repo, "main", manifest, &onMain))
	if !bytes.Equal(onMain.Bytes(), bodyA) {
		t.Errorf("main's %s holds the writer's colliding bytes", manifest)
	}
}

// TestReview30NarrowedAllowedPathsHoldAtThePublish: a batch is audited
// while its dataset allows zzzz/billing/, and writes a file there; the
// daemon restarts before the merge with zzzz/billing/ no longer allowed.
// The target did not move, so nothing but the suites digest (Run.Suites)
// could ask for a recheck, and the digest named the suites and the
// engine's settings, not the paths the tables-only rule allows: the batch
// was merged with the file the config in force refuses. A batch audited
// under another rule than the one in force is rechecked before its merge,
// as under other suites: aborted outside_tables naming the file.
func TestReview30NarrowedAllowedPathsHoldAtThePublish(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon as a process; skipped with -short")
	}
	stack, env, narrow := procStack(t, "5m")
	b, err := os.ReadFile(narrow)
	must(t, err)
	const allowed = "zzzz/billing/"
	wide := filepath.Join(t.TempDir(), "lakewap.yaml")
	y := strings.Replace(string(b), "    write_timeout: 5m\n", "    write_timeout: 5m\n    allowed_paths: ["+allowed+"]\n", 1)
	if y == string(b) {
		t.Fatal("the crash config has no write_timeout line to add allowed_paths after")
	}
	must(t, os.WriteFile(wide, []byte(y), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	first := startProc(t, stack, wide, "before_merge")
	const batch = "review30-allowed"
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBranchReady)
	must(t, err)
	if died {
		t.Fatal("the daemon died before the branch")
	}
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	marker := allowed + batch + ".json"
	must(t, env.Lake.Upload(ctx, stack.Repository, branch, marker, strings.NewReader("{}\n")))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || !died || !first.killedBySIGKILL() {
		t.Fatalf("the daemon did not stop at before_merge (died %v, %v)", died, err)
	}
	startProc(t, stack, narrow, "")
	final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if ab, ok := final.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, marker) {
		t.Errorf("the batch whose %s the config in force no longer allows: %s %+v; want aborted %s naming it", marker, final.EventType(), final, schemas.ReasonOutsideTables)
	}
	var onMain bytes.Buffer
	if err := env.Lake.Download(ctx, stack.Repository, "main", marker, &onMain); err == nil {
		t.Errorf("main holds %s", marker)
	}
}

// TestReview30ForgedSealRecordIsNotTakenForLakewaps: lakeFS's
// createCommitRecord (fs:CreateCommit on the repository, which the
// simplified ACL's Writers hold) writes a commit with any committer,
// parents, metadata and metarange, its id the content address the writer
// computes; a hard reset (fs:RevertBranch) puts it under the batch's
// branch. The writer builds, on a side branch, a metarange holding another
// dataset's manifest at colliding bytes (delete, commit, upload the
// Wang-Yu collision, commit: same MD5, same size, so no diff names it),
// records a commit of it with lakewap's committer, the batch's
// wap.sealed_batch_id and the branch point as its one parent, resets its
// batch branch to it and writes its rows. lakewap's seal then sits on that
// record; taken for a seal of lakewap's (by committer and metadata), the
// audit compared nothing by address and the batch was published with
// main's manifest at the writer's bytes, with no restart at all. Only the
// seals the run recorded (Run.Seals) make a chain: the batch is aborted
// outside_tables naming the manifest, main keeping its bytes.
func TestReview30ForgedSealRecordIsNotTakenForLakewaps(t *testing.T) {
	e := startE2E(t, nil)
	api := e.lakeFSAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bodyA, bodyB := wangYuCollision()
	const repo, manifest, batch = "lake", "zzzz/ledger/manifest", "review30-forged"
	must(t, e.Lake.Upload(ctx, repo, "main", manifest, bytes.NewReader(bodyA)))
	ledger, err := e.Lake.Commit(ctx, repo, "main", "ledger's manifest", nil)
	must(t, err)
	// lakewap commits with the stack's admin credentials, as the writer
	// does here: its seals' committer is the one on this commit.
	mainCommit, err := e.Lake.GetCommit(ctx, repo, ledger)
	must(t, err)

	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	from, err := e.Lake.Head(ctx, repo, branch)
	must(t, err)

	// The side branch: the manifest deleted, committed, and staged again
	// with the colliding bytes, committed.
	const side = "review30-side"
	if resp, err := api.CreateBranchWithResponse(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: side, Source: from}); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create %s: %v %v", side, err, resp)
	}
	if resp, err := api.DeleteObjectWithResponse(ctx, repo, side, &apigen.DeleteObjectParams{Path: manifest}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete %s: %v", manifest, err)
	}
	commitOn(t, ctx, api, side, "delete")
	must(t, e.Lake.Upload(ctx, repo, side, manifest, bytes.NewReader(bodyB)))
	commitOn(t, ctx, api, side, "again")
	sideHead, err := api.GetCommitWithResponse(ctx, repo, side)
	must(t, err)
	if sideHead.JSON200 == nil {
		t.Fatalf("get %s: HTTP %d", side, sideHead.StatusCode())
	}

	// The forged seal: lakewap's committer and seal metadata, the branch
	// point its one parent, the side branch's metarange.
	committer, message, metarange := mainCommit.Committer, "lakewap: seal "+batch, sideHead.JSON200.MetaRangeId
	created := time.Now().Unix()
	meta := map[string]string{pipeline.MetaSealedBatchID: batch}
	// Its id, as lakeFS's ref manager checks it (graveler.Commit.Identity
	// hex-encoded: version and generation are not in it).
	id := hex.EncodeToString(ident.NewAddressWriter().MarshalString("commit:v1").MarshalString(committer).
		MarshalString(message).MarshalString(metarange).MarshalInt64(created).MarshalStringMap(meta).
		MarshalIdentifiable(commitParents{from}).Identity())
	rec, err := api.CreateCommitRecordWithResponse(ctx, repo, apigen.CreateCommitRecordJSONRequestBody{
		CommitId: id, Committer: committer, Message: message, MetarangeId: metarange,
		CreationDate: created, Parents: []string{from}, Version: 1,
		Metadata: &apigen.CommitRecordCreation_Metadata{AdditionalProperties: meta},
	})
	must(t, err)
	if rec.StatusCode() != http.StatusNoContent {
		t.Fatalf("createCommitRecord: HTTP %d %s", rec.StatusCode(), rec.Body)
	}
	reset, err := api.HardResetBranchWithResponse(ctx, repo, branch, &apigen.HardResetBranchParams{Ref: id})
	must(t, err)
	if reset.StatusCode() != http.StatusNoContent {
		t.Fatalf("hard reset %s to %s: HTTP %d %s", branch, id, reset.StatusCode(), reset.Body)
	}

	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if ab, ok := final.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, manifest) {
		t.Errorf("the batch on a forged seal record relinking %s: %s %+v; want aborted %s naming it", manifest, final.EventType(), final, schemas.ReasonOutsideTables)
	}
	var onMain bytes.Buffer
	must(t, e.Lake.Download(ctx, repo, "main", manifest, &onMain))
	if !bytes.Equal(onMain.Bytes(), bodyA) {
		t.Errorf("main's %s holds the writer's colliding bytes", manifest)
	}
}

// commitParents is a commit's parents as lakeFS's content address of a
// commit takes them (ident.Identifiable).
type commitParents []string

func (p commitParents) Identity() []byte {
	return ident.NewAddressWriter().MarshalStringSlice(p).Identity()
}

// wangYuCollision is Wang and Yu's MD5 collision (published test vectors),
// with a common suffix: two bodies of the same MD5 and size.
func wangYuCollision() (a, b []byte) {
	x, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
	y, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")
	return append(x, []byte("\nledger manifest\n")...), append(y, []byte("\nledger manifest\n")...)
}
