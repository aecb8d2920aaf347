package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

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
}

// Slack posts one message per batch and edits it in place as the run moves
// on; when a run is aborted or fails it adds the details as a thread reply.
// Its receipt is "channel/ts", or "channel/ts/reply_ts" once the reply is
// posted, so neither is posted twice.
type Slack struct {
	name, channel string
	api           *slack.Client
	links         links
	secrets       []string
}

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
	var opts []slack.Option
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	return &Slack{
		name:    cmp.Or(cfg.Name, "slack"),
		channel: cfg.Channel,
		api:     slack.New(cfg.Token, opts...),
		links:   links{base: base},
		secrets: []string{cfg.Token},
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
	rc := parseSlackReceipt(n.Receipts[s.name])
	opts := m.options()
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
	if rc.ts == "" {
		// A route's channel wins; a message already posted is updated
		// where it is (the receipt names its channel).
		ch, ts, err := s.api.PostMessageContext(ctx, cmp.Or(n.Channel, s.channel), opts...)
		if err != nil {
			retry, werr := classifySlack("chat.postMessage", s.name, err, s.secrets)
			return "", retry, werr
		}
		rc = slackReceipt{channel: ch, ts: ts}
	}
	if th, ok := threadMessage(r); ok && rc.reply == "" {
		_, ts, err := s.api.PostMessageContext(ctx, rc.channel, append(th.options(), slack.MsgOptionTS(rc.ts))...)
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
	return &SlackWebhook{name: cfg.Name, url: cfg.URL, hc: &http.Client{}, links: links{base: base}}, nil
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
