package notify

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

// slackLimits checks blocks against Slack's documented limits of a message
// (Block Kit: 50 blocks; header text 150 characters; section text 3,000,
// 10 fields of 2,000; context 10 elements; message text 40,000).
func slackLimits(t *testing.T, what string, m message) {
	t.Helper()
	if n := utf8.RuneCountInString(m.Text); n > 40000 {
		t.Errorf("%s: text of %d characters", what, n)
	}
	if len(m.Blocks) > 50 {
		t.Errorf("%s: %d blocks", what, len(m.Blocks))
	}
	for i, b := range m.Blocks {
		switch x := b.(type) {
		case *slack.HeaderBlock:
			if n := utf8.RuneCountInString(x.Text.Text); n > 150 {
				t.Errorf("%s: block %d: header of %d characters", what, i, n)
			}
		case *slack.SectionBlock:
			if x.Text != nil && utf8.RuneCountInString(x.Text.Text) > 3000 {
				t.Errorf("%s: block %d: section text of %d characters", what, i, utf8.RuneCountInString(x.Text.Text))
			}
			if len(x.Fields) > 10 {
				t.Errorf("%s: block %d: %d fields", what, i, len(x.Fields))
			}
			for _, f := range x.Fields {
				if n := utf8.RuneCountInString(f.Text); n > 2000 {
					t.Errorf("%s: block %d: field of %d characters", what, i, n)
				}
			}
		case *slack.ContextBlock:
			if len(x.ContextElements.Elements) > 10 {
				t.Errorf("%s: block %d: %d context elements", what, i, len(x.ContextElements.Elements))
			}
			for _, e := range x.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok && utf8.RuneCountInString(tb.Text) > 3000 {
					t.Errorf("%s: block %d: context text of %d characters", what, i, utf8.RuneCountInString(tb.Text))
				}
			}
		}
	}
}

// Every message lakewap posts stays within Slack's limits whatever the
// data says, at the bounds of every field that reaches it (a batch id of
// 200 characters that all escape, a dataset of 128, details, errors and
// check messages at their budgets, in characters that escape to five):
// Slack refuses a message over them (invalid_blocks), and the batch's
// outcome would not be seen there. A guard of review 7: it held.
func TestSlackMessagesStayWithinSlacksLimits(t *testing.T) {
	amp := func(n int) string { return strings.Repeat("&", n) }
	rep := &schemas.AuditReport{Dataset: amp(128), Ref: "c1", ModeReason: amp(1024)}
	for i := range 40 {
		c := schemas.CheckResult{Name: fmt.Sprintf("c%d", i) + amp(120), Kind: "sql", Table: amp(128), Severity: "error",
			Status: schemas.StatusFail, Observed: amp(1024), Threshold: amp(1024), Message: amp(1024)}
		for range 5 {
			c.SampleRows = append(c.SampleRows, `{"v":"`+amp(2000)+`"}`)
		}
		rep.Checks = append(rep.Checks, c)
	}
	batch := strings.Repeat("@", schemas.MaxBatchIDLen)
	aborted := schemas.BatchAborted{EventID: amp(32), BatchID: batch, Dataset: amp(128), Repository: amp(63), Branch: amp(128),
		Reason: schemas.ReasonAuditFailed, Detail: amp(4096), Report: rep, TargetRef: amp(128)}
	failed := schemas.BatchFailed{EventID: amp(32), BatchID: batch, Dataset: amp(128), Repository: amp(63), Branch: amp(128),
		State: "auditing", Error: amp(2048), Attempts: 9, TargetRef: amp(128)}
	l := links{base: testUI}
	for _, tc := range []struct {
		name  string
		n     Notification
		state string
	}{
		{"aborted", Notification{Event: aborted, Mention: "<!subteam^S1>"}, schemas.StateAborted},
		{"failed", Notification{Event: failed, Mention: "<!subteam^S1>"}, schemas.StateFailed},
	} {
		tc.n.State, tc.n.Dataset, tc.n.BatchID = tc.state, amp(128), batch
		r := runOf(tc.n)
		slackLimits(t, tc.name+" main", mainMessage(r, l))
		if th, ok := threadMessage(r); ok {
			slackLimits(t, tc.name+" thread", th)
			// The incoming webhook posts both as one message.
			m := mainMessage(r, l)
			slackLimits(t, tc.name+" webhook", message{Text: m.Text, Blocks: append(append(m.Blocks, slack.NewDividerBlock()), th.Blocks...)})
		}
	}
	c := schemas.UnattestedChange{EventID: amp(32), Kind: schemas.ChangeSuiteChanged, BatchID: batch, Dataset: amp(128), Repository: amp(63),
		TargetRef: amp(128), CommitID: amp(64), Committer: amp(256), Message: amp(256), Detail: amp(512), Suite: amp(32), PreviousSuite: amp(1024)}
	slackLimits(t, "announcement", announcementMessage(c, "<!subteam^S1>", l))
}
