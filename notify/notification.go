package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// terminal reports whether state ends a run: the only states an incoming
// webhook is told about, since it cannot edit what it posted.
func terminal(state string) bool {
	return state == schemas.StatePublished || state == schemas.StateAborted || state == schemas.StateFailed
}

// Notification is one thing to tell the world about a run.
type Notification struct {
	// Event is the result event (BranchReady, BatchPublished, BatchAborted or
	// BatchFailed) or nil for a change of state alone. Its event id is what
	// makes a repeated delivery recognisable downstream.
	Event schemas.Event
	// State is the run state after the event (one of the schemas.State* constants).
	State string

	Dataset    string
	BatchID    string
	Repository string // lakeFS repository, for links when Event carries none
	Branch     string // the batch's branch, likewise
	// LandedAt is when the run started; it gives a duration to events that
	// carry none (BatchFailed, state changes).
	LandedAt time.Time

	// Receipts is what earlier notifications of this batch left (the map
	// Notify returned last time, as stored in the run state). Sinks use it to
	// update in place and to skip what they already delivered.
	Receipts map[string]string

	// Mention is set by the Dispatcher from the matching Route: who to ping
	// when the run is aborted or failed (e.g. "<!subteam^S123>" or "<@U123>").
	Mention string
	// Channel is set by the Dispatcher from the matching Route: the Slack
	// channel to post a new message in, instead of the sink's own.
	Channel string

	// RequestID names the operator request (lakewap retry, revert, cancel)
	// the event answers; the Kafka sink puts it in the wap.request_id header.
	RequestID string
	// ResultOnly sends the event to the required sinks (the results topic)
	// only: answers to operator requests are not part of a run's message.
	ResultOnly bool

	// Trace is the W3C trace context the batch's producer sent (or the
	// span of lakewap's own that continues it); the Kafka sink puts it in
	// the traceparent and tracestate headers, so writers and downstream
	// consumers continue the same trace.
	Trace schemas.TraceContext

	// notFound names the sink whose lookup of the run's message (a lost
	// receipt's) found none just now (Limit did it): the sink does not look
	// again.
	notFound string
}

// EventID returns the stable id of a result event, or "" for other events
// and nil.
func EventID(ev schemas.Event) string {
	if ev == nil {
		return ""
	}
	return ev.ID()
}

// Route sends the notifications that match it to one sink. A notification
// goes to a sink at most once, however many of its routes match.
type Route struct {
	Sink     string   `yaml:"sink" json:"sink"`
	Datasets []string `yaml:"datasets" json:"datasets,omitempty"` // empty = every dataset
	On       []string `yaml:"on" json:"on,omitempty"`             // run states; empty = every state
	// Mention is added to the message when the run is aborted or failed.
	Mention string `yaml:"mention" json:"mention,omitempty"`
	// Channel, for a Slack bot sink, is where this route's batches are
	// posted instead of the sink's channel.
	Channel string `yaml:"channel" json:"channel,omitempty"`
}

func (r Route) matches(n Notification) bool {
	if len(r.Datasets) > 0 && !slices.Contains(r.Datasets, n.Dataset) {
		return false
	}
	if _, ok := announcement(n); ok {
		return true // about the target, not a state of the run
	}
	return len(r.On) == 0 || slices.Contains(r.On, n.State)
}

func (r Route) validate(i int, sinks map[string]Sink) error {
	s, ok := sinks[r.Sink]
	switch {
	case r.Sink == "":
		return fmt.Errorf("routes[%d].sink: empty", i)
	case !ok:
		return fmt.Errorf("routes[%d].sink: no sink named %q", i, r.Sink)
	case isRequired(s):
		return fmt.Errorf("routes[%d].sink: %q is required and receives every notification; it takes no route", i, r.Sink)
	}
	for j, on := range r.On {
		if !slices.Contains(schemas.States(), on) {
			return fmt.Errorf("routes[%d].on[%d]: unknown state %q (want one of %s)", i, j, on, strings.Join(schemas.States(), ", "))
		}
	}
	if r.Mention != "" && !strings.HasPrefix(r.Mention, "<") {
		return fmt.Errorf("routes[%d].mention: %q is not a Slack mention such as <@U123> or <!subteam^S123>", i, r.Mention)
	}
	return nil
}
