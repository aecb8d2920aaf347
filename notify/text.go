package notify

import (
	"regexp"
	"strings"

	"github.com/slack-go/slack"
)

// mrkdwnLink matches <url|label> and <url>.
var mrkdwnLink = regexp.MustCompile(`<([^<>|]+)\|([^<>]*)>|<(https?://[^<>]+)>`)

// plain turns the mrkdwn Slack would render into terminal text: links
// become "label (url)" and entities are unescaped; emphasis marks stay.
func plain(s string) string {
	s = mrkdwnLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := mrkdwnLink.FindStringSubmatch(m)
		if sub[3] != "" {
			return sub[3]
		}
		return sub[2] + " (" + sub[1] + ")"
	})
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// renderText renders a message's blocks as lines of text, the way the
// console sink shows what Slack would show.
func renderText(blocks []slack.Block, indent string) string {
	var b strings.Builder
	line := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			b.WriteString(indent + l + "\n")
		}
	}
	for _, blk := range blocks {
		switch x := blk.(type) {
		case *slack.HeaderBlock:
			if x.Text != nil {
				line(x.Text.Text)
			}
		case *slack.SectionBlock:
			if x.Text != nil {
				line(plain(x.Text.Text))
			}
			for _, f := range x.Fields {
				label, value, _ := strings.Cut(f.Text, "\n")
				line("  " + strings.Trim(label, "*") + ": " + plain(value))
			}
		case *slack.ContextBlock:
			for _, e := range x.ContextElements.Elements {
				if t, ok := e.(*slack.TextBlockObject); ok {
					line(plain(t.Text))
				}
			}
		case *slack.DividerBlock:
			line("----")
		}
	}
	return b.String()
}
