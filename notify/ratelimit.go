package notify

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/schemas"
)

// LimitConfig bounds how many new messages a sink posts for one kind of
// outcome: at most Burst per Per for each dataset, state and reason.
type LimitConfig struct {
	Burst int
	Per   time.Duration
	// Registerer, if set, gets the limit's metric (metrics.go): the new
	// messages held back; Logger gets a line a minute about them.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time // default time.Now
}

// maxLimitKinds bounds the kinds the limiter remembers: datasets come from
// events, so a flood of invented names must not grow it.
const maxLimitKinds = 4096

// Limit wraps a chat sink so that a flood of one kind (thousands of
// batches of one dataset aborted too_many_runs) posts Burst messages per
// window and no more; other datasets and outcomes, and updates of messages
// already posted, go out as before. An announcement is a new message
// (counted under its kind), though it carries its run's receipts. A held-back message is not an error
// and is not retried: the results topic still carries every outcome.
func Limit(s Sink, cfg LimitConfig) Sink {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := newLimitMetrics(cfg.Registerer, cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)))
	return &limited{Sink: s, cfg: cfg, windows: map[string]*window{}, metrics: m}
}

type window struct {
	start time.Time
	n     int
}

type limited struct {
	Sink
	cfg     LimitConfig
	metrics *limitMetrics
	mu      sync.Mutex
	windows map[string]*window
}

func (l *limited) Send(ctx context.Context, n Notification) (string, bool, error) {
	// An announcement is a message of its own, never an update, though it
	// carries the receipts of the run that found it.
	_, announces := announcement(n)
	name := l.Name()
	if !announces && n.Receipts[name] == "" && n.Receipts[PendingKey(name)] != "" {
		// An earlier send of the run was left pending: its message may be
		// in the channel, its receipt lost (a crash, a stop). Found, it is
		// an update: neither counted as new nor held back.
		if f, ok := l.Sink.(finder); ok {
			rc, retry, err := f.Find(ctx, n)
			if err != nil {
				return "", retry, err
			}
			if rc != "" {
				n.Receipts = maps.Clone(n.Receipts)
				n.Receipts[name] = rc
				return l.Sink.Send(ctx, n)
			}
			n.notFound = name
		}
	}
	if (n.Receipts[name] == "" || announces) && !l.allow(kindOf(n)) {
		return "", false, nil
	}
	return l.Sink.Send(ctx, n)
}

// finder is a sink that can find a run's message whose receipt was lost
// (Slack: by the message's metadata), so that Limit counts it as an
// update. Find returns its receipt, or "" when there is none to find.
type finder interface {
	Find(ctx context.Context, n Notification) (receipt string, retry bool, err error)
}

// kindOf is what a flood repeats: the dataset, the state and the reason.
func kindOf(n Notification) string {
	reason := ""
	if a, ok := n.Event.(schemas.BatchAborted); ok {
		reason = a.Reason
	}
	if c, ok := announcement(n); ok {
		reason = c.Kind
	}
	return schemas.Clip(n.Dataset, 256) + "/" + n.State + "/" + reason
}

func (l *limited) allow(kind string) bool {
	now := l.cfg.Now()
	l.mu.Lock()
	w := l.windows[kind]
	if w == nil {
		if len(l.windows) >= maxLimitKinds {
			for k, o := range l.windows {
				if now.Sub(o.start) >= l.cfg.Per {
					delete(l.windows, k)
				}
			}
		}
		if len(l.windows) >= maxLimitKinds {
			kind = "other"
			w = l.windows[kind]
		}
		if w == nil {
			w = &window{start: now}
			l.windows[kind] = w
		}
	}
	if now.Sub(w.start) >= l.cfg.Per {
		w.start, w.n = now, 0
	}
	ok := w.n < l.cfg.Burst
	if ok {
		w.n++
	}
	l.mu.Unlock()
	if !ok {
		l.metrics.held(kind, now)
	}
	return ok
}
