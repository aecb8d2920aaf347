package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// ownHistory is a lakeSim that knows lakewap's user (OwnUser).
type ownHistory struct {
	*lakeSim
	own string
	err error
}

func (h ownHistory) OwnCommitter(context.Context) (string, error) { return h.own, h.err }

// TestReview57AttestationCountsOnLakewapsOwnCommit: a foundation carrying
// a valid attestation makes the audit incremental only when lakewap's own
// lakeFS user made it, when the History knows that user; a merge someone
// else made with an attestation in its metadata (lakeFS's merge takes any)
// makes it full, naming its committer. A History that does not know the
// user takes attestations as before; one that cannot say makes it full.
func TestReview57AttestationCountsOnLakewapsOwnCommit(t *testing.T) {
	lake := newLakeSim(t)
	suite := growingTable(t, lake, 2)
	c := lake.commits["c001"]
	c.Committer = "lakewap"
	lake.commits["c001"] = c
	ref := cid("b1")
	lake.branch(t, "c001", ref)
	lake.commit(ref, []string{"c001"}, nil)
	lake.write(t, ref, "data/t/batch-b1.parquet", "SELECT i AS id FROM range(1000, 1010) r(i)")
	for _, tc := range []struct {
		name     string
		hist     History
		mode     string
		inReason string
	}{
		{"lakewap made it", ownHistory{lakeSim: lake, own: "lakewap"}, ModeIncremental, ""},
		{"someone else made it", ownHistory{lakeSim: lake, own: "lakewap-prod"}, ModeFull, `lakewap did not make it: committer "lakewap", not lakewap's user "lakewap-prod"`},
		{"lakewap's user unknown", lake, ModeIncremental, ""},
		{"lakewap's user not named", ownHistory{lakeSim: lake}, ModeIncremental, ""},
		{"lakeFS cannot say", ownHistory{lakeSim: lake, err: errors.New("503")}, ModeFull, "who lakewap is to lakeFS could not be read: 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: tc.hist})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Suite: suite, Repository: "r", Ref: ref, BaseRef: "c001", BaseName: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mode != tc.mode || !strings.Contains(rep.ModeReason, tc.inReason) || !rep.Passed {
				t.Errorf("mode %s (%q), passed %v; want %s (%q), passed", rep.Mode, rep.ModeReason, rep.Passed, tc.mode, tc.inReason)
			}
		})
	}
}

// TestReview57PublishesBeneathAreLakewapsOwn: under another dataset's
// publish (c002) the audit takes this dataset's publish (c001) when nothing
// under its tables changed between them; each of the two must be a commit
// lakewap's user made.
func TestReview57PublishesBeneathAreLakewapsOwn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c001, c002 string // committers
		mode       string
	}{
		{"both lakewap's", "lakewap", "lakewap", ModeIncremental},
		{"the other dataset's publish by someone else", "lakewap", "writer", ModeFull},
		{"this dataset's publish by someone else", "writer", "lakewap", ModeFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lake := newLakeSim(t)
			suite := growingTable(t, lake, 2)
			c := lake.commits["c001"]
			c.Committer = tc.c001
			lake.commits["c001"] = c
			lake.branch(t, "c001", "se")
			lake.commit("se", []string{"c001"}, nil)
			lake.write(t, "se", "data/u/part-0.parquet", "SELECT 1::BIGINT AS id")
			other := Suite{Tables: []Table{{Name: "u", Path: "data/u/"}}, Checks: []Check{{Kind: KindRowCount, Table: "u", Min: f64(1)}}}
			text, err := NewAttestation("e", other, passingReport(other), "se", "c001").Encode(nil)
			if err != nil {
				t.Fatal(err)
			}
			lake.mergeDirs(t, "c001", "se", "c001", "c002")
			lake.commit("c002", []string{"c001", "se"}, map[string]string{MetaAttestation: text})
			c = lake.commits["c002"]
			c.Committer = tc.c002
			lake.commits["c002"] = c
			lake.branch(t, "c002", "s1")
			lake.commit("s1", []string{"c002"}, nil)
			lake.write(t, "s1", "data/t/batch-s1.parquet", "SELECT i AS id FROM range(1000, 1010) r(i)")
			e, err := New(Options{Source: lake, WorkDir: t.TempDir(), History: ownHistory{lakeSim: lake, own: "lakewap"}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Suite: suite, Repository: "r", Ref: "s1", BaseRef: "c002", BaseName: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Mode != tc.mode || !rep.Passed {
				t.Errorf("mode %s (%q), passed %v; want %s, passed", rep.Mode, rep.ModeReason, rep.Passed, tc.mode)
			}
		})
	}
}
