package auditsource

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
)

// The two 128-byte messages of Wang and Yu's MD5 collision (Eurocrypt
// 2005), published test vectors: they differ in six bytes and have the same
// MD5. MD5 is iterated, so the same bytes appended to both keep the
// collision.
const (
	md5CollisionA = "d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70"
	md5CollisionB = "d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70"
)

// TestMD5CollisionRelinksAPathOutsideTheTablesThroughAWritersCommits pins
// down, on the real lakeFS server, why an object's identity outside the
// tables (its claimed checksum and size: lakeFS's identity is those with
// user metadata and content type) is not its bytes even for a writer denied
// linkPhysicalAddress and stageObject. lakeFS's checksum of an ordinary
// upload is the MD5 of its bytes, and MD5 collisions are public (and made
// in seconds): two uploads of different bytes get the same checksum and
// size. Then:
//
//   - staged on the batch's branch alone, the other bytes never reach the
//     seal: lakeFS's commit keeps the parent's entry for a staged one of the
//     same identity;
//   - brought in by a writer's own commits (a side branch that deletes the
//     path, commits, uploads the other bytes and commits, merged into the
//     batch's branch before the seal), they do: the seal's diff against the
//     foundation does not name the path (the tables-only rule cannot see
//     it), and merging the seal puts the other bytes on main, at a path no
//     audit reads (here another dataset's published manifest).
//
// docs/trust-model.md states this limit and what closes it (writers
// without fs:CreateCommit on batch branches). If this test fails, lakeFS
// changed and that statement must be looked at again.
func TestMD5CollisionRelinksAPathOutsideTheTablesThroughAWritersCommits(t *testing.T) {
	ctx := context.Background()
	a, _ := hex.DecodeString(md5CollisionA)
	b, _ := hex.DecodeString(md5CollisionB)
	suffix := []byte("\nledger manifest v1\n")
	bodyA, bodyB := append(append([]byte{}, a...), suffix...), append(append([]byte{}, b...), suffix...)
	if bytes.Equal(bodyA, bodyB) || md5.Sum(bodyA) != md5.Sum(bodyB) {
		t.Fatal("the test vectors do not collide")
	}
	s := startRelinkStack(t)
	const manifest = "zz/ledger/manifest"
	up := func(branch, p string, body []byte) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(ref, p string) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := s.lake.Download(ctx, "lake", ref, p, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	up("main", relinkPrefix+"a.csv", []byte("id,x\n1,a\n"))
	up("main", manifest, bodyA)
	up("main", "scratch/b", bodyB)
	foundation := s.commit(t, "main", "foundation: ledger's manifest")
	objs, err := s.src.List(ctx, "lake", foundation, "")
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][2]any{}
	for _, o := range objs {
		byPath[o.Path] = [2]any{o.Checksum, o.Size}
	}
	if byPath[manifest] != byPath["scratch/b"] {
		t.Fatalf("lakeFS's checksum and size of the two uploads differ (%v, %v): its checksum is no longer the MD5 of the bytes", byPath[manifest], byPath["scratch/b"])
	}

	// Staged alone on a batch's branch, the other bytes are dropped by the seal.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "k0", foundation); err != nil {
		t.Fatal(err)
	}
	up("k0", relinkPrefix+"b.csv", []byte("id,x\n2,b\n"))
	up("k0", manifest, bodyB)
	seal0 := s.commit(t, "k0", "seal")
	if !bytes.Equal(read(seal0, manifest), bodyA) {
		t.Errorf("a staged upload of colliding bytes reached the seal: lakeFS's commit no longer keeps the parent's entry of the same identity")
	}

	// Brought in by a writer's commits, they are in no diff and reach main.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "x", foundation); err != nil {
		t.Fatal(err)
	}
	if resp, err := s.api.DeleteObjectWithResponse(ctx, "lake", "x", &apigen.DeleteObjectParams{Path: manifest}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v", err)
	}
	s.commit(t, "x", "delete the manifest")
	up("x", manifest, bodyB)
	x := s.commit(t, "x", "the manifest again, other bytes")
	if _, err := s.lake.EnsureBranch(ctx, "lake", "k", foundation); err != nil {
		t.Fatal(err)
	}
	if _, err := s.lake.Merge(ctx, "lake", x, "k", "the writer merges its side branch", nil); err != nil {
		t.Fatal(err)
	}
	up("k", relinkPrefix+"c.csv", []byte("id,x\n3,c\n"))
	seal := s.commit(t, "k", "seal")
	changes, err := s.lake.Changes(ctx, "lake", foundation, seal)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, relinkPrefix) {
			t.Errorf("the seal's diff names %s outside the table: lakeFS's diff now sees the relink", c.Path)
		}
	}
	m, err := s.lake.Merge(ctx, "lake", seal, "main", "publish", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(m, manifest), bodyB) {
		t.Errorf("main's %s is not the writer's bytes after the merge: lakeFS's merge no longer takes the source's entry of the same identity", manifest)
	}
}

// A path outside the tables that both the batch and the target added with
// the same claimed checksum and size is no conflict to lakeFS, which keeps
// the batch's entry: with an MD5 collision, other bytes than the target's.
// On the real server: another batch N adds zz/p (bytes A) and is
// published; batch K adds zz/p with bytes B of A's MD5 and size. Merged,
// K replaces N's published file with other bytes. K's recheck must refuse
// it (merge_hazard naming zz/p); the same path added with the same bytes
// (an honest marker both write) is not refused.
func TestRecheckRefusesABothAddedPathOfCollidingBytes(t *testing.T) {
	ctx := context.Background()
	a, _ := hex.DecodeString(md5CollisionA)
	b, _ := hex.DecodeString(md5CollisionB)
	bodyA, bodyB := append(a, '\n'), append(b, '\n')
	s := startRelinkStack(t)
	up := func(branch, p string, body []byte) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	up("main", relinkPrefix+"a.csv", []byte("id,x\n1,a\n"))
	up("main", "zz/q", []byte("another file\n"))
	foundation := s.commit(t, "main", "foundation")
	for _, br := range []string{"n", "k", "honest"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", br, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", "zz/p", bodyA)
	sN := s.commit(t, "n", "batch N adds zz/p")
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)
	e := newDeriveEngine(t, s)
	recheck := func(branch string, body []byte) (bool, string, []string) {
		t.Helper()
		up(branch, relinkPrefix+branch+".csv", []byte("id,x\n2,b\n"))
		up(branch, "zz/p", body)
		sealed := s.commit(t, branch, "batch adds zz/p")
		// The runner's prepared diff, from the foundation: lakeFS's
		// three-dot diff from the head leaves zz/p out, the head holding
		// it at the same identity.
		changes, err := s.lake.Changes(ctx, "lake", foundation, sealed)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: h,
			BaseName: "main", Onto: true, Changes: Changes(changes)})
		if err != nil {
			t.Fatal(err)
		}
		var hazards []string
		for _, c := range rep.Failed() {
			if c.Kind == audit.KindMergeHazard {
				hazards = append(hazards, c.Observed)
			}
		}
		return rep.Passed, sealed, hazards
	}
	if passed, _, hazards := recheck("honest", bodyA); !passed || len(hazards) > 0 {
		t.Errorf("a batch adding zz/p with the target's own bytes: passed=%v, merge_hazard %q; want it to pass", passed, hazards)
	}
	passed, sK, hazards := recheck("k", bodyB)
	if passed || len(hazards) == 0 || !strings.Contains(hazards[0], "zz/p") {
		t.Errorf("batch K adding zz/p with colliding bytes: passed=%v, merge_hazard %q; want merge_hazard naming zz/p", passed, hazards)
	}

	// What it guards against: the merge lakewap no longer makes.
	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish K anyway", nil)
	if err != nil {
		t.Logf("this lakeFS refuses the merge (%v): the hazard is gone from its merge", err)
		return
	}
	var got bytes.Buffer
	if err := s.lake.Download(ctx, "lake", m, "zz/p", &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), bodyB) {
		t.Errorf("main holds zz/p %x after the merge; the scenario expects lakeFS to take batch K's colliding bytes", got.Bytes())
	}
}

// The same with a path the foundation holds, which both the batch and the
// target changed (another publish wrote it again, the batch rewrote it
// under the same allowed path) to the same claimed checksum and size, at
// other bytes: the recheck models both sides changing it alike, lakeFS
// finds no conflict and keeps the batch's entry, and main loses the bytes
// the other publish was announced to hold. The recheck compared the bytes
// of both-added paths only; one both changed from the foundation's entry
// passed.
func TestRecheckRefusesABothChangedPathOfCollidingBytes(t *testing.T) {
	ctx := context.Background()
	a, _ := hex.DecodeString(md5CollisionA)
	b, _ := hex.DecodeString(md5CollisionB)
	bodyA, bodyB := append(a, '\n'), append(b, '\n')
	s := startRelinkStack(t)
	up := func(branch, p string, body []byte) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	up("main", relinkPrefix+"a.csv", []byte("id,x\n1,a\n"))
	up("main", "zz/p", []byte("the first marker\n"))
	foundation := s.commit(t, "main", "foundation")
	for _, br := range []string{"n", "k", "honest"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", br, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", "zz/p", bodyA)
	sN := s.commit(t, "n", "batch N writes zz/p again")
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)
	e := newDeriveEngine(t, s)
	recheck := func(branch string, body []byte) (bool, string, []string) {
		t.Helper()
		up(branch, relinkPrefix+branch+".csv", []byte("id,x\n2,b\n"))
		up(branch, "zz/p", body)
		sealed := s.commit(t, branch, "batch writes zz/p again")
		changes, err := s.lake.Changes(ctx, "lake", foundation, sealed)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: h,
			BaseName: "main", Onto: true, Changes: Changes(changes)})
		if err != nil {
			t.Fatal(err)
		}
		var hazards []string
		for _, c := range rep.Failed() {
			if c.Kind == audit.KindMergeHazard {
				hazards = append(hazards, c.Observed)
			}
		}
		return rep.Passed, sealed, hazards
	}
	if passed, _, hazards := recheck("honest", bodyA); !passed || len(hazards) > 0 {
		t.Errorf("a batch writing zz/p with the target's own bytes: passed=%v, merge_hazard %q; want it to pass", passed, hazards)
	}
	passed, sK, hazards := recheck("k", bodyB)
	if passed || len(hazards) == 0 || !strings.Contains(hazards[0], "zz/p") {
		t.Errorf("batch K writing zz/p with colliding bytes: passed=%v, merge_hazard %q; want merge_hazard naming zz/p", passed, hazards)
	}

	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish K anyway", nil)
	if err != nil {
		t.Logf("this lakeFS refuses the merge (%v): the hazard is gone from its merge", err)
		return
	}
	var got bytes.Buffer
	if err := s.lake.Download(ctx, "lake", m, "zz/p", &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), bodyB) {
		t.Errorf("main holds zz/p %x after the merge; the scenario expects lakeFS to take batch K's colliding bytes", got.Bytes())
	}
}
