package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"
	"github.com/treeverse/lakefs/pkg/auth/wildcard"
	"github.com/treeverse/lakefs/pkg/permissions"

	"github.com/lakewap/lakewap/schemas"
)

// TestLakeFSPoliciesAreLakeFSPolicyDocuments decodes deploy/lakefs-policies
// strictly as lakeFS's API Policy and checks every action is one lakeFS
// knows: a typo would make lakectl's create fail or, worse, grant nothing.
func TestLakeFSPoliciesAreLakeFSPolicyDocuments(t *testing.T) {
	files, err := filepath.Glob("../deploy/lakefs-policies/*.json")
	must(t, err)
	if len(files) != 2 {
		t.Fatalf("policies = %v, want lakewap.json and writers.json", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		must(t, err)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var p apigen.Policy
		if err := dec.Decode(&p); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if p.Id == "" || len(p.Statement) == 0 {
			t.Errorf("%s: policy %+v has no id or no statement", f, p)
		}
		for _, st := range p.Statement {
			if st.Effect != "allow" {
				t.Errorf("%s: effect %q, want allow (least privilege grants, it does not deny)", f, st.Effect)
			}
			if !strings.HasPrefix(st.Resource, "arn:lakefs:fs:::repository/lake") {
				t.Errorf("%s: resource %q is not within repository lake", f, st.Resource)
			}
			for _, a := range st.Action {
				if !slices.Contains(permissions.Actions, a) {
					t.Errorf("%s: %q is not a lakeFS action", f, a)
				}
			}
		}
	}
}

// TestLakewapPolicyGrantsTheRevertAuditsBranch: an audited revert (the
// default) reverts the published merge on a scratch branch named after the
// batch branch with schemas.RevertScratchSuffix (pipeline/runner
// judgeRevert: lakeFS's revertBranch, which checks fs:RevertBranch on that
// branch), then merges it into the target; only `lakewap revert -force`
// reverts the target itself. lakewap.json must grant each action on the
// branch lakewap makes it on, matched as lakeFS matches a resource
// (wildcard.Match on the ARN).
func TestLakewapPolicyGrantsTheRevertAuditsBranch(t *testing.T) {
	b, err := os.ReadFile("../deploy/lakefs-policies/lakewap.json")
	must(t, err)
	var p apigen.Policy
	must(t, json.Unmarshal(b, &p))
	allows := func(action, resource string) bool {
		for _, st := range p.Statement {
			if st.Effect == "allow" && slices.Contains(st.Action, action) && wildcard.Match(st.Resource, resource) {
				return true
			}
		}
		return false
	}
	batch := schemas.BranchPrefix + "billing-20240101"
	scratch := batch + schemas.RevertScratchSuffix
	for _, c := range []struct{ action, branch string }{
		{permissions.CreateBranchAction, batch},
		{permissions.CreateCommitAction, batch}, // the seal
		{permissions.DeleteBranchAction, batch},
		{permissions.CreateBranchAction, scratch},
		{permissions.RevertBranchAction, scratch}, // the audited revert
		{permissions.DeleteBranchAction, scratch},
		{permissions.CreateCommitAction, "main"}, // a publish, and an audited revert's merge
		{permissions.RevertBranchAction, "main"}, // a forced revert
	} {
		if !allows(c.action, permissions.BranchArn("lake", c.branch)) {
			t.Errorf("lakewap.json does not allow %s on branch %s", c.action, c.branch)
		}
	}
}
