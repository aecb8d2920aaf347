package lakefs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
)

// SealedOn takes a seal's chain back to the branch point only through
// seals the run recorded (what a batch's audit step run again after a
// restart leaves: its seal on the stopped step's). A commit not recorded,
// whatever its committer and metadata (lakeFS's createCommitRecord writes
// any), or a merge in the chain is not lakewap's, and the audit step then
// compares the seal with its base by address.
func TestSealedOnTakesOnlyRecordedSeals(t *testing.T) {
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	from, stopped, seal := id('a'), id('b'), id('c')
	commit := func(cid, committer, batch string, parents ...string) string {
		return fmt.Sprintf(`{"id":%q,"parents":["%s"],"committer":%q,"message":"m","creation_date":1,"meta_range_id":"","metadata":{%q:%q}}`,
			cid, strings.Join(parents, `","`), committer, pipeline.MetaSealedBatchID, batch)
	}
	for _, c := range []struct {
		name     string
		stopped  string // the commit between the seal and the branch point; "" none
		recorded []string
		want     bool
		asks     int // lakeFS calls besides the seal
	}{
		{"the seal sits on the branch point", "", nil, true, 0},
		{"the stopped step's recorded seal between", commit(stopped, "lakewap", "b1", from), []string{stopped}, true, 1},
		{"a commit like lakewap's seal, not recorded, between", commit(stopped, "lakewap", "b1", from), nil, false, 0},
		{"a recorded seal that is a merge between", commit(stopped, "lakewap", "b1", from, id('d')), []string{stopped}, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := from
			answers := map[string]answer{}
			if c.stopped != "" {
				parent = stopped
				answers["GET /api/v1/repositories/lake/commits/"+stopped] = answer{200, c.stopped}
			}
			answers["POST /api/v1/repositories/lake/branches/b1/commits"] = answer{201, commit(seal, "lakewap", "b1", parent)}
			cl, f := newFake(t, answers)
			ctx := context.Background()
			got, err := cl.Seal(ctx, "lake", "b1", "seal", map[string]string{pipeline.MetaSealedBatchID: "b1"})
			if err != nil || got != seal {
				t.Fatalf("Seal = %q, %v", got, err)
			}
			earlier, on, err := cl.SealedOn(ctx, "lake", seal, from, c.recorded)
			if err != nil || on != c.want {
				t.Errorf("SealedOn = %v, %v; want %v", on, err, c.want)
			}
			if want := c.want && c.stopped != ""; (len(earlier) == 1 && earlier[0] == stopped) != want || len(earlier) > 1 {
				t.Errorf("earlier seals %v; want the stopped seal named: %v", earlier, want)
			}
			if n := len(f.calls) - 1; n != c.asks {
				t.Errorf("%d lakeFS calls besides the seal (%v); want %d", n, f.calls, c.asks)
			}
		})
	}
	t.Run("a commit this client only read", func(t *testing.T) {
		// A writer's one-parent commit on the branch point, read by id
		// (the pre-merge hook reads any commit a call names, with the
		// client the runner uses), is not a seal this client made.
		cl, _ := newFake(t, map[string]answer{"GET /api/v1/repositories/lake/commits/" + seal: {200, commit(seal, "lakewap", "b1", from)}})
		ctx := context.Background()
		if _, err := cl.GetCommit(ctx, "lake", seal); err != nil {
			t.Fatal(err)
		}
		if _, on, err := cl.SealedOn(ctx, "lake", seal, from, nil); err != nil || on {
			t.Errorf("SealedOn of a commit only read = %v, %v; want false", on, err)
		}
	})
	t.Run("a commit this client did not make", func(t *testing.T) {
		cl, _ := newFake(t, map[string]answer{})
		if _, on, err := cl.SealedOn(context.Background(), "lake", seal, from, []string{seal}); err != nil || on {
			t.Errorf("SealedOn = %v, %v; want false", on, err)
		}
	})
}
