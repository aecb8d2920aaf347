package devstack

import (
	"bytes"
	"context"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"
	"github.com/treeverse/lakefs/pkg/ident"
)

// as is a lakeFS client that signs in with c.
func (s *Stack) as(t *testing.T, c Credentials) *apigen.ClientWithResponses {
	t.Helper()
	cl, err := apigen.NewClientWithResponses(s.LakeFSEndpoint+"/api/v1",
		apigen.WithHTTPClient(&http.Client{Timeout: callTimeout}),
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(c.AccessKeyID, c.SecretAccessKey)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func upload(ctx context.Context, cl *apigen.ClientWithResponses, repo, branch, path string) (int, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("content", "f")
	_, _ = part.Write([]byte("x"))
	_ = w.Close()
	r, err := cl.UploadObjectWithBodyWithResponse(ctx, repo, branch, &apigen.UploadObjectParams{Path: path}, w.FormDataContentType(), &body)
	if err != nil {
		return 0, err
	}
	return r.StatusCode(), nil
}

// TestACLStackPermissions pins what the simplified ACL gives lakewap's and
// a writer's keys on the real lakeFS and ACL servers: it is the ground of
// docs/trust-model.md's lakeFS section.
func TestACLStackPermissions(t *testing.T) {
	start := time.Now()
	s := StartForTest(t, Options{ACL: true})
	t.Logf("ACL stack up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	repo := s.Repository
	lw, wr := s.as(t, s.Lakewap), s.as(t, s.Writer)
	status := func(t *testing.T, what string, got int, err error, want int, body ...[]byte) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Errorf("%s: status %d, want %d %s", what, got, want, body)
		}
	}

	t.Run("lakewap publishes", func(t *testing.T) {
		b, err := lw.CreateBranchWithResponse(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: "wap-a", Source: "main"})
		status(t, "create branch", b.StatusCode(), err, http.StatusCreated)
		code, err := upload(ctx, wr, repo, "wap-a", "gold/t/a")
		status(t, "writer uploads to the batch branch", code, err, http.StatusCreated)
		meta := apigen.CommitCreation_Metadata{AdditionalProperties: map[string]string{"lakewap.batch_id": "a"}}
		c, err := lw.CommitWithResponse(ctx, repo, "wap-a", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "seal", Metadata: &meta})
		status(t, "seal commit", c.StatusCode(), err, http.StatusCreated)
		m, err := lw.MergeIntoBranchWithResponse(ctx, repo, "wap-a", "main", apigen.MergeIntoBranchJSONRequestBody{})
		status(t, "merge into main", m.StatusCode(), err, http.StatusOK)
		r, err := lw.RevertBranchWithResponse(ctx, repo, "main", apigen.RevertBranchJSONRequestBody{Ref: "main", ParentNumber: 1})
		status(t, "revert on main", r.StatusCode(), err, http.StatusNoContent)
		d, err := lw.DeleteBranchWithResponse(ctx, repo, "wap-a", &apigen.DeleteBranchParams{})
		status(t, "delete branch", d.StatusCode(), err, http.StatusNoContent)
	})

	t.Run("lakewap cannot administer", func(t *testing.T) {
		branch := "main"
		r, err := lw.CreateRepositoryWithResponse(ctx, &apigen.CreateRepositoryParams{}, apigen.CreateRepositoryJSONRequestBody{
			Name: "other", StorageNamespace: "local://other", DefaultBranch: &branch})
		status(t, "create repository", r.StatusCode(), err, http.StatusUnauthorized)
		dr, err := lw.DeleteRepositoryWithResponse(ctx, repo, &apigen.DeleteRepositoryParams{})
		status(t, "delete repository", dr.StatusCode(), err, http.StatusUnauthorized)
		u, err := lw.CreateUserWithResponse(ctx, apigen.CreateUserJSONRequestBody{Id: "mallory"})
		status(t, "create user", u.StatusCode(), err, http.StatusUnauthorized)
		g, err := lw.AddGroupMembershipWithResponse(ctx, "Admins", LakewapUser)
		status(t, "join Admins", g.StatusCode(), err, http.StatusUnauthorized)
		lc, err := lw.ListUserCredentialsWithResponse(ctx, lakeFSAdmin, &apigen.ListUserCredentialsParams{})
		status(t, "list the admin's keys", lc.StatusCode(), err, http.StatusUnauthorized)
		cc, err := lw.CreateCredentialsWithResponse(ctx, WriterUser)
		status(t, "make a key for writer", cc.StatusCode(), err, http.StatusUnauthorized)
		bp, err := lw.SetBranchProtectionRulesWithResponse(ctx, repo, &apigen.SetBranchProtectionRulesParams{}, apigen.SetBranchProtectionRulesJSONRequestBody{})
		status(t, "drop branch protection", bp.StatusCode(), err, http.StatusUnauthorized)
	})

	t.Run("writer", func(t *testing.T) {
		// The simplified ACL has no per-branch rule: a writer's key is as
		// strong as lakewap's. Unprotected main takes a writer's commit...
		code, err := upload(ctx, wr, repo, "main", "gold/t/direct")
		status(t, "writer uploads to unprotected main", code, err, http.StatusCreated)
		c, err := wr.CommitWithResponse(ctx, repo, "main", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "direct"})
		status(t, "writer commits to unprotected main", c.StatusCode(), err, http.StatusCreated)

		// ...and branch protection (set by the admin) stops commits and
		// uploads to main, for every key, but not merges.
		adm := s.LakeFSClient()
		bp, err := adm.SetBranchProtectionRulesWithResponse(ctx, repo, &apigen.SetBranchProtectionRulesParams{},
			apigen.SetBranchProtectionRulesJSONRequestBody{{Pattern: "main"}})
		status(t, "admin protects main", bp.StatusCode(), err, http.StatusNoContent)
		// lakeFS caches branch settings for up to 6s: await the rule with
		// empty commits, which leave main clean when they still go through.
		for code = http.StatusCreated; code == http.StatusCreated && ctx.Err() == nil; {
			c, err = wr.CommitWithResponse(ctx, repo, "main", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "direct", AllowEmpty: ptr(true)})
			if err != nil {
				t.Fatal(err)
			}
			if code = c.StatusCode(); code == http.StatusCreated {
				time.Sleep(200 * time.Millisecond) // no event to await: lakeFS's cache expiry
			}
		}
		status(t, "writer commits to protected main", code, err, http.StatusForbidden, c.Body)
		code, err = upload(ctx, wr, repo, "main", "gold/t/direct2")
		status(t, "writer uploads to protected main", code, err, http.StatusForbidden)

		b, err := wr.CreateBranchWithResponse(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: "own", Source: "main"})
		status(t, "writer creates a branch", b.StatusCode(), err, http.StatusCreated)
		code, err = upload(ctx, wr, repo, "own", "gold/t/own")
		status(t, "writer uploads to own branch", code, err, http.StatusCreated)
		c, err = wr.CommitWithResponse(ctx, repo, "own", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "own"})
		status(t, "writer commits to own branch", c.StatusCode(), err, http.StatusCreated)
		m, err := wr.MergeIntoBranchWithResponse(ctx, repo, "own", "main", apigen.MergeIntoBranchJSONRequestBody{})
		status(t, "writer merges into protected main (not expressible in simplified ACL)", m.StatusCode(), err, http.StatusOK, m.Body)

		rv, err := wr.RevertBranchWithResponse(ctx, repo, "main", apigen.RevertBranchJSONRequestBody{Ref: "main", ParentNumber: 1})
		// Branch protection does not cover reverts: a writer can take a
		// publish off the target.
		status(t, "writer reverts protected main", rv.StatusCode(), err, http.StatusNoContent, rv.Body)
		lb, err := lw.CreateBranchWithResponse(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: "wap-b", Source: "main"})
		status(t, "lakewap creates a batch branch", lb.StatusCode(), err, http.StatusCreated)
		d, err := wr.DeleteBranchWithResponse(ctx, repo, "wap-b", &apigen.DeleteBranchParams{})
		status(t, "writer deletes lakewap's batch branch", d.StatusCode(), err, http.StatusNoContent, d.Body)

		// A writer writes a commit record with lakewap's committer and any
		// metadata (createCommitRecord, fs:CreateCommit on the repository)
		// and hard-resets a batch branch to it (fs:RevertBranch): no
		// committer or metadata tells lakewap's seal from a writer's commit
		// (review 30; the runner records its seals, Run.Seals).
		lb, err = lw.CreateBranchWithResponse(ctx, repo, apigen.CreateBranchJSONRequestBody{Name: "wap-c", Source: "main"})
		status(t, "lakewap creates a batch branch", lb.StatusCode(), err, http.StatusCreated)
		seal, err := lw.CommitWithResponse(ctx, repo, "wap-c", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "seal", AllowEmpty: ptr(true),
			Metadata: &apigen.CommitCreation_Metadata{AdditionalProperties: map[string]string{"wap.sealed_batch_id": "c"}}})
		status(t, "lakewap seals", seal.StatusCode(), err, http.StatusCreated)
		if seal.JSON201 == nil {
			t.Fatal("no seal commit")
		}
		rec := apigen.CommitRecordCreation{Committer: seal.JSON201.Committer, Message: "seal", MetarangeId: seal.JSON201.MetaRangeId,
			CreationDate: seal.JSON201.CreationDate + 1, Parents: seal.JSON201.Parents, Version: 1, Generation: *seal.JSON201.Generation,
			Metadata: &apigen.CommitRecordCreation_Metadata{AdditionalProperties: map[string]string{"wap.sealed_batch_id": "c"}}}
		rec.CommitId = commitRecordID(rec)
		cr, err := wr.CreateCommitRecordWithResponse(ctx, repo, apigen.CreateCommitRecordJSONRequestBody(rec))
		status(t, "writer creates a commit record as lakewap", cr.StatusCode(), err, http.StatusNoContent, cr.Body)
		hr, err := wr.HardResetBranchWithResponse(ctx, repo, "wap-c", &apigen.HardResetBranchParams{Ref: rec.CommitId})
		status(t, "writer hard-resets a batch branch to it", hr.StatusCode(), err, http.StatusNoContent, hr.Body)
		if got, err := lw.GetCommitWithResponse(ctx, repo, "wap-c"); err != nil || got.JSON200 == nil || got.JSON200.Id != rec.CommitId || got.JSON200.Committer != seal.JSON201.Committer {
			t.Errorf("wap-c's head is not the writer's record with lakewap's committer %q: %v", seal.JSON201.Committer, err)
		}

		r, err := wr.CreateRepositoryWithResponse(ctx, &apigen.CreateRepositoryParams{}, apigen.CreateRepositoryJSONRequestBody{
			Name: "wrepo", StorageNamespace: "local://wrepo", DefaultBranch: ptr("main")})
		status(t, "writer creates a repository", r.StatusCode(), err, http.StatusUnauthorized, r.Body)
		u, err := wr.CreateUserWithResponse(ctx, apigen.CreateUserJSONRequestBody{Id: "mallory"})
		status(t, "writer creates a user", u.StatusCode(), err, http.StatusUnauthorized)
	})
}

func ptr[T any](v T) *T { return &v }

// commitRecordID is lakeFS v1.84.0's id of a commit record (its content
// address, graveler.Commit.Identity).
func commitRecordID(c apigen.CommitRecordCreation) string {
	parents := ident.NewAddressWriter()
	parents.MarshalStringSlice(c.Parents)
	w := ident.NewAddressWriter()
	w.MarshalString("commit:v1")
	w.MarshalString(c.Committer)
	w.MarshalString(c.Message)
	w.MarshalString(c.MetarangeId)
	w.MarshalInt64(c.CreationDate)
	w.MarshalStringMap(c.Metadata.AdditionalProperties)
	w.MarshalIdentifiable(parents)
	return hex.EncodeToString(w.Identity())
}
