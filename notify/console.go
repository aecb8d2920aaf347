package notify

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Console writes what Slack would show, as plain text, to a writer: the
// demo's notifier, and a way to read messages without a Slack workspace.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	links links
}

// NewConsole returns a console sink named "console" writing to w;
// lakeFSURL is the lakeFS UI base URL for links ("" for none).
func NewConsole(w io.Writer, lakeFSURL string) (*Console, error) {
	base, err := uiBase(lakeFSURL)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return &Console{w: w, links: links{base: base}}, nil
}

func (c *Console) Name() string { return "console" }

// Send writes the message and, for a run that ended badly, its details.
// A failed write is not retried: the console is for people watching now.
func (c *Console) Send(_ context.Context, n Notification) (string, bool, error) {
	r := runOf(n)
	var b strings.Builder
	if a, ok := announcement(n); ok {
		b.WriteString(renderText(announcementMessage(a, "", c.links).Blocks, ""))
	} else {
		b.WriteString(renderText(mainMessage(r, c.links).Blocks, ""))
		if th, ok := threadMessage(r); ok {
			b.WriteString("  ↳ thread:\n")
			b.WriteString(renderText(th.Blocks, "    "))
		}
	}
	b.WriteString("\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.w, printable(b.String())); err != nil {
		return "", false, fmt.Errorf("console: %w", err)
	}
	return "", false, nil
}

// printable escapes, Go style, the runes of s a terminal would act on rather
// than show (C0 and C1 controls but newlines, bidirectional overrides): event
// data comes from producers, not from the person watching.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || !unicode.IsControl(r) && !unicode.Is(unicode.Bidi_Control, r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
