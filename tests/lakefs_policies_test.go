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
	"github.com/treeverse/lakefs/pkg/permissions"
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
