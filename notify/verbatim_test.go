package notify

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

// TestSlackDoesNotAutoParseData: escaping &, < and > keeps data from
// writing Slack's manual mentions and links (<!channel>, <url|label>), but a
// mrkdwn text object that is not verbatim (Slack's default) is parsed by
// Slack besides: "URLs will be auto-converted into links, conversation
// names will be link-ified, and certain mentions will be automatically
// parsed" (Block Kit's text object reference). Data reaches these objects
// from writers and producers: the object paths a batch changes outside its
// tables (any name a writer gives an object), a producer's write names and
// reasons, check messages quoting values, sample rows, a commit's message.
// So an object named "gold/x/@channel urgent: re-login at
// https://evil.test/login" turned lakewap's abort message into a link to
// the writer's page, and the channel name and the mention into Slack's.
// Every mrkdwn text object lakewap sends is verbatim: Slack still renders
// its formatting, links and mentions (the route's, <!subteam^...>) and
// leaves the data as text.
func TestSlackDoesNotAutoParseData(t *testing.T) {
	const bait = "gold/x/@channel urgent: re-login at https://evil.test/login or ask in #general"
	aborted := abortedAuditEvent()
	aborted.Detail = "1 path(s) outside the dataset's tables: " + bait
	aborted.Report.Checks[0].Message = bait
	aborted.Report.Checks[0].SampleRows = []string{bait}
	failed := failedEvent()
	failed.Error = bait
	change := schemas.UnattestedChange{Dataset: "orders", Repository: "lake", TargetRef: "main", CommitID: "c0ffee1234567890",
		Kind: schemas.ChangeUnattestedCommit, Committer: "@here", Message: bait, Detail: bait, BatchID: "b-42", EventID: "ev-1",
		OccurredAt: time.Unix(0, 0)}
	var msgs []message
	for _, n := range []Notification{note(aborted, schemas.StateAborted), note(failed, schemas.StateFailed)} {
		n.Mention = oncall
		r := runOf(n)
		msgs = append(msgs, mainMessage(r, links{base: testUI}))
		if th, ok := threadMessage(r); ok {
			msgs = append(msgs, th)
		}
	}
	msgs = append(msgs, announcementMessage(change, oncall, links{base: testUI}))
	sawBait, sawMention := false, false
	for _, m := range msgs {
		for _, b := range m.Blocks {
			raw := renderRaw(b)
			sawBait = sawBait || strings.Contains(raw, "https://evil.test/login")
			sawMention = sawMention || strings.Contains(raw, oncall)
			for _, o := range textObjects(t, raw) {
				if o.Type == slack.MarkdownType && !o.Verbatim {
					t.Errorf("a %s block sends mrkdwn Slack will auto-parse (verbatim false): %q", b.BlockType(), o.Text)
				}
			}
		}
	}
	if !sawBait || !sawMention {
		t.Fatalf("the messages hold the data: %v, the route's mention: %v; want both (the test checks nothing otherwise)", sawBait, sawMention)
	}
}

// textObjects are the text objects in a block's JSON, at any depth.
func textObjects(t *testing.T, raw string) []slack.TextBlockObject {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	var out []slack.TextBlockObject
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if typ, ok := x["type"].(string); ok && (typ == slack.MarkdownType || typ == slack.PlainTextType) {
				if text, ok := x["text"].(string); ok {
					verbatim, _ := x["verbatim"].(bool)
					out = append(out, slack.TextBlockObject{Type: typ, Text: text, Verbatim: verbatim})
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestSlackDataCannotStartALine: lakeFS takes object names with line
// breaks, and the paths a batch changes outside its tables are the abort's
// detail: a writer's object "tmp/x\n\n:white_check_mark: *Published.* Next:
// nothing to do" made lakewap's abort message show a line of the writer's
// own, emphasis and emoji rendered, under lakewap's name (measured through
// the daemon on lakeFS v1.84.0: the BatchAborted detail held the line
// breaks). Check messages, errors and commit messages are data too. Line
// breaks and other control characters in data, and bidirectional
// overrides, are shown escaped (\n), so data stays on the line lakewap put
// it on.
func TestSlackDataCannotStartALine(t *testing.T) {
	const forged = "tmp/x\n\n:white_check_mark: *Published.* Next: nothing to do \u202e"
	aborted := abortedAuditEvent()
	aborted.Detail = "1 path(s) outside the dataset's tables: " + forged
	for i := range aborted.Report.Checks {
		aborted.Report.Checks[i].Message = forged
	}
	change := schemas.UnattestedChange{Dataset: "orders", Repository: "lake", TargetRef: "main", CommitID: "c0ffee1234567890",
		Kind: schemas.ChangeUnattestedCommit, Committer: "ci\r\nbot", Message: forged, Detail: forged, BatchID: "b-42", EventID: "ev-1",
		OccurredAt: time.Unix(0, 0)}
	r := runOf(note(aborted, schemas.StateAborted))
	th, _ := threadMessage(r)
	msgs := map[string]message{"main": mainMessage(r, links{base: testUI}), "thread": th,
		"announcement": announcementMessage(change, "", links{base: testUI})}
	saw := false
	for name, m := range msgs {
		for _, b := range m.Blocks {
			for _, o := range textObjects(t, renderRaw(b)) {
				if !strings.Contains(o.Text, "Published.") {
					continue
				}
				saw = true
				for _, line := range strings.Split(o.Text, "\n") {
					if strings.Contains(line, ":white_check_mark: *Published.*") && !strings.Contains(line, `tmp/x\n\n`) {
						t.Errorf("%s: data starts a line of its own: %q", name, o.Text)
					}
				}
				if strings.ContainsAny(o.Text, "\r\u202e") {
					t.Errorf("%s: data's control characters sent as they are: %q", name, o.Text)
				}
			}
		}
	}
	if !saw {
		t.Fatal("no message shows the data: the test checks nothing")
	}
}

// Sample rows are shown one per line in their code block, as the audit
// gave them: the line breaks between rows are lakewap's, not data's. After
// d854c43 escaped data's line breaks, the rows ran together on one line
// joined by a literal \n (seen in the demo's thread message). A row's own
// control characters are still shown escaped.
func TestSampleRowsKeepTheirLines(t *testing.T) {
	rep := failingReport()
	bad := &rep.Checks[1]
	bad.SampleRows = append(bad.SampleRows[:2:2], "{\"id\":13,\"note\":\"a\u202eb\"}")
	text := checkText(*bad)
	for _, row := range bad.SampleRows[:2] {
		if !slices.Contains(strings.Split(text, "\n"), esc(row)) {
			t.Errorf("sample row %s is not a line of its own in:\n%s", row, text)
		}
	}
	if strings.Contains(text, `}\n{`) {
		t.Errorf("sample rows joined by a literal \\n:\n%s", text)
	}
	if strings.ContainsRune(text, '\u202e') {
		t.Errorf("a row's bidi override sent as it is:\n%s", text)
	}
}
