package pipeline

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// delivery is a run's notification bookkeeping, apart from its WAP state:
// the outbox of result events not yet confirmed sent, what the sinks left
// as receipts, and the re-notification of a best-effort sink (Slack) that
// still owes the last event. A transition only adds to the outbox; its
// methods are pure. Run embeds it, so the stored record is unchanged.
type delivery struct {
	// Outbox holds result events not yet confirmed sent, oldest first.
	Outbox   []Outgoing        `json:"outbox,omitempty"`
	Receipts map[string]string `json:"receipts,omitempty"`
	Sent     int               `json:"sent,omitempty"` // result events confirmed sent
	// LastSent is the last delivered result event; it is sent again when a
	// best-effort sink still owes it, at NotifyRetryAt.
	LastSent      *Outgoing `json:"last_sent,omitempty"`
	NotifyRetryAt time.Time `json:"notify_retry_at,omitempty"`
	NotifyRetries int       `json:"notify_retries,omitempty"`
}

// add queues o behind what is waiting.
func (d *delivery) add(o Outgoing) { d.Outbox = append(d.Outbox, o) }

// sent applies a confirmed delivery: the entry leaves the outbox, the
// receipts are the notifier's, and a sink that still owes it is asked
// again after p.NotifyRetry, at most p.NotifyRetries times. changed says
// whether anything did (a second Sent of the same entry changes nothing).
func (d delivery) sent(in Sent, p Policy, now time.Time) (_ delivery, changed bool) {
	was := d
	d = d.clone()
	i := slices.IndexFunc(d.Outbox, func(o Outgoing) bool { return o.EventID == in.EventID })
	if i >= 0 {
		o := d.Outbox[i]
		d.Outbox = append(d.Outbox[:i:i], d.Outbox[i+1:]...)
		d.Sent++
		if o.RunEvent() {
			d.LastSent = &o
		}
	}
	if in.Receipts != nil {
		d.Receipts = in.Receipts // the notifier returns the whole updated set
	}
	d.NotifyRetryAt = time.Time{}
	switch owed := d.owed(); {
	case owed && d.NotifyRetries < p.NotifyRetries:
		d.NotifyRetries++
		d.NotifyRetryAt = now.Add(p.NotifyRetry)
	case !owed:
		d.NotifyRetries = 0
	}
	changed = i >= 0 || !maps.Equal(d.Receipts, was.Receipts) ||
		!d.NotifyRetryAt.Equal(was.NotifyRetryAt) || d.NotifyRetries != was.NotifyRetries
	return d, changed
}

// owed reports whether a sink has not delivered the latest notification.
func (d delivery) owed() bool {
	for k := range d.Receipts {
		if strings.HasPrefix(k, schemas.PendingReceiptPrefix) {
			return true
		}
	}
	return false
}

// idle reports whether nothing waits to be sent or sent again.
func (d delivery) idle() bool { return len(d.Outbox) == 0 && d.NotifyRetryAt.IsZero() }

// next is the delivery work at now for a run in state: send the oldest
// outbox entry, wake for a re-notification, or send the last event again
// (sinks that delivered it skip it by their receipts; refreshID names a
// state-only one). ok is false when the delivery is idle.
func (d delivery) next(state State, refreshID string, now time.Time) (e Effect, ok bool) {
	switch {
	case len(d.Outbox) > 0:
		return Effect{Kind: DoSend, Send: d.Outbox[0]}, true
	case d.NotifyRetryAt.IsZero():
		return Effect{}, false
	case d.NotifyRetryAt.After(now):
		return Effect{Kind: DoWake, At: d.NotifyRetryAt}, true
	}
	o := Outgoing{EventID: refreshID, State: state}
	if d.LastSent != nil {
		o = *d.LastSent
		o.State = state
	}
	return Effect{Kind: DoSend, Send: o}, true
}

// trim drops the sample rows of the events waiting or owed.
func (d delivery) trim() delivery {
	d = d.clone()
	for i := range d.Outbox {
		d.Outbox[i] = trimOutgoing(d.Outbox[i], true)
	}
	if d.LastSent != nil {
		o := trimOutgoing(*d.LastSent, true)
		d.LastSent = &o
	}
	return d
}

func (d delivery) clone() delivery {
	c := d
	c.Outbox = append([]Outgoing(nil), d.Outbox...)
	if d.LastSent != nil {
		ls := *d.LastSent
		c.LastSent = &ls
	}
	c.Receipts = maps.Clone(d.Receipts)
	return c
}
