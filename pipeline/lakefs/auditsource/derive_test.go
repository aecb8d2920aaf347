package auditsource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// Against a real lakeFS: a listing of a commit derived from another
// commit's listing and their two-dot diff (audit.DeriveListing, what the
// engine does instead of listing a table whole again) equals lakeFS's own
// listing of the commit, object for object (paths, addresses, sizes,
// checksums), over random histories of files added, overwritten and
// deleted in random folders, on two branches (commits that are not each
// other's ancestors included), or it declines.
func TestDerivedListingEqualsLakeFSListing(t *testing.T) {
	ctx := context.Background()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: t.TempDir(), Repository: "lake"})
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	api, err := apigen.NewClientWithResponses(strings.TrimRight(stack.LakeFSEndpoint, "/")+"/api/v1",
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	del := func(branch, p string) error {
		resp, err := api.DeleteObjectWithResponse(ctx, "lake", branch, &apigen.DeleteObjectParams{Path: p})
		if err == nil && resp.StatusCode() != http.StatusNoContent {
			err = fmt.Errorf("delete %s: HTTP %d %s", p, resp.StatusCode(), resp.Body)
		}
		return err
	}
	src := Source{Lake: lake}
	rnd := rand.New(rand.NewPCG(21, 22))
	const prefix = "gold/t/"
	var commits []string
	derived, declined := 0, 0
	for _, branch := range []string{"a", "b"} {
		if _, err := lake.EnsureBranch(ctx, "lake", branch, "main"); err != nil {
			t.Fatal(err)
		}
		for step := range 8 {
			listed, err := src.List(ctx, "lake", branch, prefix)
			if err != nil {
				t.Fatal(err)
			}
			for range 1 + rnd.IntN(4) {
				switch op := rnd.IntN(4); {
				case op == 0 && len(listed) > 0: // delete
					o := listed[rnd.IntN(len(listed))]
					if err := del(branch, o.Path); err != nil {
						t.Fatal(err)
					}
				case op == 1 && len(listed) > 0: // overwrite, same size
					o := listed[rnd.IntN(len(listed))]
					if err := lake.Upload(ctx, "lake", branch, o.Path, strings.NewReader(strings.Repeat("y", int(o.Size)))); err != nil {
						t.Fatal(err)
					}
				default: // add, in a folder, a nested folder, right under the prefix, or outside it
					p := []string{prefix + "batch=%d/part-0.parquet", prefix + "d=%d/h=1/f.parquet", prefix + "f%d.parquet", "gold/t2/x%d", "gold/t_%d"}[rnd.IntN(5)]
					p = fmt.Sprintf(p, rnd.IntN(6))
					if err := lake.Upload(ctx, "lake", branch, p, strings.NewReader(strings.Repeat("x", 1+rnd.IntN(50)))); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Something changes in every commit.
			if err := lake.Upload(ctx, "lake", branch, fmt.Sprintf("other/%s-%d", branch, step), strings.NewReader("z")); err != nil {
				t.Fatal(err)
			}
			c, err := lake.Commit(ctx, "lake", branch, fmt.Sprintf("step %d", step), nil)
			if err != nil {
				t.Fatal(err)
			}
			commits = append(commits, c)
		}
	}
	listings := map[string][]audit.Object{}
	for _, c := range commits {
		if listings[c], err = src.List(ctx, "lake", c, prefix); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range commits {
		for _, to := range commits {
			got, ok := audit.DeriveListing(ctx, src, "lake", from, listings[from], to, prefix)
			if !ok {
				declined++
				continue
			}
			derived++
			if !slices.Equal(got, listings[to]) {
				t.Fatalf("listing of %s derived from %s:\n%+v\nlakeFS lists:\n%+v", to, from, got, listings[to])
			}
		}
	}
	if derived < len(commits)*len(commits)/2 {
		t.Errorf("%d listings derived, %d declined; want most derived", derived, declined)
	}
}
