package notify

import (
	"cmp"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

// An announcement (schemas.UnattestedChange) is about the target, not about
// the run that found it: it is a message of its own, posted once and never
// edited, and it leaves the run's receipts as they are (the run's Slack
// message stays the one its later events update, and a re-notification of
// the run does not post it again). It goes to every route of its dataset,
// whatever the route's states.

// announcement returns n's UnattestedChange, if it is one.
func announcement(n Notification) (schemas.UnattestedChange, bool) {
	c, ok := deref(n.Event).(schemas.UnattestedChange)
	return c, ok
}

// announcementMessage is the Slack message of an announcement.
func announcementMessage(c schemas.UnattestedChange, mention string, l links) message {
	emoji, title := ":warning:", fmt.Sprintf("%s: a commit on %s that lakewap did not attest", c.Dataset, c.TargetRef)
	what := fmt.Sprintf("Commit %s on %s was not made by a lakewap publish (a manual merge, a revert made with lakectl, a direct commit): "+
		"lakewap cannot vouch that the table there passed the dataset's checks, so the next audit of %s reads the whole table.",
		linked(l.commit(c.Repository, c.CommitID), short(c.CommitID)), code(c.TargetRef), esc(c.Dataset))
	if c.Kind == schemas.ChangeSuiteChanged {
		emoji, title = ":information_source:", fmt.Sprintf("%s: the suite changed since its last publish", c.Dataset)
		what = fmt.Sprintf("The dataset's last publish on %s (%s) was audited by suite %s; the configured suite is %s. "+
			"Its next audit reads the whole table.", code(c.TargetRef), linked(l.commit(c.Repository, c.CommitID), short(c.CommitID)),
			code(c.PreviousSuite), code(c.Suite))
	}
	text := esc(title)
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, clip(emoji+" "+title, maxHeaderText), true, false))}
	if mention != "" {
		text = mention + " " + text
		blocks = append(blocks, section(mention+" the target changed outside lakewap."))
	}
	blocks = append(blocks, section(clip(what, maxSectionText)))
	var fields []*slack.TextBlockObject
	field := func(label, value string) {
		if value != "" {
			fields = append(fields, mrkdwn(clip("*"+label+"*\n"+value, maxFieldText)))
		}
	}
	field("Dataset", esc(c.Dataset))
	if c.Kind == schemas.ChangeUnattestedCommit {
		field("Committer", esc(c.Committer))
		field("Message", esc(c.Message))
		field("Why", esc(c.Detail))
	}
	field("Found by the publish of batch", code(c.BatchID))
	if len(fields) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	}
	ctx := "lakewap · repository " + code(cmp.Or(c.Repository, "?")) + " · event " + code(c.EventID)
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(ctx)))
	return message{Text: text, Blocks: blocks}
}
