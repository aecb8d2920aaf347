package runner

import (
	"testing"

	. "github.com/lakewap/lakewap/pipeline"
)

// Every failure class has a name, and the step metric's outcome label is
// that name. The hand-indexed arrays that stood in for String had three
// entries in the runner's log and four in the metric: Rejected, indexed
// into the first, panicked.
func TestFailClassString(t *testing.T) {
	for c, want := range map[FailClass]string{Transient: "transient", Permanent: "permanent", Conflict: "conflict", Rejected: "rejected"} {
		if got := c.String(); got != want {
			t.Errorf("FailClass(%d).String() = %q, want %q", int(c), got, want)
		}
		if got := outcome(StepFailed{Class: c}); got != want {
			t.Errorf("outcome of a %s failure = %q", want, got)
		}
	}
	if got := FailClass(99).String(); got != "FailClass(99)" {
		t.Errorf("unknown class: %q", got)
	}
}
