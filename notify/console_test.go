package notify

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/lakewap/lakewap/schemas"
)

func TestConsoleShowsWhatSlackWould(t *testing.T) {
	var out strings.Builder
	c, err := NewConsole(&out, testUI)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "console", Mention: oncall}}, []Sink{c}, Options{})
	if _, err := d.Notify(context.Background(), note(abortedAuditEvent(), schemas.StateAborted)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	wantContains(t, "console", got,
		":no_entry: orders aborted: audit failed · batch b-42\n",
		"\n  Branch: wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42)\n",
		"\n  Checks: 1 passed · 2 failed · 1 warned\n",
		"\n  ↳ thread:\n    *Failing checks* (2 of 4)\n",
		`    {"id":7,"email":null,"note":"<script>"}`,
	)
	// The same text Slack gets: render the Slack blocks and compare.
	r := runOf(Notification{Event: abortedAuditEvent(), State: schemas.StateAborted, Mention: oncall, LandedAt: landedAt})
	if main := renderText(mainMessage(r, links{base: testUI}).Blocks, ""); !strings.HasPrefix(got, main) {
		t.Errorf("console output does not start with the Slack message's text:\n%s\nwant prefix\n%s", got, main)
	}
}

func TestNewConsoleRejectsBadUIURL(t *testing.T) {
	if _, err := NewConsole(&strings.Builder{}, "lakefs.test"); err == nil ||
		err.Error() != `console: lakeFS UI URL "lakefs.test" is not an http(s) URL` {
		t.Errorf("error %v", err)
	}
}

// Event data reaches a terminal: what a terminal would act on rather than
// show (escape sequences, carriage returns, bidirectional overrides) is
// printed escaped, and the rest of the text is kept.
func TestConsoleEscapesTerminalControls(t *testing.T) {
	var out strings.Builder
	c, err := NewConsole(&out, "")
	if err != nil {
		t.Fatal(err)
	}
	ev := failedEvent()
	ev.Error = "boom\x1b[2J\rfaked\u202eevil\x07"
	ev.Dataset = "orders\x1b]0;title\x07"
	if _, _, err := c.Send(context.Background(), note(ev, schemas.StateFailed)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, r := range got {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Fatalf("console output holds the raw control %U:\n%q", r, got)
		}
	}
	wantContains(t, "console", got, `boom\x1b[2J\rfaked\u202eevil\a`, `orders\x1b]0;title\a`)
}
