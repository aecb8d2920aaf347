package lakefs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRunnersLargeCommitReadsDoNotWaitBehindCallers (review 60): past its
// first FreeCommitAnswer bytes, a commit answer is read in one of
// MaxCommitReads places. Hook callers (every writer has the token) naming
// commits just under MaxCommitAnswer took every place, and the runner's
// read of a commit of its own over 64 KiB (a publish's merge, whose
// metadata holds up to 64 attributes of the producer's, each up to 1 KiB)
// waited behind all of theirs, or failed at its deadline. The callers'
// view of the client (Outside) has places of its own.
//
// The callers' places are taken here for as long as the test runs; the
// deadline is only there so that a read that waits fails instead of
// hanging, and a passing read never comes near it.
func TestRunnersLargeCommitReadsDoNotWaitBehindCallers(t *testing.T) {
	merge := strings.Repeat("f", 64)
	meta := map[string]string{}
	for i := range 64 {
		meta[strings.Repeat(string(rune('a'+i%26)), 1+i/26)+"_attr"] = strings.Repeat("v", 1024)
	}
	body, err := json.Marshal(map[string]any{"id": merge, "parents": []string{strings.Repeat("a", 64), strings.Repeat("b", 64)},
		"committer": "lakewap", "message": "publish", "creation_date": 1, "meta_range_id": "", "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	if len(body) <= FreeCommitAnswer {
		t.Fatalf("the merge commit's answer is %d bytes; the test needs one over %d", len(body), FreeCommitAnswer)
	}
	cl, _ := newFake(t, map[string]answer{"GET /api/v1/repositories/lake/commits/" + merge: {200, string(body)}})
	callers := cl.Outside()
	if callers == cl {
		t.Fatal("Outside is the client itself")
	}
	for range MaxCommitReads { // hook callers reading large commits hold every place of theirs
		callers.commitRoom <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := cl.GetCommit(ctx, "lake", merge)
	if err != nil || len(cm.Metadata) != 64 {
		t.Fatalf("the runner's read of its merge commit while callers held their places: %d attributes, %v; want 64, no error", len(cm.Metadata), err)
	}
}
