package notify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"
)

// workspace extends slacktest's server with what these tests need and it
// lacks: chat.update, thread replies kept per message, distinct timestamps
// within one second, and injected failures (429 with Retry-After, outages,
// error bodies).
type workspace struct {
	t   *testing.T
	srv *slacktest.Server

	mu       sync.Mutex
	seq      int
	messages []*postedMessage // in post order, replies included
	calls    map[string]int   // API method -> requests seen
	// fail, when set, answers a request instead of the normal handler;
	// it returns false to let the request through.
	fail func(method string, w http.ResponseWriter) bool
	// hold, when set, is called before a request is answered; it may
	// block to make Slack slow.
	hold func(method string, r *http.Request)
}

type postedMessage struct {
	Channel, TS, ThreadTS string
	Text                  string
	Blocks                slack.Blocks
	Metadata              slack.SlackMetadata
	BotID                 string // the poster's, by its token
	Updates               int
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	ws := &workspace{t: t, calls: map[string]int{}}
	ws.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", ws.handler("chat.postMessage", ws.post))
		c.Handle("/chat.update", ws.handler("chat.update", ws.update))
		c.Handle("/conversations.history", ws.handler("conversations.history", ws.history))
		c.Handle("/conversations.replies", ws.handler("conversations.replies", ws.threadReplies))
		c.Handle("/auth.test", ws.handler("auth.test", func(w http.ResponseWriter, r *http.Request) {
			tok := r.Form.Get("token")
			if tok == "" {
				tok = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			}
			writeJSON(w, map[string]any{"ok": true, "user_id": "U" + strings.TrimPrefix(botOf(tok), "B"), "bot_id": botOf(tok)})
		}))
	})
	ws.srv.Start()
	t.Cleanup(ws.srv.Stop)
	return ws
}

func (ws *workspace) apiURL() string { return ws.srv.GetAPIURL() }

func (ws *workspace) setFail(f func(method string, w http.ResponseWriter) bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.fail = f
}

func (ws *workspace) setHold(f func(method string, r *http.Request)) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.hold = f
}

func (ws *workspace) handler(method string, next func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws.mu.Lock()
		ws.calls[method]++
		fail, hold := ws.fail, ws.hold
		ws.mu.Unlock()
		if hold != nil {
			hold(method, r)
		}
		if fail != nil && fail(method, w) {
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		next(w, r)
	}
}

func channelID(name string) string {
	if n, ok := strings.CutPrefix(name, "#"); ok {
		return "C" + strings.ToUpper(strings.ReplaceAll(n, "-", ""))
	}
	return name
}

func (ws *workspace) decodeBlocks(w http.ResponseWriter, raw string) (slack.Blocks, bool) {
	var b slack.Blocks
	if raw == "" {
		return b, true
	}
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		ws.t.Errorf("blocks do not decode: %v", err)
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_blocks"})
		return b, false
	}
	return b, true
}

func (ws *workspace) post(w http.ResponseWriter, r *http.Request) {
	blocks, ok := ws.decodeBlocks(w, r.Form.Get("blocks"))
	if !ok {
		return
	}
	var md slack.SlackMetadata
	if raw := r.Form.Get("metadata"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &md); err != nil {
			ws.t.Errorf("metadata does not decode: %v", err)
		}
	}
	ws.mu.Lock()
	ws.seq++
	m := &postedMessage{
		Metadata: md,
		BotID:    botOf(r.Form.Get("token")),
		Channel:  channelID(r.Form.Get("channel")),
		// Slack's clock: a minute after the runs of these tests landed.
		TS:       fmt.Sprintf("%d.%06d", landedAt.Unix()+60, ws.seq),
		ThreadTS: r.Form.Get("thread_ts"),
		Text:     r.Form.Get("text"),
		Blocks:   blocks,
	}
	ws.messages = append(ws.messages, m)
	ws.mu.Unlock()
	writeJSON(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
}

func (ws *workspace) update(w http.ResponseWriter, r *http.Request) {
	blocks, ok := ws.decodeBlocks(w, r.Form.Get("blocks"))
	if !ok {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, m := range ws.messages {
		if m.Channel == r.Form.Get("channel") && m.TS == r.Form.Get("ts") {
			if m.BotID != botOf(r.Form.Get("token")) {
				// Slack: an app edits only its own messages.
				writeJSON(w, map[string]any{"ok": false, "error": "cant_update_message"})
				return
			}
			m.Text, m.Blocks = r.Form.Get("text"), blocks
			m.Updates++
			writeJSON(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text})
			return
		}
	}
	writeJSON(w, map[string]any{"ok": false, "error": "message_not_found"})
}

// history answers conversations.history as Slack does: the channel's
// top-level messages newest first, since oldest, limit a page, the cursor
// the index of the next one; metadata only with include_all_metadata.
func (ws *workspace) history(w http.ResponseWriter, r *http.Request) {
	ws.page(w, r, func(m *postedMessage) bool { return m.ThreadTS == "" })
}

// threadReplies answers conversations.replies: the thread's parent, then
// its replies oldest first.
func (ws *workspace) threadReplies(w http.ResponseWriter, r *http.Request) {
	ts := r.Form.Get("ts")
	ws.page(w, r, func(m *postedMessage) bool { return m.TS == ts || m.ThreadTS == ts })
}

func (ws *workspace) page(w http.ResponseWriter, r *http.Request, keep func(*postedMessage) bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ch, oldest := r.Form.Get("channel"), r.Form.Get("oldest")
	var all []map[string]any
	for _, m := range ws.messages {
		if m.Channel != ch || !keep(m) || (oldest != "" && m.TS < oldest) {
			continue
		}
		msg := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "bot_id": m.BotID}
		if m.ThreadTS != "" {
			msg["thread_ts"] = m.ThreadTS
		}
		if r.Form.Get("include_all_metadata") == "1" && m.Metadata.EventType != "" {
			msg["metadata"] = m.Metadata
		}
		all = append(all, msg)
	}
	if r.URL.Path == "/conversations.history" {
		slices.Reverse(all)
	}
	start, _ := strconv.Atoi(r.Form.Get("cursor"))
	limit, _ := strconv.Atoi(r.Form.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	end := min(start+limit, len(all))
	start = min(start, end)
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	writeJSON(w, map[string]any{"ok": true, "messages": all[start:end], "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}})
}

// botOf is the bot id Slack gives a token's messages.
func botOf(token string) string { return "B" + strings.ToUpper(strings.TrimPrefix(token, "xoxb-")) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// topLevel returns the messages that are not thread replies.
func (ws *workspace) topLevel() []postedMessage {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var out []postedMessage
	for _, m := range ws.messages {
		if m.ThreadTS == "" {
			out = append(out, *m)
		}
	}
	return out
}

// replies returns the thread replies under ts.
func (ws *workspace) replies(ts string) []postedMessage {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var out []postedMessage
	for _, m := range ws.messages {
		if m.ThreadTS == ts {
			out = append(out, *m)
		}
	}
	return out
}

func (ws *workspace) callCount(method string) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.calls[method]
}

// text renders a posted message's blocks the way the console does, for
// assertions on what a reader sees.
func (m postedMessage) text() string { return renderText(m.Blocks.BlockSet, "") }

// renderRaw is a block's JSON as Slack receives it, without Go's HTML
// escaping, for assertions on escaping.
func renderRaw(b slack.Block) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(b)
	return sb.String()
}
