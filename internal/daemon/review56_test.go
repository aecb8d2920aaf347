package daemon

import (
	"fmt"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestReview56SomeoneElsesMergeDoesNotEndTheAnnouncements (review 56): a
// publish announces the commits on the target lakewap did not attest,
// down to the newest one it did. A merge into the target carries whatever
// metadata its maker gives it: a person who may merge (not an operator)
// merged the sealed commit of an earlier publish again (lakeFS's
// allow_empty) with that publish's attestation copied, or wrote an
// attestation matching their own merge (no audit.attestation_key), and the
// search ended there: their commit and the direct commit beneath it were
// never announced. lakeFS names the caller of a merge as its committer, so
// a commit lakewap's own user did not make is no publish of lakewap's.
func TestReview56SomeoneElsesMergeDoesNotEndTheAnnouncements(t *testing.T) {
	suite := audit.SuiteDigest(audit.Suite{Checks: []audit.Check{{Name: "id_unique", Kind: "unique", Table: "t"}}})
	n := 0
	id := func() string { n++; return fmt.Sprintf("%064x", n) }
	attest := func(sealed, against string) map[string]string {
		att, err := audit.Attestation{Dataset: "billing", Suite: suite, Sealed: sealed, Against: against, Mode: audit.ModeFull}.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{audit.MetaAttestation: att}
	}
	const own = "lakewap"
	root := lakefs.Commit{ID: id()}
	s1 := id()
	p1 := lakefs.Commit{ID: id(), Parents: []string{root.ID, s1}, Metadata: attest(s1, root.ID), Committer: own}
	sneaky := lakefs.Commit{ID: id(), Parents: []string{p1.ID}, Message: "sneaky", Committer: "ana"}
	// The person's empty merge of p1's sealed commit, p1's attestation copied.
	copied := lakefs.Commit{ID: id(), Parents: []string{sneaky.ID, s1}, Message: "copied", Metadata: p1.Metadata, Committer: "mallory"}
	// The person's merge of a branch of theirs, attested to match it.
	side := id()
	forged := lakefs.Commit{ID: id(), Parents: []string{sneaky.ID, side}, Message: "forged", Metadata: attest(side, sneaky.ID), Committer: "mallory"}
	run := pipeline.Run{BatchID: "b56", Dataset: "billing", Repository: "lake", Target: "main"}
	for _, by := range []lakefs.Commit{copied, forged} {
		s2 := id()
		p2 := lakefs.Commit{ID: id(), Parents: []string{by.ID, s2}, Metadata: attest(s2, by.ID), Committer: own}
		commits := []lakefs.Commit{p2, by, sneaky, p1, root}
		var got []string
		for _, c := range unattestedUnder(run, commits, suite, nil, own, false) {
			got = append(got, c.Kind+":"+c.Message)
		}
		want := fmt.Sprint([]string{"unattested_commit:" + by.Message, "unattested_commit:sneaky"})
		if fmt.Sprint(got) != want {
			t.Errorf("under a %s merge by %s: announced %v, want %s", by.Message, by.Committer, got, want)
		}
	}
}
