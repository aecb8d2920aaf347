package schemas

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// An UnattestedChange carries a commit's message and committer, which
// whoever committed chose: clipped, the event stays within its budget
// whatever they hold, and its texts stay valid UTF-8.
func TestUnattestedChangeStaysWithinItsBudget(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	e := UnattestedChange{EventID: UnattestedChangeID("r", "main", ChangeUnattestedCommit, "c"), Kind: ChangeUnattestedCommit,
		BatchID: long("b", MaxBatchIDLen), Dataset: long("d", MaxDatasetLen), Repository: long("r", 63), TargetRef: long("t", MaxRefLen),
		CommitID: long("c", 64), Committer: long("\x01", 10000), Message: long("€\x02\"", 100000), Detail: long("é", 5000),
		Suite: long("5", 32), PreviousSuite: long("6", 32), PublishedCommitID: long("p", 64), OccurredAt: time.Now()}.Clip()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxUnattestedChangeBytes {
		t.Errorf("%d bytes of JSON, over the budget of %d", len(b), MaxUnattestedChangeBytes)
	}
	for _, s := range []string{e.Committer, e.Message, e.Detail} {
		if !utf8.ValidString(s) || !strings.Contains(s, "bytes clipped") {
			t.Errorf("clipped text %q is not valid UTF-8 ending in the cut mark", s[:min(len(s), 20)])
		}
	}
	if len(e.Message) > maxChangeMessage || len(e.Detail) > maxChangeDetail {
		t.Errorf("message %d bytes, detail %d: over their budgets", len(e.Message), len(e.Detail))
	}
}

// The announcement of one commit has one id, whichever batch sends it.
func TestUnattestedChangeIDIsPerCommit(t *testing.T) {
	a := UnattestedChangeID("lake", "main", ChangeUnattestedCommit, "c1")
	for _, other := range []string{
		UnattestedChangeID("lake", "main", ChangeUnattestedCommit, "c2"),
		UnattestedChangeID("lake", "dev", ChangeUnattestedCommit, "c1"),
		UnattestedChangeID("lake", "main", ChangeSuiteChanged, "c1"),
	} {
		if other == a {
			t.Errorf("two announcements share the id %s", a)
		}
	}
	if UnattestedChangeID("lake", "main", ChangeUnattestedCommit, "c1") != a {
		t.Error("the id of one announcement changes")
	}
}
