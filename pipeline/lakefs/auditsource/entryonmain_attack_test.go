package auditsource

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestLimits63EntryAlreadyOnTheTargetIsNamedAsTheTargets, on the real
// lakeFS server. An object past a listing's per-entry limits (here a
// claimed checksum of 4 KiB, which lakeFS's linkPhysicalAddress takes)
// that reached main by other means than a batch (a hand commit on main, a
// writer allowed to link there) made every later batch's audit of its
// table refuse the listing, with an error naming only the path and the
// limit: the operator read it as the batch's fault, and each batch of the
// dataset failed the same way for ever. The batch bringing such an entry
// is refused (TestWritersLongEntriesAreRefusedNotLeftOut); one already on
// the target is named as the target's, not the batch's, with how to let
// the dataset's batches through again (remove it from the target).
func TestLimits63EntryAlreadyOnTheTargetIsNamedAsTheTargets(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	if err := s.lake.Upload(ctx, "lake", "main", "other/seed", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	seed := s.commit(t, "main", "seed")
	// The hand commit on main: an object of the table claiming a 4 KiB checksum.
	bad := relinkPrefix + "batch=0/part-0.csv"
	s.relink(t, "main", bad, relinkGood, strings.Repeat("f", 4096), int64(len(relinkGood)))
	mainHead := s.commit(t, "main", "a hand commit")

	// An honest batch of the table, after it.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "honest", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "honest", relinkPrefix+"batch=1/part-0.csv", strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	sealed := s.commit(t, "honest", "the honest batch")

	rep, err := newRelinkEngine(t, s.src).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake",
		Ref: sealed, BaseRef: mainHead, BaseName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed {
		t.Fatalf("the audit of a table holding a 4 KiB checksum passed: %s", notNullStatus(rep))
	}
	msg := ""
	for _, c := range rep.Checks {
		if c.Kind == audit.KindNotNull {
			msg = c.Message
		}
	}
	for _, want := range []string{bad, "checksum", "256", "already on main", "not this batch's", "remove it from main"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the honest batch's not_null: %q; want it to say %q", msg, want)
		}
	}

	// relinked_objects' listings of the whole repository say so too.
	if _, err := s.lake.Relinked(ctx, "lake", sealed, "main"); err == nil || !strings.Contains(err.Error(), "already on the merge-base with main") {
		t.Errorf("relinked paths of the honest batch: err %v; want the entry named as the merge-base's", err)
	}

	// The batch that brings such an entry is refused as the batch's own
	// (onto main before the hand commit).
	if _, err := s.lake.EnsureBranch(ctx, "lake", "brings", seed); err != nil {
		t.Fatal(err)
	}
	p := relinkPrefix + "batch=2/part-0.csv"
	s.relink(t, "brings", p, relinkGood, strings.Repeat("e", 4096), int64(len(relinkGood)))
	sealed = s.commit(t, "brings", "the batch bringing one")
	objs, err := s.src.List(ctx, "lake", sealed, relinkPrefix+"batch=2/")
	if !errors.Is(err, lakefs.ErrEntryOverLimit) || !strings.Contains(err.Error(), p) {
		t.Fatalf("listing the batch's own entry: %d objects, err %v; want it refused naming %s", len(objs), err, p)
	}
	rep, err = newRelinkEngine(t, s.src).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake",
		Ref: sealed, BaseRef: seed, BaseName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Kind == audit.KindNotNull && (c.Status == "pass" || !strings.Contains(c.Message, p) || strings.Contains(c.Message, "not this batch's")) {
			t.Errorf("the batch bringing a 4 KiB checksum: not_null %s %q; want it refused as the batch's", c.Status, c.Message)
		}
	}
}
