package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// The announcements of a publish: the commits lakewap did not attest above
// the newest one it did (so each is announced by one publish only), a suite
// change of the dataset, and nothing for the history before lakewap's
// first publish on the target.
func TestUnattestedUnder(t *testing.T) {
	suite := audit.Suite{Checks: []audit.Check{{Name: "id_unique", Kind: "unique", Table: "t"}}}
	now, old := audit.SuiteDigest(suite), audit.SuiteDigest(audit.Suite{})
	n := 0
	id := func() string { n++; return fmt.Sprintf("%064x", n) }
	// publish is a commit attested for dataset by digest, on parent.
	publish := func(dataset, digest, parent string) lakefs.Commit {
		sealed := id()
		att, err := audit.Attestation{Dataset: dataset, Suite: digest, Sealed: sealed, Against: parent, Mode: audit.ModeFull}.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return lakefs.Commit{ID: id(), Parents: []string{parent, sealed}, Metadata: map[string]string{audit.MetaAttestation: att}, Committer: "lakewap"}
	}
	direct := func(parent, msg string) lakefs.Commit {
		return lakefs.Commit{ID: id(), Parents: []string{parent}, Message: msg, Committer: "ana"}
	}
	// chain builds newest-first history from oldest-first makers, each on
	// the one before; the first is the repository's root.
	chain := func(makers ...func(parent string) lakefs.Commit) []lakefs.Commit {
		out := []lakefs.Commit{{ID: id()}}
		for _, m := range makers {
			out = append([]lakefs.Commit{m(out[0].ID)}, out...)
		}
		return out
	}
	pub := func(dataset, digest string) func(string) lakefs.Commit {
		return func(p string) lakefs.Commit { return publish(dataset, digest, p) }
	}
	hand := func(msg string) func(string) lakefs.Commit {
		return func(p string) lakefs.Commit { return direct(p, msg) }
	}
	// raced is a publish judged against its parent's parent, merged onto
	// its parent: a commit made between its look and its merge.
	firstParent := map[string]string{}
	raced := func(p string) lakefs.Commit {
		c := publish("billing", now, firstParent[p])
		c.Parents[0] = p
		att, err := audit.Attestation{Dataset: "billing", Suite: now, Sealed: c.Parents[1], Against: firstParent[p], Mode: audit.ModeIncremental}.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Metadata[audit.MetaAttestation] = att
		return c
	}
	handKept := func(msg string) func(string) lakefs.Commit {
		return func(p string) lakefs.Commit {
			c := direct(p, msg)
			firstParent[c.ID] = p
			return c
		}
	}
	run := pipeline.Run{BatchID: "b9", Dataset: "billing", Repository: "lake", Target: "main"}
	for _, tt := range []struct {
		name    string
		commits []lakefs.Commit
		cut     bool
		want    []string // kind:message of each announcement
	}{
		{"after a publish", chain(pub("billing", now), pub("billing", now)), false, nil},
		{"first publish on a target", chain(hand("seed"), hand("more"), pub("billing", now)), false, nil},
		{"a direct commit", chain(pub("billing", now), hand("by hand"), pub("billing", now)), false, []string{"unattested_commit:by hand"}},
		{"two, newest first", chain(pub("billing", now), hand("one"), hand("two"), pub("billing", now)), false,
			[]string{"unattested_commit:two", "unattested_commit:one"}},
		{"under another dataset's publish: its announcement", chain(pub("billing", now), hand("by hand"), pub("orders", "x"), pub("billing", now)), false, nil},
		{"suite changed", chain(pub("billing", old), pub("billing", now)), false, []string{"suite_changed:"}},
		{"suite changed, behind another dataset", chain(pub("billing", old), pub("orders", "x"), pub("billing", now)), false, []string{"suite_changed:"}},
		{"no publish within the commits read", chain(hand("a"), hand("b"), pub("billing", now)), true, nil},
		// review 48: a commit between a publish's look and its merge.
		{"landed on a commit after its look", chain(pub("billing", now), handKept("raced"), raced), false, []string{"unattested_commit:raced"}},
		{"under a publish that landed elsewhere: its announcement", chain(pub("billing", now), handKept("raced"), raced, pub("billing", now)), false, nil},
	} {
		got := unattestedUnder(run, tt.commits, now, nil, "lakewap", tt.cut)
		var kinds []string
		for _, c := range got {
			kinds = append(kinds, c.Kind+":"+c.Message)
			if c.PublishedCommitID != tt.commits[0].ID || c.BatchID != "b9" || c.EventID != schemas.UnattestedChangeID("lake", "main", c.Kind, c.CommitID) {
				t.Errorf("%s: announcement %+v does not name the publish, batch and its stable id", tt.name, c)
			}
		}
		for _, c := range got {
			if strings.HasPrefix(tt.name, "landed") && !strings.Contains(c.Detail, "landed on it") {
				t.Errorf("%s: detail %q does not say the publish landed on it", tt.name, c.Detail)
			}
		}
		if fmt.Sprint(kinds) != fmt.Sprint(tt.want) {
			t.Errorf("%s: announced %v, want %v", tt.name, kinds, tt.want)
		}
	}
}
