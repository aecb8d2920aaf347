package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
)

// A writer who may commit to the target chooses an unattested commit's
// message and (through createCommitRecord) its committer, with no bound
// lakeFS keeps; lakewap verify's table names both, and must not hand the
// operator's terminal a line of whatever size the writer chose, nor what a
// terminal would act on.
func TestVerifyTableBoundsAWritersMessageAndCommitter(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	evil := "\x1b]0;owned\x07 \u009b2J \u202e"
	lines := []VerifiedCommit{
		{Commit: strings.Repeat("a", 64), Date: time.Unix(0, 0).UTC(), Verdict: audit.VerifyUnattested,
			Detail: "no lakewap attestation", Message: evil + huge + "tail-of-message", Committer: evil + huge + "tail-of-committer"},
		{Commit: strings.Repeat("b", 64), Date: time.Unix(0, 0).UTC(), Verdict: audit.VerifyAttested,
			Detail: "publish of abc", Message: huge, Committer: huge},
	}
	var out bytes.Buffer
	writeVerified(&out, lines)
	for i, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if len(l) > maxVerifyDetailBytes+100 {
			t.Errorf("line %d is %d bytes: %.120q…", i, len(l), l)
		}
	}
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\u202e", "tail-of-"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("table holds %q", c)
		}
	}
	if !strings.Contains(out.String(), "bytes clipped") {
		t.Errorf("table does not say the message was clipped:\n%.400s", out.String())
	}
}
