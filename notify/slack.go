package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// SlackConfig configures a Slack sink that posts with a bot token.
type SlackConfig struct {
	Name    string // sink name in routes and receipts; default "slack"
	Token   string // bot token (xoxb-…), loaded by the caller (config.ReadSecret)
	Channel string // channel id or name to post new messages in
	// LakeFSURL is the lakeFS UI base URL the messages link to, e.g.
	// "https://lakefs.example.com"; empty means no links.
	LakeFSURL string
	// APIURL overrides Slack's Web API address (tests, proxies); it must end
	// with a slash.
	APIURL string
	// Logger hears that a channel's history cannot be read (see Slack); nil
	// logs nothing.
	Logger *slog.Logger
	// Scope names this deployment in the messages' metadata, opaquely (the
	// config hashes what sets it apart): a lookup takes only messages of its
	// own scope, so two deployments posting with one bot token to one channel
	// (staging and production) do not edit each other's runs of the same
	// dataset and batch id.
	Scope string
}

// Slack posts one message per batch and edits it in place as the run moves
// on; when a run is aborted or fails it adds the details as a thread reply.
// Its receipt is "channel/ts", or "channel/ts/reply_ts" once the reply is
// posted, so neither is posted twice.
//
// A receipt can be lost: Slack took the message, but the process ended (or
// the partition moved) before the run's record stored what Slack answered.
// Each message therefore carries metadata naming its run, and a Send without
// a receipt first looks for the run's message in the channel's history since
// the run landed (conversations.history, at most lookupPages pages), and for
// its details reply in the thread (conversations.replies), editing what it
// finds instead of posting again. This needs the channel's id (configured, or
// learnt from this process's own posts) and the channels:history (or
// groups:history) scope; without either, a lost receipt still means a second
// message, and the first refusal is logged.
type Slack struct {
	name, channel string
	api           *slack.Client
	links         links
	secrets       []string
	log           *slog.Logger
	scope         string

	mu  sync.Mutex
	ids map[string]string // channel name -> id, learnt from posts
	// blind holds the channels whose history Slack refused to show
	// (missing_scope, not_in_channel): no lookup is tried there again.
	blind map[string]bool
	// self is who lakewap's messages are posted by (auth.test, asked once
	// at the first lookup): a lookup takes only its messages. selfAsked
	// once auth.test answered, or refused for good (then any poster is
	// taken, and Slack refuses the edit of another's message).
	self      slackPoster
	selfAsked bool
}

// slackPoster is who posted a message: an app's bot, or a user.
type slackPoster struct{ bot, user string }

// posted reports whether p posted m (an unknown p: anyone).
func (p slackPoster) posted(m slack.Message) bool {
	switch {
	case p.bot != "":
		return m.BotID == p.bot
	case p.user != "":
		return m.User == p.user
	}
	return true
}

// poster is who lakewap's messages are posted by, asked of Slack once.
func (s *Slack) poster(ctx context.Context) (slackPoster, bool, error) {
	s.mu.Lock()
	self, asked := s.self, s.selfAsked
	s.mu.Unlock()
	if asked {
		return self, false, nil
	}
	resp, err := s.api.AuthTestContext(ctx)
	if err != nil {
		retry, werr := classifySlack("auth.test", s.name, err, s.secrets)
		if retry {
			return slackPoster{}, true, werr
		}
		s.log.Warn("slack: auth.test refused, so a lookup of a run's message takes another app's message carrying its metadata too (Slack then refuses its edit and a second message is posted)",
			"sink", s.name, "error", werr.Error())
	} else {
		self = slackPoster{bot: resp.BotID, user: resp.UserID}
	}
	s.mu.Lock()
	s.self, s.selfAsked = self, true
	s.mu.Unlock()
	return self, false, nil
}

// The metadata types of a run's message and of its details reply.
const (
	runMessageType = "lakewap_batch"
	runDetailsType = "lakewap_batch_details"
)

// A lookup reads at most lookupPages pages of lookupPageSize messages: a
// channel busier than that since the run landed gets a second message.
const (
	lookupPageSize = 200
	lookupPages    = 5
	// lookupSkew is how far before the run landed a lookup starts, for
	// clocks that disagree with Slack's.
	lookupSkew = time.Hour
)

// channelIDPattern matches Slack's channel ids (public C…, private G…, DM D…).
var channelIDPattern = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// NewSlack checks cfg and returns the sink.
func NewSlack(cfg SlackConfig) (*Slack, error) {
	if cfg.Token == "" {
		return nil, errors.New("slack: token is empty")
	}
	if cfg.Channel == "" {
		return nil, errors.New("slack: channel is empty")
	}
	base, err := uiBase(cfg.LakeFSURL)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	opts := []slack.Option{slack.OptionHTTPClient(cappedClient())}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	return &Slack{
		name:    cmp.Or(cfg.Name, "slack"),
		channel: cfg.Channel,
		api:     slack.New(cfg.Token, opts...),
		links:   links{base: base},
		secrets: []string{cfg.Token},
		log:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		scope:   cfg.Scope,
		ids:     map[string]string{},
		blind:   map[string]bool{},
	}, nil
}

func uiBase(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("lakeFS UI URL %q is not an http(s) URL", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

func (s *Slack) Name() string { return s.name }

type slackReceipt struct{ channel, ts, reply string }

func parseSlackReceipt(r string) slackReceipt {
	p := append(strings.SplitN(r, "/", 3), "", "")
	return slackReceipt{channel: p[0], ts: p[1], reply: p[2]}
}

func (r slackReceipt) String() string {
	if r.ts == "" {
		return ""
	}
	return strings.TrimSuffix(r.channel+"/"+r.ts+"/"+r.reply, "/")
}

// Send posts or updates the batch's message, then posts the failure
// details once.
func (s *Slack) Send(ctx context.Context, n Notification) (string, bool, error) {
	if c, ok := announcement(n); ok {
		// A message of its own, posted once (the Dispatcher keeps the run's receipts).
		_, _, err := s.api.PostMessageContext(ctx, cmp.Or(n.Channel, s.channel), announcementMessage(c, n.Mention, s.links).options()...)
		if err != nil {
			retry, werr := classifySlack("chat.postMessage", s.name, err, s.secrets)
			return "", retry, werr
		}
		return "", false, nil
	}
	r := runOf(n)
	m := mainMessage(r, s.links)
	ch := cmp.Or(n.Channel, s.channel)
	rc := parseSlackReceipt(n.Receipts[s.name])
	opts := append(m.options(), slack.MsgOptionMetadata(s.runMetadata(runMessageType, n)))
	if rc.ts == "" && n.notFound != s.name {
		ts, retry, err := s.find(ctx, ch, n, "")
		if err != nil {
			return "", retry, err
		}
		if ts != "" {
			rc = slackReceipt{channel: s.channelID(ch), ts: ts}
		}
	}
	if rc.ts != "" {
		_, _, _, err := s.api.UpdateMessageContext(ctx, rc.channel, rc.ts, opts...)
		var se slack.SlackErrorResponse
		switch {
		case errors.As(err, &se) && (se.Err == "message_not_found" || se.Err == "cant_update_message" || se.Err == "edit_window_closed"):
			// Someone deleted the message or it can no longer be edited:
			// start a new one rather than go silent.
			rc = slackReceipt{}
		case err != nil:
			retry, werr := classifySlack("chat.update", s.name, err, s.secrets)
			return rc.String(), retry, werr
		}
	}
	posted := false
	if rc.ts == "" {
		// A route's channel wins; a message already posted is updated
		// where it is (the receipt names its channel).
		id, ts, err := s.api.PostMessageContext(ctx, ch, opts...)
		if err != nil {
			retry, werr := classifySlack("chat.postMessage", s.name, err, s.secrets)
			return "", retry, werr
		}
		s.learn(ch, id)
		rc = slackReceipt{channel: id, ts: ts}
		posted = true
	}
	th, details := threadMessage(r)
	if details && rc.reply == "" && !posted {
		// The reply may be there already, its receipt lost with the
		// message's or after it (a stored receipt without the reply).
		reply, retry, err := s.find(ctx, rc.channel, n, rc.ts)
		if err != nil {
			return rc.String(), retry, err
		}
		rc.reply = reply
	}
	if details && rc.reply == "" {
		opts := append(th.options(), slack.MsgOptionTS(rc.ts), slack.MsgOptionMetadata(s.runMetadata(runDetailsType, n)))
		_, ts, err := s.api.PostMessageContext(ctx, rc.channel, opts...)
		if err != nil {
			// The main message is right; the receipt says so, and the next
			// attempt adds only the reply.
			retry, werr := classifySlack("chat.postMessage (thread)", s.name, err, s.secrets)
			return rc.String(), retry, werr
		}
		rc.reply = ts
	}
	return rc.String(), false, nil
}

// maxSlackAnswerBytes bounds one answer of Slack's API: a history page
// holds what the channel's members wrote (200 messages of up to 40,000
// characters and 50 blocks each), read whole by slack-go.
const maxSlackAnswerBytes = 4 << 20

// errSlackAnswerTooLarge is the read error of an answer over maxSlackAnswerBytes.
var errSlackAnswerTooLarge = fmt.Errorf("slack: answer over %d bytes", maxSlackAnswerBytes)

// cappedClient is an HTTP client whose answers' bodies end in
// errSlackAnswerTooLarge past maxSlackAnswerBytes.
func cappedClient() *http.Client {
	return &http.Client{Transport: cappedTransport{next: http.DefaultTransport}}
}

type cappedTransport struct{ next http.RoundTripper }

func (c cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxSlackAnswerBytes}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the cap from a larger one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, errSlackAnswerTooLarge
		}
		return b.ReadCloser.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func (s *Slack) runMetadata(kind string, n Notification) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: kind, EventPayload: map[string]any{"dataset": n.Dataset, "batch_id": n.BatchID, "scope": s.scope}}
}

func (s *Slack) isRun(md slack.SlackMetadata, kind string, n Notification) bool {
	scope, _ := md.EventPayload["scope"].(string) // none on a message of no scope
	return md.EventType == kind && md.EventPayload["dataset"] == n.Dataset && md.EventPayload["batch_id"] == n.BatchID && scope == s.scope
}

// channelID is ch's id: ch itself when it is one, else the id a post to it
// answered in this process, else "".
func (s *Slack) channelID(ch string) string {
	if channelIDPattern.MatchString(ch) {
		return ch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[ch]
}

func (s *Slack) learn(ch, id string) {
	if ch == id || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) < 1024 { // names come from config: a handful
		s.ids[ch] = id
	}
}

// find looks for n's message in ch's history since the run landed, or, with
// thread set, for its details reply in that thread; it returns the ts found
// or "". A refusal Slack will repeat (a missing scope, a channel the bot is
// not in) is logged once and leaves the channel unsearched from then on; a
// failure worth retrying is returned.
// Find looks for the run's message of n (its receipt lost) and returns
// its receipt, or "" when there is none to find (Limit: a found message
// is an update, not a new one).
func (s *Slack) Find(ctx context.Context, n Notification) (string, bool, error) {
	if _, ok := announcement(n); ok {
		return "", false, nil
	}
	ch := cmp.Or(n.Channel, s.channel)
	ts, retry, err := s.find(ctx, ch, n, "")
	if err != nil || ts == "" {
		return "", retry, err
	}
	return slackReceipt{channel: s.channelID(ch), ts: ts}.String(), false, nil
}

func (s *Slack) find(ctx context.Context, ch string, n Notification, thread string) (ts string, retry bool, err error) {
	id := s.channelID(ch)
	s.mu.Lock()
	blind := s.blind[id]
	s.mu.Unlock()
	if id == "" || blind {
		return "", false, nil
	}
	op, kind := "conversations.history", runMessageType
	if thread != "" {
		op, kind = "conversations.replies", runDetailsType
	}
	// Any app in the channel reads lakewap's metadata and may post a
	// message carrying it: only lakewap's own poster's count.
	self, retry, err := s.poster(ctx)
	if err != nil {
		return "", retry, err
	}
	var oldest string
	if !n.LandedAt.IsZero() && thread == "" {
		at := n.LandedAt.Add(-lookupSkew)
		oldest = fmt.Sprintf("%d.%06d", at.Unix(), at.Nanosecond()/1000)
	}
	cursor := ""
	var parent *slack.Message // the thread's first message, from replies
	for range lookupPages {
		var msgs []slack.Message
		var more bool
		var next string
		if thread == "" {
			var resp *slack.GetConversationHistoryResponse
			resp, err = s.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: id, Oldest: oldest, Limit: lookupPageSize, Cursor: cursor, IncludeAllMetadata: true})
			if resp != nil {
				msgs, more, next = resp.Messages, resp.HasMore, resp.ResponseMetaData.NextCursor
			}
		} else {
			msgs, more, next, err = s.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: id, Timestamp: thread, Limit: lookupPageSize, Cursor: cursor, IncludeAllMetadata: true})
		}
		if errors.Is(err, errSlackAnswerTooLarge) {
			// Channel members filled the page: look no further (a
			// lost receipt here gives a second message).
			s.log.Warn("slack: a page of the channel's history is over the bytes lakewap reads; the lookup for the run's message stops there",
				"sink", s.name, "channel", id, "op", op, "max_bytes", maxSlackAnswerBytes, "batch_id", n.BatchID, "dataset", n.Dataset)
			return "", false, nil
		}
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			// The history has a rate limit of its own, lower than
			// posting's: a burst of runs would hold their messages
			// behind it. A lost receipt is rare; skip the lookup.
			s.log.Info("slack: the channel's history is rate-limited; the run's message is posted without looking for it",
				"sink", s.name, "channel", id, "op", op, "retry_after", rl.RetryAfter, "batch_id", n.BatchID, "dataset", n.Dataset)
			return "", false, nil
		}
		if err != nil {
			retry, werr := classifySlack(op, s.name, err, s.secrets)
			if retry {
				return "", true, werr
			}
			s.mu.Lock()
			s.blind[id] = true
			s.mu.Unlock()
			s.log.Warn("slack: cannot read the channel's history, so a message whose receipt was lost (a crash after Slack took it) is posted again; give the bot token channels:history (groups:history for a private channel) and invite the bot",
				"sink", s.name, "channel", id, "error", werr.Error())
			return "", false, nil
		}
		for _, m := range msgs {
			if m.Timestamp == thread {
				// The run's message, lakewap's own (its receipt said so):
				// only a reply by the same poster is lakewap's. Any app in
				// the channel may put lakewap's metadata on a reply.
				parent = &m
				continue
			}
			if !s.isRun(m.Metadata, kind, n) {
				continue
			}
			if thread != "" && (parent == nil || m.BotID != parent.BotID || m.User != parent.User) {
				continue
			}
			if thread == "" && m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
				continue // a reply shown in the channel
			}
			if !self.posted(m) {
				continue // another app's, carrying lakewap's metadata
			}
			return m.Timestamp, false, nil
		}
		if !more || next == "" {
			break
		}
		cursor = next
	}
	return "", false, nil
}

// SlackWebhookConfig configures a Slack sink that posts to an incoming
// webhook.
type SlackWebhookConfig struct {
	Name      string // default "slack-webhook"
	URL       string // the webhook URL, a secret: loaded by the caller (config.ReadSecret)
	LakeFSURL string // lakeFS UI base URL for links
}

// SlackWebhook posts to an incoming webhook. A webhook cannot edit what it
// posted, so it speaks only when a run ends (published, aborted, failed),
// with the failure details in the same message. Its receipt is the event id
// (or state) it posted, so a repeated notification is not posted again.
type SlackWebhook struct {
	name, url string
	hc        *http.Client
	links     links
}

// NewSlackWebhook checks cfg and returns the sink.
func NewSlackWebhook(cfg SlackWebhookConfig) (*SlackWebhook, error) {
	cfg.Name = cmp.Or(cfg.Name, "slack-webhook")
	u, err := url.Parse(cfg.URL)
	if cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is a secret: say what is wrong without echoing it.
		return nil, fmt.Errorf("slack webhook %s: URL is empty or not an http(s) URL", cfg.Name)
	}
	base, err := uiBase(cfg.LakeFSURL)
	if err != nil {
		return nil, fmt.Errorf("slack webhook %s: %w", cfg.Name, err)
	}
	return &SlackWebhook{name: cfg.Name, url: cfg.URL, hc: cappedClient(), links: links{base: base}}, nil
}

func (w *SlackWebhook) Name() string { return w.name }

// Send posts n if it ends the run and was not posted before.
func (w *SlackWebhook) Send(ctx context.Context, n Notification) (string, bool, error) {
	prev := n.Receipts[w.name]
	if c, ok := announcement(n); ok {
		m := announcementMessage(c, n.Mention, w.links)
		err := slack.PostWebhookCustomHTTPContext(ctx, w.url, w.hc, &slack.WebhookMessage{Text: m.Text, Blocks: &slack.Blocks{BlockSet: m.Blocks}})
		if err != nil {
			retry, werr := classifySlack("webhook", w.name, err, w.secrets())
			return prev, retry, werr
		}
		return prev, false, nil
	}
	if !terminal(n.State) {
		return prev, false, nil
	}
	key := cmp.Or(EventID(n.Event), n.State)
	if prev == key {
		return prev, false, nil
	}
	r := runOf(n)
	m := mainMessage(r, w.links)
	blocks := m.Blocks
	if th, ok := threadMessage(r); ok {
		blocks = append(append(blocks, slack.NewDividerBlock()), th.Blocks...)
	}
	if len(blocks) > 50 { // Slack's limit per message
		blocks = blocks[:50]
	}
	err := slack.PostWebhookCustomHTTPContext(ctx, w.url, w.hc, &slack.WebhookMessage{
		Text:   m.Text,
		Blocks: &slack.Blocks{BlockSet: blocks},
	})
	if err != nil {
		retry, werr := classifySlack("webhook", w.name, err, w.secrets())
		return prev, retry, werr
	}
	return key, false, nil
}

func (w *SlackWebhook) secrets() []string {
	out := []string{w.url}
	if u, err := url.Parse(w.url); err == nil {
		// Errors may quote the URL re-encoded, or only its path (which is
		// where a webhook's secret lives).
		out = append(out, u.String(), u.Path, u.EscapedPath())
		if u.RawQuery != "" {
			out = append(out, u.RawQuery)
		}
	}
	return out
}

// sinkError is a Slack failure whose text has every secret removed. It keeps
// no link to the original error, whose text may hold the URL or token.
type sinkError struct {
	sink, op, msg string
}

func (e *sinkError) Error() string { return e.sink + ": " + e.op + ": " + e.msg }

// Slack's error codes worth retrying (everything else it names is a
// configuration problem a retry will not fix).
var retryableSlackCodes = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// classifySlack decides once whether a Slack failure is worth retrying and
// returns it redacted, carrying the Retry-After Slack asked for.
func classifySlack(op, sink string, err error, secrets []string) (bool, error) {
	retry := true
	var (
		rl   *slack.RateLimitedError
		sc   slack.StatusCodeError
		se   slack.SlackErrorResponse
		nerr net.Error
	)
	switch {
	case errors.Is(err, errSlackAnswerTooLarge) || strings.Contains(err.Error(), errSlackAnswerTooLarge.Error()):
		retry = false // no answer of Slack's; the message may be posted (slack-go keeps the read error's text only)
	case errors.As(err, &rl):
	case errors.As(err, &sc):
		retry = sc.Retryable() || sc.Code == http.StatusRequestTimeout
	case errors.As(err, &se):
		retry = slices.Contains(retryableSlackCodes, se.Err)
	case errors.Is(err, context.Canceled):
		retry = false
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr):
	}
	out := error(&sinkError{sink: sink, op: op, msg: redact(err.Error(), secrets)})
	if rl != nil {
		out = &RetryAfterError{Wait: rl.RetryAfter, Err: out}
	}
	return retry, out
}

// redact replaces every secret, raw or URL-escaped, with [redacted].
func redact(s string, secrets []string) string {
	var forms []string
	for _, sec := range secrets {
		if len(sec) < 4 { // too short to be a secret; replacing it would mangle the text
			continue
		}
		forms = append(forms, sec, url.QueryEscape(sec), url.PathEscape(sec))
	}
	// Longest first, so a URL goes whole before its path does.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range forms {
		s = strings.ReplaceAll(s, f, "[redacted]")
	}
	return s
}
