package lakefs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/pipeline/runner"
)

// TestRealLakeFS runs the adapter against the real lakeFS server. Each
// subtest works in a repository of its own on one shared server.
func TestRealLakeFS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lakeFS server")
	}
	stack := devstack.StartForTest(t, devstack.Options{Repository: "lake"})
	c, err := lakefs.New(lakefs.Config{
		Endpoint:        stack.LakeFSEndpoint,
		AccessKeyID:     stack.AccessKeyID,
		SecretAccessKey: stack.SecretAccessKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	newRepo := func(t *testing.T, name string) string {
		t.Helper()
		if err := c.CreateRepository(ctx, name, "local://"+name, "main"); err != nil {
			t.Fatalf("CreateRepository: %v", err)
		}
		// Creating it again is not an error.
		if err := c.CreateRepository(ctx, name, "local://"+name, "main"); err != nil {
			t.Fatalf("CreateRepository again: %v", err)
		}
		return name
	}
	upload := func(t *testing.T, repo, branch, path, content string) {
		t.Helper()
		if err := c.Upload(ctx, repo, branch, path, strings.NewReader(content)); err != nil {
			t.Fatalf("Upload %s: %v", path, err)
		}
	}
	download := func(t *testing.T, repo, ref, path string) string {
		t.Helper()
		var buf bytes.Buffer
		if err := c.Download(ctx, repo, ref, path, &buf); err != nil {
			t.Fatalf("Download %s@%s: %v", path, ref, err)
		}
		return buf.String()
	}
	paths := func(objs []lakefs.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.Path)
		}
		return out
	}

	t.Run("branches", func(t *testing.T) {
		repo := newRepo(t, "branches")
		existed, err := c.EnsureBranch(ctx, repo, "wap-b1", "main")
		if err != nil || existed {
			t.Fatalf("first EnsureBranch: existed=%v err=%v", existed, err)
		}
		existed, err = c.EnsureBranch(ctx, repo, "wap-b1", "main")
		if err != nil || !existed {
			t.Fatalf("second EnsureBranch: existed=%v err=%v", existed, err)
		}
		if _, err := c.EnsureBranch(ctx, "no-such-repo", "wap-b1", "main"); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("EnsureBranch in missing repo: %v, want ErrNotFound", err)
		}
		if _, err := c.EnsureBranch(ctx, repo, "wap-b2", "no-such-ref"); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("EnsureBranch from missing source: %v, want ErrNotFound", err)
		}
		head, err := c.GetCommit(ctx, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		branches, err := c.ListBranches(ctx, repo, "wap-")
		if err != nil {
			t.Fatal(err)
		}
		if want := []lakefs.Branch{{Name: "wap-b1", CommitID: head.ID}}; !slices.Equal(branches, want) {
			t.Errorf("ListBranches = %v, want %v", branches, want)
		}
		// A branch made beforehand from an older commit is not resumed
		// once the source moved on, though its head is in the source's
		// history (issue 21).
		if err := c.Upload(ctx, repo, "main", "moved.txt", strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		moved, err := c.Commit(ctx, repo, "main", "main moves on", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnsureBranch(ctx, repo, "wap-b1", "main"); !errors.Is(err, pipeline.ErrBranchTaken) {
			t.Errorf("EnsureBranch of a branch on %s from main at %s: %v, want ErrBranchTaken", head.ID, moved, err)
		}
		if existed, err := c.EnsureBranch(ctx, repo, "wap-b1", head.ID); err != nil || !existed {
			t.Errorf("EnsureBranch from the commit the branch was made at: existed=%v err=%v", existed, err)
		}
		if err := c.DeleteBranch(ctx, repo, "wap-b1"); err != nil {
			t.Fatalf("DeleteBranch: %v", err)
		}
		if err := c.DeleteBranch(ctx, repo, "wap-b1"); err != nil {
			t.Errorf("DeleteBranch of a missing branch: %v, want nil", err)
		}
		if err := c.DeleteBranch(ctx, "no-such-repo", "wap-b1"); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("DeleteBranch in missing repo: %v, want ErrNotFound", err)
		}
		if branches, _ := c.ListBranches(ctx, repo, "wap-"); len(branches) != 0 {
			t.Errorf("after delete ListBranches = %v", branches)
		}
	})

	t.Run("branch heads are listed", func(t *testing.T) {
		// A head or merge-base named by a branch reads the branch from
		// lakeFS's branch listing, never through a call that names the
		// branch (lakeFS batches those reads and makes each wait up to
		// graveler.max_batch_delay); anything that is not plainly a branch
		// is left to lakeFS's own resolution, with the same answers.
		repo := newRepo(t, "heads")
		var mu sync.Mutex
		var asked []string
		rc, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey,
			Wrap: func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					asked = append(asked, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
					mu.Unlock()
					return rt.RoundTrip(r)
				})
			}})
		if err != nil {
			t.Fatal(err)
		}
		take := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := asked
			asked = nil
			return out
		}
		upload(t, repo, "main", "a.txt", "a")
		first, err := c.Commit(ctx, repo, "main", "first", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{"main-a", "mai"} {
			if _, err := c.EnsureBranch(ctx, repo, b, "main"); err != nil {
				t.Fatal(err)
			}
		}
		upload(t, repo, "main-a", "b.txt", "b")
		sealed, err := c.Commit(ctx, repo, "main-a", "on main-a", nil)
		if err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "main", "c.txt", "c")
		second, err := c.Commit(ctx, repo, "main", "second", nil)
		if err != nil {
			t.Fatal(err)
		}
		take()
		for ref, want := range map[string]string{"main": second, "main-a": sealed, "mai": first} {
			if got, err := rc.Head(ctx, repo, ref); err != nil || got != want {
				t.Errorf("Head(%s) = %s, %v; want %s", ref, got, err, want)
			}
		}
		base, head, err := rc.MergeBase(ctx, repo, sealed, "main")
		if err != nil || base != first || head != second {
			t.Errorf("MergeBase(sealed, main) = %s, %s, %v; want %s, %s", base, head, err, first, second)
		}
		p, err := rc.Published(ctx, repo, "main", sealed, time.Time{})
		if err != nil || p.OnTarget || p.Head != second || p.Base != first {
			t.Errorf("Published(sealed) = %+v, %v; want head %s base %s, not on main", p, err, second, first)
		}
		for _, a := range take() {
			for _, b := range []string{"/main", "/main-a", "/mai"} {
				if strings.HasSuffix(strings.SplitN(a, "?", 2)[0], b) {
					t.Errorf("asked lakeFS %q, a call naming branch %s", a, b[1:])
				}
			}
		}
		// Not plainly a branch: lakeFS resolves it, as before.
		if got, err := rc.Head(ctx, repo, "main~1"); err != nil || got != first {
			t.Errorf("Head(main~1) = %s, %v; want %s", got, err, first)
		}
		if got, err := rc.Head(ctx, repo, second); err != nil || got != second {
			t.Errorf("Head(commit id) = %s, %v; want %s", got, err, second)
		}
		if _, err := rc.Head(ctx, repo, "ma"); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("Head(ma), a prefix of branches but none: %v, want ErrNotFound", err)
		}
		if _, _, err := rc.MergeBase(ctx, "no-such-repo", sealed, "main"); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("MergeBase in a missing repository: %v, want ErrNotFound", err)
		}
	})

	t.Run("upload list download", func(t *testing.T) {
		repo := newRepo(t, "objects")
		if _, err := c.EnsureBranch(ctx, repo, "b", "main"); err != nil {
			t.Fatal(err)
		}
		big := make([]byte, 3<<20+17)
		_, _ = rand.Read(big)
		if err := c.Upload(ctx, repo, "b", "t/big.bin", bytes.NewReader(big)); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "b", "t/a.csv", "a,b\n1,2\n")
		upload(t, repo, "b", "u/other.csv", "x\n")

		objs, err := c.List(ctx, repo, "b", "t/")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := paths(objs), []string{"t/a.csv", "t/big.bin"}; !slices.Equal(got, want) {
			t.Fatalf("List t/ = %v, want %v", got, want)
		}
		if objs[0].Size != 8 || objs[1].Size != int64(len(big)) || objs[1].Checksum == "" || objs[1].PhysicalAddress == "" || objs[1].Mtime.IsZero() {
			t.Errorf("object stats = %+v", objs)
		}
		if all, _ := c.List(ctx, repo, "b", ""); len(all) != 3 {
			t.Errorf("List all = %v, want 3 objects", paths(all))
		}
		if got := download(t, repo, "b", "t/big.bin"); got != string(big) {
			t.Errorf("big download differs: %d bytes, want %d", len(got), len(big))
		}
		if got := download(t, repo, "b", "t/a.csv"); got != "a,b\n1,2\n" {
			t.Errorf("Download = %q", got)
		}
		var buf bytes.Buffer
		if err := c.Download(ctx, repo, "main", "t/a.csv", &buf); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("Download of an object only on the branch from main: %v, want ErrNotFound", err)
		}
	})

	t.Run("diff", func(t *testing.T) {
		repo := newRepo(t, "diff")
		upload(t, repo, "main", "t/keep.csv", "k\n")
		upload(t, repo, "main", "t/change.csv", "old\n")
		if _, err := c.Commit(ctx, repo, "main", "base", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnsureBranch(ctx, repo, "b", "main"); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "b", "t/change.csv", "new content\n")
		upload(t, repo, "b", "t/new.csv", "n\n")
		upload(t, repo, "b", "other/new.csv", "n\n")
		if _, err := c.Commit(ctx, repo, "b", "batch", nil); err != nil {
			t.Fatal(err)
		}
		changes, err := c.Diff(ctx, repo, "main", "b", "t/")
		if err != nil {
			t.Fatal(err)
		}
		want := []lakefs.Change{{Path: "t/change.csv", Type: "changed", Size: 12}, {Path: "t/new.csv", Type: "added", Size: 2}}
		if !slices.Equal(changes, want) {
			t.Errorf("Diff main...b t/ = %+v, want %+v", changes, want)
		}
		all, err := c.Diff(ctx, repo, "main", "b", "")
		if err != nil || len(all) != 3 {
			t.Errorf("Diff main...b = %+v, %v; want 3 changes", all, err)
		}
		if _, err := c.Diff(ctx, repo, "main", "no-such-ref", ""); !errors.Is(err, pipeline.ErrNotFound) {
			t.Errorf("Diff with a missing ref: %v, want ErrNotFound", err)
		}
	})

	t.Run("publish and find", func(t *testing.T) {
		repo := newRepo(t, "publish")
		if _, err := c.EnsureBranch(ctx, repo, "wap-42", "main"); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "wap-42", "t/part-0.csv", "id\n1\n")
		meta := map[string]string{pipeline.MetaBatchID: "42", pipeline.MetaDataset: "orders"}
		id, err := lakefs.Publish(ctx, c, repo, "wap-42", "main", meta)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		head, err := c.GetCommit(ctx, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		if head.ID != id || len(head.Parents) != 2 || head.Metadata[pipeline.MetaBatchID] != "42" || head.Metadata[pipeline.MetaDataset] != "orders" {
			t.Errorf("main head = %+v, want merge commit %s with the batch metadata", head, id)
		}
		byID, err := c.GetCommit(ctx, repo, id)
		if err != nil || byID.ID != id {
			t.Errorf("GetCommit by id = %+v, %v", byID, err)
		}
		// The seal commit is the merge's second parent and names the batch
		// under the sealed key only.
		sealed, err := c.GetCommit(ctx, repo, head.Parents[1])
		if err != nil {
			t.Fatal(err)
		}
		if sealed.Metadata[pipeline.MetaSealedBatchID] != "42" || sealed.Metadata[pipeline.MetaBatchID] != "" {
			t.Errorf("seal commit metadata = %v", sealed.Metadata)
		}
		if got := download(t, repo, "main", "t/part-0.csv"); got != "id\n1\n" {
			t.Errorf("published object on main = %q", got)
		}

		start := time.Now().Add(-time.Minute)
		p, err := c.Published(ctx, repo, "main", sealed.ID, start)
		if err != nil || !p.OnTarget || p.Merge != id || p.Head != id {
			t.Errorf("Published(sealed 42) = %+v, %v; want on main, merged by %s", p, err, id)
		}

		// A second publish of the same branch (answer lost, retried) seals
		// again and merges nothing new; a repeated merge of the sealed
		// commit is refused by lakeFS ("no changes"), never a second marker.
		if _, err := c.Merge(ctx, repo, sealed.ID, "main", "again", map[string]string{pipeline.MetaBatchID: "42"}); !errors.Is(err, pipeline.ErrNoChanges) {
			t.Errorf("second merge of a published sealed commit: %v; want ErrNoChanges", err)
		}
		res, err := runner.Publish(ctx, c, runner.PublishRequest{Repository: repo, Target: "main", Sealed: sealed.ID, Since: start,
			Message: "again", Meta: meta}, nil)
		if err != nil || res.CommitID != id || !res.AlreadyPublished {
			t.Errorf("repeated publish = %+v, %v; want already published as %s", res, err, id)
		}
		log, err := c.Log(ctx, repo, "main", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 3 || log[0].ID != id {
			t.Errorf("main log = %d commits, head %v; want 3 (created, seal, merge) with the merge first", len(log), log)
		}

		// A commit on main that only carries the batch's label is not a
		// publish: another sealed commit is still not on main.
		if _, err := c.EnsureBranch(ctx, repo, "wap-43", "main"); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "wap-43", "t/part-1.csv", "id\n2\n")
		sealed43, err := c.Seal(ctx, repo, "wap-43", "seal 43", nil)
		if err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "main", "t/forged.csv", "x\n")
		if _, err := c.Commit(ctx, repo, "main", "forged marker", map[string]string{pipeline.MetaBatchID: "43"}); err != nil {
			t.Fatal(err)
		}
		if p, err := c.Published(ctx, repo, "main", sealed43, start); err != nil || p.OnTarget {
			t.Errorf("Published(sealed 43) after a forged marker = %+v, %v; want not on main", p, err)
		}
		id43, err := lakefs.Publish(ctx, c, repo, "wap-43", "main", map[string]string{pipeline.MetaBatchID: "43"})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := c.Published(ctx, repo, "main", sealed.ID, start); err != nil || p.Merge != id {
			t.Errorf("Published(sealed 42) after later commits = %+v, %v; want merge %s", p, err, id)
		}
		// Publish sealed again: the merged commit is that second seal, and
		// the first one is brought in by the same merge, as an ancestor,
		// without being merged; the merge holds its file as it does, so it
		// is published by that merge (had the second seal dropped the file,
		// it would be absorbed: review 9).
		m43, err := c.GetCommit(ctx, repo, id43)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := c.MergesOf(ctx, repo, "main", m43.Parents[1], start); err != nil || len(m) != 1 || m[0].ID != id43 {
			t.Errorf("MergesOf(second seal of 43) = %+v, %v; want only %s", m, err, id43)
		}
		if p, err := c.Published(ctx, repo, "main", sealed43, start); err != nil || !p.OnTarget || p.Merge != id43 {
			t.Errorf("Published(first seal of 43) = %+v, %v; want merged by %s", p, err, id43)
		}

		// A batch that brings nothing is not merged: the target already
		// holds it, and no empty commit is left behind.
		if _, err := c.EnsureBranch(ctx, repo, "wap-empty", "main"); err != nil {
			t.Fatal(err)
		}
		headBefore, err := c.GetCommit(ctx, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		empty, err := lakefs.Publish(ctx, c, repo, "wap-empty", "main", map[string]string{pipeline.MetaBatchID: "44"})
		if err != nil || empty != headBefore.ID {
			t.Fatalf("Publish of an empty batch = %q, %v; want main's head %s", empty, err, headBefore.ID)
		}
		if h, err := c.GetCommit(ctx, repo, "main"); err != nil || h.ID != headBefore.ID {
			t.Errorf("main moved to %s on an empty publish", h.ID)
		}
	})

	t.Run("sealed on after a restart", func(t *testing.T) {
		// A batch's audit step stopped after its seal and ran again in a
		// new process: the new seal sits on the stopped step's, which the
		// new client did not make. The run recorded the stopped seal
		// (Run.Seals), so the seal sits on the branch point through
		// lakewap's seals only (before, only a seal whose one parent was
		// the branch point counted, and the batch was compared by address,
		// listed whole). A writer's commit between is not recorded, and
		// not taken whatever its committer and metadata.
		repo := newRepo(t, "sealedon")
		meta := map[string]string{pipeline.MetaSealedBatchID: "b1"}
		for _, writer := range []bool{false, true} {
			branch := fmt.Sprintf("b-%v", writer)
			if _, err := c.EnsureBranch(ctx, repo, branch, "main"); err != nil {
				t.Fatal(err)
			}
			from, err := c.Head(ctx, repo, branch)
			if err != nil {
				t.Fatal(err)
			}
			upload(t, repo, branch, "gold/t/part-0.csv", "id\n1\n")
			stopped, err := c.Seal(ctx, repo, branch, "stopped", meta)
			if err != nil {
				t.Fatal(err)
			}
			if writer {
				upload(t, repo, branch, "gold/t/part-1.csv", "id\n2\n")
				if _, err := c.Commit(ctx, repo, branch, "a writer's", meta); err != nil {
					t.Fatal(err)
				}
			}
			restarted, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
			if err != nil {
				t.Fatal(err)
			}
			seal, err := restarted.Seal(ctx, repo, branch, "again", meta)
			if err != nil {
				t.Fatal(err)
			}
			_, on, err := restarted.SealedOn(ctx, repo, seal, from, []string{stopped})
			if err != nil || on == writer {
				t.Errorf("writer's commit %v: SealedOn = %v, %v; want %v", writer, on, err, !writer)
			}
		}
	})
	t.Run("seal", func(t *testing.T) {
		repo := newRepo(t, "seal")
		if _, err := c.EnsureBranch(ctx, repo, "b", "main"); err != nil {
			t.Fatal(err)
		}
		base, err := c.GetCommit(ctx, repo, "b")
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.Seal(ctx, repo, "b", "nothing yet", nil)
		if err != nil || id == base.ID {
			t.Errorf("Seal without changes = %q, %v; want a new commit on %s", id, err, base.ID)
		}
		again, err := c.Seal(ctx, repo, "b", "nothing yet", nil)
		if err != nil || again == id {
			t.Errorf("second Seal = %q, %v; want another new commit", again, err)
		}
		upload(t, repo, "b", "x.csv", "x\n")
		id, err = c.Seal(ctx, repo, "b", "sealed", map[string]string{pipeline.MetaSealedBatchID: "7"})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := c.GetCommit(ctx, repo, "b")
		if err != nil || cm.ID != id || id == base.ID || cm.Message != "sealed" || cm.Metadata[pipeline.MetaSealedBatchID] != "7" {
			t.Errorf("after Seal head = %+v, %v; want new commit %s", cm, err, id)
		}
		// The seal's merge-base with its one parent is known from lakeFS's
		// answer to the commit, without a call, and is what lakeFS answers.
		var calls atomic.Int64
		parent := cm.Parents[0]
		mb, _, err := c.MergeBase(pipeline.WithCallCounter(ctx, &calls), repo, id, parent)
		if err != nil || mb != parent || calls.Load() != 0 {
			t.Errorf("MergeBase(seal, parent) = %s, %v in %d calls; want the parent %s in none", mb, err, calls.Load(), parent)
		}
		fresh, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
		if err != nil {
			t.Fatal(err)
		}
		asked, _, err := fresh.MergeBase(pipeline.WithCallCounter(ctx, &calls), repo, id, parent)
		if err != nil || asked != parent || calls.Load() != 1 {
			t.Errorf("lakeFS's merge-base of the seal and its parent = %s, %v (%d calls); want the parent %s", asked, err, calls.Load(), parent)
		}
	})

	t.Run("merge conflict", func(t *testing.T) {
		repo := newRepo(t, "conflict")
		if _, err := c.EnsureBranch(ctx, repo, "wap-1", "main"); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "main", "t/same.csv", "from main\n")
		if _, err := c.Commit(ctx, repo, "main", "direct write", nil); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "wap-1", "t/same.csv", "from batch\n")
		_, err := lakefs.Publish(ctx, c, repo, "wap-1", "main", map[string]string{pipeline.MetaBatchID: "1"})
		if !errors.Is(err, pipeline.ErrMergeConflict) || errors.Is(err, pipeline.ErrTransient) {
			t.Fatalf("Publish over a conflicting main: %v, want ErrMergeConflict only", err)
		}
		if got := download(t, repo, "main", "t/same.csv"); got != "from main\n" {
			t.Errorf("main after a conflicting publish = %q", got)
		}
		if m, err := c.MergesOf(ctx, repo, "main", "", time.Time{}); err != nil || len(m) != 0 {
			t.Errorf("merges on main after a conflict = %v, %v; want none", m, err)
		}
	})

	t.Run("revert", func(t *testing.T) {
		repo := newRepo(t, "revert")
		upload(t, repo, "main", "t/old.csv", "old\n")
		if _, err := c.Commit(ctx, repo, "main", "existing data", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnsureBranch(ctx, repo, "wap-9", "main"); err != nil {
			t.Fatal(err)
		}
		upload(t, repo, "wap-9", "t/bad.csv", "bad\n")
		id, err := lakefs.Publish(ctx, c, repo, "wap-9", "main", map[string]string{pipeline.MetaBatchID: "9"})
		if err != nil {
			t.Fatal(err)
		}
		// A merge commit needs a parent number; lakeFS refuses without one.
		if err := c.Revert(ctx, repo, "main", id, 0, "", nil); err == nil {
			t.Errorf("Revert of a merge without parent number succeeded")
		}
		meta := map[string]string{"wap.reverted_batch_id": "9"}
		if err := c.Revert(ctx, repo, "main", id, 1, "lakewap: revert batch 9", meta); err != nil {
			t.Fatalf("Revert: %v", err)
		}
		objs, err := c.List(ctx, repo, "main", "t/")
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(objs); !slices.Equal(got, []string{"t/old.csv"}) {
			t.Errorf("main after revert = %v, want only t/old.csv", got)
		}
		head, err := c.GetCommit(ctx, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		if head.Message != "lakewap: revert batch 9" || head.Metadata["wap.reverted_batch_id"] != "9" || head.Parents[0] != id {
			t.Errorf("revert commit = %+v", head)
		}
		// The sealed commit is still in main's history, merged by id.
		merge, err := c.GetCommit(ctx, repo, id)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := c.Published(ctx, repo, "main", merge.Parents[1], time.Time{}); err != nil || !p.OnTarget || p.Merge != id {
			t.Errorf("Published after revert = %+v, %v", p, err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
