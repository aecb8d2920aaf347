package auditsource

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
)

// TestLimits63FatCommitsDoNotHideTheLogOfTheTarget, on the real lakeFS
// server: lakeFS takes a commit's metadata of any size from whoever may
// commit on the target, and lists it whole in the log. A log page is read
// to 64 MiB: two hand commits of 33 MiB of metadata on main made every
// read of main's log fail ("answer over 67108864 bytes"): each publish's
// look for the commits lakewap did not attest under its merge (none was
// announced, the hand commits included, for the next 64 publishes),
// reverts' search for the batch's merge, and lakewap verify (exit 2). The
// log is read in smaller pages when one is over, and a commit of more than
// lakefs.MaxCommitAnswer of message and metadata (none of lakewap's) is
// kept without its metadata: it is listed, and judged not attested.
func TestLimits63FatCommitsDoNotHideTheLogOfTheTarget(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	var fat []string
	for i := range 2 {
		if err := s.lake.Upload(ctx, "lake", "main", fmt.Sprintf("other/hand-%d", i), strings.NewReader("z")); err != nil {
			t.Fatal(err)
		}
		id, err := s.lake.Commit(ctx, "lake", "main", "a hand commit", map[string]string{"x-note": strings.Repeat("m", 33<<20)})
		if err != nil {
			t.Fatalf("lakeFS refused a commit of 33 MiB of metadata (the premise): %.300v", err)
		}
		fat = append(fat, id)
	}
	if err := s.lake.Upload(ctx, "lake", "main", "other/after", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	head := s.commit(t, "main", "after")

	commits, err := s.lake.FirstParents(ctx, "lake", "main", time.Time{}, 65)
	if err != nil {
		t.Fatalf("main's log: %.300v; want it read", err)
	}
	var ids []string
	held := 0
	for _, c := range commits {
		ids = append(ids, c.ID)
		held += len(c.Message) + len(c.Committer)
		for k, v := range c.Metadata {
			held += len(k) + len(v)
		}
	}
	if len(commits) < 3 || commits[0].ID != head || commits[1].ID != fat[1] || commits[2].ID != fat[0] {
		t.Fatalf("main's log: %v; want %s, then %v", ids, head, []string{fat[1], fat[0]})
	}
	if held > 1<<20 {
		t.Errorf("main's log held %d bytes of messages and metadata; want the fat commits' metadata left out", held)
	}
	c := commits[1]
	verdict, detail := audit.Verify(audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}, "d", "digest", nil)
	if verdict != audit.VerifyUnattested {
		t.Errorf("the fat commit: %s %q; want it not attested", verdict, detail)
	}
	if !strings.Contains(c.Message, "metadata") {
		t.Errorf("the fat commit's message %.200q; want it to say its metadata was left out", c.Message)
	}
}
