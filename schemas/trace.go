package schemas

import (
	"encoding/hex"
	"strings"
)

// W3C Trace Context headers, as OpenTelemetry's Kafka propagation carries
// them: taken from an input's headers, kept in its run, and put on every
// result message of the batch.
const (
	// HeaderTraceParent is the W3C traceparent of a message: version, trace id, parent span id, flags.
	HeaderTraceParent = "traceparent"
	// HeaderTraceState is the W3C tracestate of a message: vendors' key=value list, at most 512 bytes here.
	HeaderTraceState = "tracestate"
)

// MaxTraceStateBytes bounds a kept tracestate. W3C lets a receiver drop a
// tracestate it will not carry whole (at most 32 members; 512 bytes is
// what the spec says propagators should at least pass on).
const MaxTraceStateBytes = 512

// TraceContext is the W3C trace context a batch's producer sent. The zero
// value is no trace.
type TraceContext struct {
	Parent string `json:"traceparent,omitempty"`
	State  string `json:"tracestate,omitempty"`
}

// IsZero says there is no trace.
func (t TraceContext) IsZero() bool { return t.Parent == "" }

// TraceID is the 32 hex digits of the trace id, "" without a trace.
func (t TraceContext) TraceID() string {
	if t.IsZero() {
		return ""
	}
	return t.Parent[3:35]
}

// ParseTraceContext returns the trace context of a traceparent and
// tracestate header, or the zero value when traceparent is not a valid
// version-00 traceparent (or a later version's, read as 00 reads it): a
// receiver of an invalid one starts a trace of its own, it does not refuse
// the message. A tracestate is kept only beside a valid traceparent, and
// only when it is printable ASCII of at most MaxTraceStateBytes.
func ParseTraceContext(parent, state string) TraceContext {
	if !validTraceParent(parent) {
		return TraceContext{}
	}
	t := TraceContext{Parent: parent[:55]}
	state = strings.TrimSpace(state)
	if len(state) <= MaxTraceStateBytes && printable(state) {
		t.State = state
	}
	return t
}

// validTraceParent: "vv-<32 hex trace id>-<16 hex span id>-ff", lower
// case, ids not all zero, version not ff; a version above 00 may append
// fields after a dash.
func validTraceParent(s string) bool {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	version, trace, span, flags := s[0:2], s[3:35], s[36:52], s[53:55]
	for _, part := range []string{version, trace, span, flags} {
		if !lowerHex(part) {
			return false
		}
	}
	switch {
	case version == "ff", version == "00" && len(s) != 55, len(s) > 55 && s[55] != '-':
		return false
	case strings.Trim(trace, "0") == "", strings.Trim(span, "0") == "":
		return false
	}
	return true
}

func lowerHex(s string) bool {
	if _, err := hex.DecodeString(s); err != nil {
		return false
	}
	return strings.ToLower(s) == s
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
