package lakefs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Error is a failed lakeFS call. It unwraps to its class (one of the
// pipeline sentinels, or none for a permanent failure) and to the transport
// error, if there was one.
type Error struct {
	Op      string // what lakewap was doing: "merge", "commit", "create branch", ...
	Repo    string
	Ref     string // branch, commit or "source->dest"; may be empty
	Status  int    // HTTP status; 0 when no response arrived
	Message string // lakeFS's message, or the response body when it had none
	Class   error  // pipeline.ErrTransient, ErrMergeConflict, ErrNotFound, ErrNoChanges or nil
	Cause   error  // transport or context error when Status is 0
}

func (e *Error) Error() string {
	s := "lakefs " + e.Op + " " + e.Repo
	if e.Ref != "" {
		s += " " + e.Ref
	}
	switch {
	case e.Status != 0 && e.Message != "":
		s += fmt.Sprintf(": HTTP %d %q", e.Status, e.Message)
	case e.Status != 0:
		s += fmt.Sprintf(": HTTP %d", e.Status)
	case e.Cause != nil:
		s += ": " + e.Cause.Error()
	}
	if e.Class != nil {
		s += " (" + e.Class.Error() + ")"
	}
	return s
}

func (e *Error) Unwrap() []error {
	return slices.DeleteFunc([]error{e.Class, e.Cause}, func(err error) bool { return err == nil })
}

// opMerge names merges: classify treats a 409 on a merge as a conflict even
// though lakeFS answers a real merge conflict without a message.
const opMerge = "merge"

// classify decides once which pipeline class an HTTP answer belongs to;
// nil means permanent.
func classify(op string, status int, msg string) error {
	lower := strings.ToLower(msg)
	switch {
	// lakeFS answers a lost branch lock with 500 today; match the text too
	// so a change of status upstream keeps it retryable.
	case strings.Contains(lower, "branch is currently locked"), status == http.StatusLocked:
		return pipeline.ErrBranchLocked
	case status == http.StatusNotFound:
		return pipeline.ErrNotFound
	case status == http.StatusPreconditionFailed && op == opMerge:
		return pipeline.ErrHookRefused
	case status == http.StatusConflict && (op == opMerge || strings.Contains(lower, "conflict found")):
		return pipeline.ErrMergeConflict
	case status == http.StatusBadRequest && strings.Contains(lower, "no changes"):
		return pipeline.ErrNoChanges
	case slices.Contains([]int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout}, status):
		return pipeline.ErrTransient
	}
	return nil
}

// ErrListOverLimit is the cause of a listing that stopped past
// Config.MaxListEntries. It is permanent: the listing is that long.
var ErrListOverLimit = errors.New("listing over its limit")

// maxMessage bounds how much of an error answer's message (lakeFS's
// {"message": ...}, or the body) goes into an error: it reaches logs, the
// run's last error and events, and whatever answers may echo a long request.
const maxMessage = 512

// message extracts lakeFS's {"message": ...} or falls back to the body,
// whole: statusError classifies it, then clips it.
func message(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return strings.TrimSpace(string(body))
}

// statusError builds the error for a response with an unexpected status.
func statusError(op, repo, ref string, status int, body []byte) *Error {
	msg := message(body)
	class := classify(op, status, msg)
	if class == pipeline.ErrMergeConflict && strings.HasPrefix(msg, "{") {
		// lakeFS answers a merge conflict with {"reference":""} and no message.
		msg = "conflict found"
	}
	return &Error{Op: op, Repo: repo, Ref: ref, Status: status, Message: schemas.Clip(msg, maxMessage), Class: class}
}

// transportError builds the error for a call that got no response. Network
// failures and timeouts are transient; the caller's cancellation is not, so
// a shutting-down runner stops instead of retrying.
func transportError(parent context.Context, op, repo, ref string, err error) *Error {
	e := &Error{Op: op, Repo: repo, Ref: ref, Cause: err}
	if !errors.Is(parent.Err(), context.Canceled) {
		e.Class = pipeline.ErrTransient
	}
	return e
}

// ErrEntryOverLimit is the cause of a listing refused for one entry past
// its limit (a path longer than an object key, a physical address or a
// checksum no block adapter makes). It is permanent, and a listing over
// its limit (it wraps ErrListOverLimit).
var ErrEntryOverLimit = fmt.Errorf("%w: an entry past its limit", ErrListOverLimit)
