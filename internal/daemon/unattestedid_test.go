package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// lakeFS's createCommitRecord takes a commit's id from its caller, a
// writer of the repository, and a commit record moved onto the target is
// announced by the next publish (UnattestedChange, on the results topic,
// in the run's outbox and on Slack). Its id is the writer's bytes, of any
// size and any characters: the announcement must stay within its budget,
// and its id must stay the full id's.
func TestAnnouncedCommitIDIsWithinTheBudget(t *testing.T) {
	suite := audit.SuiteDigest(audit.Suite{Checks: []audit.Check{{Name: "id_unique", Kind: "unique", Table: "t"}}})
	// publish is lakewap's merge on parent, judged against against.
	publish := func(id, parent, against, sealed string) lakefs.Commit {
		att, err := audit.Attestation{Dataset: "billing", Suite: suite, Sealed: sealed, Against: against, Mode: audit.ModeFull}.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return lakefs.Commit{ID: id, Parents: []string{parent, sealed}, Metadata: map[string]string{audit.MetaAttestation: att}, Committer: "lakewap"}
	}
	hex := func(c byte) string { return strings.Repeat(string(c), 64) }
	forged := "\n*URGENT* \x1b]0;owned\x07" + strings.Repeat("f", 1<<20)
	commits := []lakefs.Commit{
		// The forged record came after the publish's look (an attestation
		// cannot name such an id): the publish landed on it.
		publish(hex('c'), forged, hex('b'), hex('d')),
		{ID: forged, Parents: []string{hex('b')}, Message: "by hand", Committer: "ana"},
		publish(hex('b'), hex('a'), hex('a'), hex('e')),
		{ID: hex('a')},
	}
	run := pipeline.Run{BatchID: "b9", Dataset: "billing", Repository: "lake", Target: "main"}
	got := unattestedUnder(run, commits, suite, nil, "lakewap", false)
	if len(got) != 1 {
		t.Fatalf("announcements %d, want the forged commit's", len(got))
	}
	c := got[0]
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > schemas.MaxUnattestedChangeBytes {
		t.Errorf("announcement of %d bytes of JSON, over its budget of %d", len(b), schemas.MaxUnattestedChangeBytes)
	}
	if c.EventID != schemas.UnattestedChangeID("lake", "main", c.Kind, forged) {
		t.Errorf("event id %s is not the forged commit's full id's", c.EventID)
	}
	if strings.ContainsAny(c.CommitID, "\n\x1b\x07") {
		t.Errorf("announced commit id holds control characters: %.40q", c.CommitID)
	}
}
