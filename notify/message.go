package notify

import (
	"cmp"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

// Limits that keep a message inside Slack's block limits (3000 characters
// per section text, 2000 per field, 150 per header) and readable at 3 a.m.
const (
	maxSectionText = 2900
	maxFieldText   = 1900
	maxHeaderText  = 150
	maxChecks      = 8
	maxSampleRows  = 3
	maxSampleRow   = 300
	maxWarnNames   = 5
)

// run is what a message says about a run, gathered from the notification
// and its event.
type run struct {
	Dataset, BatchID, State string
	Repo, Branch            string
	Reason, Detail          string
	CommitID, TargetRef     string
	Report                  *schemas.AuditReport
	Duration                time.Duration
	BranchKept              bool
	Error, FailedIn         string
	Attempts                int
	LakeFSURI, S3URI        string
	ExpectedWrites          []string
	WriteDeadline           *time.Time
	EventID                 string
	Mention                 string
}

func runOf(n Notification) run {
	r := run{Dataset: n.Dataset, BatchID: n.BatchID, State: n.State, Repo: n.Repository,
		Branch: n.Branch, EventID: EventID(n.Event), Mention: n.Mention}
	// The event's names, where it has them, win over the notification's.
	where := func(dataset, batchID, repo, branch string) {
		r.Dataset, r.BatchID = cmp.Or(dataset, r.Dataset), cmp.Or(batchID, r.BatchID)
		r.Repo, r.Branch = cmp.Or(repo, r.Repo), cmp.Or(branch, r.Branch)
	}
	switch e := deref(n.Event).(type) {
	case schemas.BranchReady:
		where(e.Dataset, e.BatchID, e.Repository, e.Branch)
		r.LakeFSURI, r.S3URI, r.ExpectedWrites, r.WriteDeadline = e.LakeFSURI, e.S3URI, e.ExpectedWrites, e.WriteDeadline
	case schemas.BatchPublished:
		where(e.Dataset, e.BatchID, e.Repository, e.Branch)
		r.CommitID, r.TargetRef, r.Report = e.CommitID, e.TargetRef, &e.Report
		r.Duration = time.Duration(e.DurationMs) * time.Millisecond
	case schemas.BatchAborted:
		where(e.Dataset, e.BatchID, e.Repository, e.Branch)
		r.Reason, r.Detail, r.Report, r.BranchKept = e.Reason, e.Detail, e.Report, e.BranchKept
		r.TargetRef = e.TargetRef
		r.Duration = time.Duration(e.DurationMs) * time.Millisecond
	case schemas.BatchFailed:
		where(e.Dataset, e.BatchID, e.Repository, e.Branch)
		r.Error, r.FailedIn, r.Attempts, r.BranchKept = e.Error, e.State, e.Attempts, e.BranchKept
		r.TargetRef = e.TargetRef
		if !n.LandedAt.IsZero() && e.OccurredAt.After(n.LandedAt) {
			r.Duration = e.OccurredAt.Sub(n.LandedAt)
		}
	}
	return r
}

// deref turns a pointer to an event into the value so one switch serves both.
func deref(ev schemas.Event) schemas.Event {
	if v := reflect.ValueOf(ev); v.Kind() == reflect.Pointer && !v.IsNil() {
		ev, _ = v.Elem().Interface().(schemas.Event)
	}
	return ev
}

// links builds lakeFS UI addresses; with no base URL it builds none.
type links struct{ base string }

func (l links) branch(repo, branch string) string {
	return l.to(repo, branch, "/objects?ref="+url.QueryEscape(branch))
}

func (l links) commit(repo, id string) string { return l.to(repo, id, "/commits/"+url.PathEscape(id)) }

// to is the address of path in repo, for a thing named id.
func (l links) to(repo, id, path string) string {
	if l.base == "" || repo == "" || id == "" {
		return ""
	}
	return l.base + "/repositories/" + url.PathEscape(repo) + path
}

// message is one Slack message: the fallback text (what notifications and
// screen readers show) and its blocks.
type message struct {
	Text   string
	Blocks []slack.Block
}

// options post or update m with the Web API.
func (m message) options() []slack.MsgOption {
	return []slack.MsgOption{slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...), slack.MsgOptionDisableLinkUnfurl()}
}

// outcome names what happened in a few words.
func (r run) outcome() (emoji, words string) {
	switch r.State {
	case schemas.StatePublished:
		return ":white_check_mark:", "published"
	case schemas.StateAborted:
		switch r.Reason {
		case schemas.ReasonAuditFailed:
			return ":no_entry:", "aborted: audit failed"
		case schemas.ReasonWriteTimeout:
			return ":hourglass:", "aborted: writes timed out"
		case schemas.ReasonCancelled:
			return ":heavy_minus_sign:", "aborted: cancelled"
		case schemas.ReasonMergeConflict:
			return ":twisted_rightwards_arrows:", "aborted: merge conflict"
		case schemas.ReasonInvalid:
			return ":warning:", "aborted: invalid batch"
		case schemas.ReasonTooManyRuns:
			return ":warning:", "aborted: too many runs in progress"
		case schemas.ReasonAuditCrashed:
			return ":boom:", "aborted: its audit took the process down"
		case schemas.ReasonUnauditedObjects:
			return ":no_entry:", "aborted: objects the audit did not read"
		}
		return ":no_entry:", "aborted"
	case schemas.StateFailed:
		return ":rotating_light:", "failed"
	case schemas.StatePending:
		return ":hourglass_flowing_sand:", "waiting for the batch to land"
	case schemas.StateLanded, schemas.StateAwaitingWrites:
		return ":inbox_tray:", "waiting for writes"
	case schemas.StateAuditing:
		return ":mag:", "auditing"
	case schemas.StatePublishing:
		return ":arrows_counterclockwise:", "publishing"
	}
	return ":grey_question:", strings.ReplaceAll(r.State, "_", " ")
}

func (r run) alarming() bool {
	return r.State == schemas.StateFailed || (r.State == schemas.StateAborted && r.Reason != schemas.ReasonCancelled)
}

// mainMessage is the one message a batch has: posted first, then updated
// in place as the run moves on.
func mainMessage(r run, l links) message {
	emoji, words := r.outcome()
	title := fmt.Sprintf("%s %s · batch %s", r.Dataset, words, r.BatchID)
	// The fallback text is mrkdwn too: escaped like the blocks, so event
	// data cannot mention anyone. (The header block is plain text.)
	text := esc(title)
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, clip(emoji+" "+title, maxHeaderText), true, false)),
	}
	if r.alarming() && r.Mention != "" {
		text = r.Mention + " " + text
		blocks = append(blocks, section(r.Mention+" this batch needs a look."))
	}

	var fields []*slack.TextBlockObject
	field := func(label, value string) {
		if value != "" {
			fields = append(fields, mrkdwn(clip("*"+label+"*\n"+value, maxFieldText)))
		}
	}
	field("Dataset", esc(r.Dataset))
	field("Batch", code(r.BatchID))
	field("Outcome", esc(words))
	if r.Duration > 0 {
		field("Duration", formatDuration(r.Duration))
	}
	if r.Report != nil {
		p, f, w := r.Report.Counts()
		field("Checks", fmt.Sprintf("%d passed · %d failed · %d warned", p, f, w))
		if r.Report.ModeReason != "" {
			// Announced: a commit lakewap did not attest, or a changed suite.
			field("Full audit", esc(r.Report.ModeReason))
		}
	}
	if r.Branch != "" {
		b := linked(l.branch(r.Repo, r.Branch), r.Branch)
		if (r.State == schemas.StateAborted || r.State == schemas.StateFailed) && !r.BranchKept {
			b += " (deleted)"
		}
		field("Branch", b)
	}
	if r.CommitID != "" {
		field("Commit on "+esc(cmp.Or(r.TargetRef, "the target")), linked(l.commit(r.Repo, r.CommitID), short(r.CommitID)))
	}
	blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))

	if what := r.what(); what != "" {
		blocks = append(blocks, section(what))
	}
	if next := r.next(l); next != "" {
		blocks = append(blocks, section("*Next:* "+next))
	}
	ctx := "lakewap"
	if r.Repo != "" {
		ctx += " · repository " + code(r.Repo)
	}
	if r.EventID != "" {
		ctx += " · event " + code(r.EventID)
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(ctx)))
	return message{Text: text, Blocks: blocks}
}

// target is the branch the batch publishes into, as the message names it;
// events written before they carried it say "the target".
func (r run) target() string {
	if r.TargetRef == "" {
		return "the target branch"
	}
	return code(r.TargetRef)
}

// what says what happened, beyond the outcome, in a sentence or two. The
// failing checks are listed once, in the details (threadMessage).
func (r run) what() string {
	var b strings.Builder
	switch r.State {
	case schemas.StateAborted:
		b.WriteString(upper(r.target()) + " is untouched.")
		if r.Detail != "" {
			b.WriteString(" " + esc(r.Detail))
		}
	case schemas.StateFailed:
		fmt.Fprintf(&b, "lakewap gave up")
		if r.Attempts > 0 {
			fmt.Fprintf(&b, " after %d attempts", r.Attempts)
		}
		if r.FailedIn != "" {
			fmt.Fprintf(&b, " while %s", esc(strings.ReplaceAll(r.FailedIn, "_", " ")))
		}
		b.WriteString(".")
		if r.Error != "" {
			b.WriteString(" Error: " + code(clip(r.Error, 200)))
		}
	case schemas.StatePublished:
		if r.Report != nil {
			var warned []string
			for _, c := range r.Report.Checks {
				if c.Status == schemas.StatusWarn {
					warned = append(warned, fmt.Sprintf("%s (observed %s, threshold %s)", code(c.Name), code(c.Observed), code(c.Threshold)))
				}
			}
			if len(warned) > maxWarnNames {
				warned = append(warned[:maxWarnNames], fmt.Sprintf("and %d more", len(warned)-maxWarnNames))
			}
			if len(warned) > 0 {
				b.WriteString("Warnings: " + strings.Join(warned, ", ") + ".")
			}
		}
	case schemas.StateLanded, schemas.StateAwaitingWrites:
		if len(r.ExpectedWrites) > 0 {
			ws := make([]string, 0, len(r.ExpectedWrites))
			for _, w := range r.ExpectedWrites {
				ws = append(ws, code(w))
			}
			b.WriteString("Expected writes: " + strings.Join(ws, ", ") + ".")
		}
		if r.WriteDeadline != nil {
			b.WriteString(" Deadline: " + r.WriteDeadline.UTC().Format(time.RFC3339) + ".")
		}
	}
	return clip(strings.TrimSpace(b.String()), maxSectionText)
}

// next is the action a reader should take.
func (r run) next(l links) string {
	branch := linked(l.branch(r.Repo, r.Branch), r.Branch)
	switch r.State {
	case schemas.StateLanded, schemas.StateAwaitingWrites:
		if r.LakeFSURI != "" {
			s := "writers write to " + code(r.LakeFSURI)
			if r.S3URI != "" {
				s += " (S3 gateway: " + code(r.S3URI) + ")"
			}
			return s + " and send WriteComplete for each expected write."
		}
		return "waiting for the expected writes."
	case schemas.StateAuditing, schemas.StatePublishing:
		return "nothing to do; this message will update."
	case schemas.StatePublished:
		return "nothing to do. If this batch is wrong, undo it on " + r.target() + " with " + code(r.command("revert")+` -reason "..."`) + "."
	case schemas.StateAborted:
		kept := r.BranchKept && r.Branch != ""
		switch r.Reason {
		case schemas.ReasonWriteTimeout:
			s := "find out why the expected writes did not arrive before the deadline"
			if kept {
				s += " (what did arrive is on branch " + branch + ")"
			}
			return s + ", then send the batch again."
		case schemas.ReasonCancelled:
			return "nothing to do; the batch was cancelled on request."
		case schemas.ReasonMergeConflict:
			if kept {
				return "branch " + branch + " conflicts with " + r.target() + "; resolve the conflicting writes on it, then run " + code(r.command("retry")) + "."
			}
			return "the batch conflicts with " + r.target() + "; resolve the conflicting writes and send the batch again."
		case schemas.ReasonInvalid:
			return "fix the producer of this batch's events and send the batch again."
		case schemas.ReasonUnauditedObjects:
			s := "the batch wrote objects under a table's path that the audit does not read (hidden names, empty objects, files a Delta log does not name) and readers of " + r.target() + " would; "
			if kept {
				return s + "remove them from branch " + branch + " (or list real markers in the table's markers), then run " + code(r.command("retry")) + "."
			}
			return s + "stop the writer from leaving them (or list real markers in the table's markers) and send the batch again."
		case schemas.ReasonAuditCrashed:
			s := "find out what ended the process during the audit (out of memory: audit.memory_limit, the instance's memory; a crash inside DuckDB: the log)"
			if kept {
				s += ", inspect branch " + branch + ", then run " + code(r.command("retry"))
			}
			return s + "."
		}
		if kept && r.Reason == schemas.ReasonAuditFailed {
			return "inspect branch " + branch + " (kept as it was audited), fix the data on it, then run " + code(r.command("retry")) + "."
		}
		if kept {
			return "inspect branch " + branch + " (kept as it was audited), fix the data, then send the batch again."
		}
		return "the branch was deleted; fix the source data and send the batch again."
	case schemas.StateFailed:
		s := "check lakeFS and Kafka health"
		if r.BranchKept && r.Branch != "" {
			s += ", inspect branch " + branch
		}
		return s + ", then run " + code(r.command("retry")) + "; " + r.target() + " has not changed unless a later event says it was published."
	}
	return ""
}

// threadMessage holds the details of a failure (failing checks with sample
// rows, the full error), posted once as a reply under the main message; ok
// is false when there is nothing to add to the main message.
func threadMessage(r run) (m message, ok bool) {
	if r.State != schemas.StateAborted && r.State != schemas.StateFailed {
		return message{}, false
	}
	var blocks []slack.Block
	if r.Report != nil {
		failed := r.Report.Failed()
		if len(failed) > 0 {
			blocks = append(blocks, section(fmt.Sprintf("*Failing checks* (%d of %d)", len(failed), len(r.Report.Checks))))
		}
		for i, c := range failed {
			if i == maxChecks {
				blocks = append(blocks, section(fmt.Sprintf("…and %d more failing checks.", len(failed)-maxChecks)))
				break
			}
			blocks = append(blocks, section(checkText(c)))
		}
	}
	// The main message quotes the error short; the thread keeps all of it.
	if r.State == schemas.StateFailed && r.Error != "" {
		blocks = append(blocks, section("*Error*\n"+codeBlock(r.Error)))
	}
	if len(blocks) == 0 {
		return message{}, false
	}
	_, words := r.outcome()
	return message{Text: esc(fmt.Sprintf("Details: %s batch %s %s", r.Dataset, r.BatchID, words)), Blocks: blocks}, true
}

func checkText(c schemas.CheckResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s* (%s", esc(c.Name), esc(c.Kind))
	if c.Table != "" {
		fmt.Fprintf(&b, " on %s", code(c.Table))
	}
	fmt.Fprintf(&b, ", %s): %s\n", esc(c.Severity), esc(c.Status))
	// A check that could not run observed nothing.
	fmt.Fprintf(&b, "observed %s vs threshold %s", cmp.Or(code(c.Observed), "(none)"), cmp.Or(code(c.Threshold), "(none)"))
	if c.Message != "" {
		b.WriteString("\n" + esc(clip(c.Message, 500)))
	}
	if len(c.SampleRows) > 0 {
		var rows []string
		for _, row := range c.SampleRows[:min(len(c.SampleRows), maxSampleRows)] {
			rows = append(rows, clip(row, maxSampleRow))
		}
		b.WriteString("\nSample rows:\n" + codeBlock(strings.Join(rows, "\n")))
		if more := len(c.SampleRows) - len(rows); more > 0 {
			fmt.Fprintf(&b, "\n…and %d more sample rows", more)
		}
	}
	return clip(b.String(), maxSectionText)
}

// command is the lakewap command line that acts on this batch (retry,
// revert), with the dataset and batch id quoted for a POSIX shell.
func (r run) command(verb string) string {
	return "lakewap " + verb + " -dataset " + shellQuote(r.Dataset) + " -batch " + shellQuote(r.BatchID)
}

// shellQuote leaves plain words alone and single-quotes the rest.
func shellQuote(s string) string {
	plain := s != ""
	for _, c := range s {
		plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/=+@,", c))
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// upper capitalises a sentence's first letter (after a code span's `).
func upper(s string) string {
	if strings.HasPrefix(s, "the ") {
		return "The " + s[len("the "):]
	}
	return s
}

func section(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(clip(text, maxSectionText)), nil, nil)
}

// mrkdwn is a verbatim mrkdwn text object: Slack renders its formatting
// and the links and mentions lakewap writes (<url|label>, the route's
// <!subteam^...>), and does not parse the rest, where data is (object
// paths, write names, check messages, commit messages). Not verbatim,
// Slack's default, it would make a URL there a link, a channel name a
// channel's and parse "certain mentions" (Block Kit's text object).
func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}

// esc escapes the three characters Slack's mrkdwn gives meaning to, and
// shows data's control characters escaped (oneLine).
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(oneLine(s))
}

// oneLine shows, Go style (\n), the runes of s that would break its line
// or reorder it: C0 and C1 controls, line breaks included, and
// bidirectional overrides. Data (a writer's object name, which lakeFS lets
// hold line breaks, a check message, a commit message) then stays on the
// line lakewap put it on instead of starting lines of its own, formatted,
// under lakewap's name.
func oneLine(s string) string {
	if strings.IndexFunc(s, breaksLine) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !breaksLine(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func breaksLine(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + esc(strings.ReplaceAll(s, "`", "'")) + "`"
}

// codeBlock is s as a code block, a line of s a line of the block (sample
// rows one per line, an error's lines): a line break there stays inside
// the block, so only the rest of each line is escaped (esc).
func codeBlock(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "```", "'''"), "\n")
	for i, l := range lines {
		lines[i] = esc(l)
	}
	return "```\n" + strings.Join(lines, "\n") + "\n```"
}

// linked is label linked to u, or as code when there is no u.
func linked(u, label string) string {
	if u == "" {
		return code(label)
	}
	return "<" + u + "|" + strings.NewReplacer("|", "¦", ">", "&gt;", "<", "&lt;", "&", "&amp;").Replace(label) + ">"
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
