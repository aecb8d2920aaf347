package audit

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// nearer says whether after, a count-less check's result failing with a
// change, is no farther from the check's bounds than before, its result
// failing at the base, for a kind whose observed value tells that distance
// (boundDistance). False when the check is not in suite, is of another
// kind, or either value cannot be read: the exact rule of worse holds.
func nearer(suite Suite, after, before schemas.CheckResult) bool {
	i := slices.IndexFunc(suite.Checks, func(k Check) bool { return k.ID() == after.Name })
	if i < 0 || before.Kind != after.Kind || suite.Checks[i].Kind != after.Kind {
		return false
	}
	a, ok := boundDistance(suite.Checks[i], after.Observed)
	if !ok {
		return false
	}
	b, ok := boundDistance(suite.Checks[i], before.Observed)
	return ok && a <= b
}

// Observed values of the kinds boundDistance reads, whole (a value with
// more said after it, or another wording, is not read).
var (
	rowCountObserved = regexp.MustCompile(`^(\d+) rows$`)
	volumeObserved   = regexp.MustCompile(`(?s)^(\d+) rows vs (\d+) on .* \([+-][0-9.]+%\)$`)
	freshObserved    = regexp.MustCompile(`^newest \S+, (\S+) before batch time$`)
)

// boundDistance is how far observed, a result of check c, lies outside c's
// bounds (0 within them): rows for row_count, percentage points for
// volume_change, the age beyond max_age in seconds for freshness. ok is
// false for another kind, or a value not read (no values, a timestamp
// after now). Not stat: its min or max moving toward a bound can come
// with rows of their own beyond it (a max of 9.5 over 5 deleted, a
// thousand rows of 7 added), so a failing stat keeps the exact rule.
func boundDistance(c Check, observed string) (float64, bool) {
	switch c.Kind {
	case KindRowCount:
		m := rowCountObserved.FindStringSubmatch(observed)
		if m == nil {
			return 0, false
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		return outside(float64(n), c.Min, c.Max), err == nil
	case KindVolumeChange:
		m := volumeObserved.FindStringSubmatch(observed)
		if m == nil {
			return 0, false
		}
		total, err1 := strconv.ParseInt(m[1], 10, 64)
		base, err2 := strconv.ParseInt(m[2], 10, 64)
		if err1 != nil || err2 != nil || base <= 0 {
			return 0, false
		}
		pct := (float64(total) - float64(base)) / float64(base) * 100
		var d float64
		if c.MaxDropPct != nil {
			d += math.Max(0, -pct-*c.MaxDropPct)
		}
		if c.MaxGrowthPct != nil {
			d += math.Max(0, pct-*c.MaxGrowthPct)
		}
		return d, true
	case KindFreshness:
		m := freshObserved.FindStringSubmatch(observed)
		maxAge, err := parseAge(c.MaxAge)
		if m == nil || err != nil {
			return 0, false
		}
		age, err := time.ParseDuration(m[1])
		if err != nil {
			return 0, false
		}
		return math.Max(0, (age - maxAge).Seconds()), true
	}
	return 0, false
}

// outside is how far x lies outside [min, max]; 0 within.
func outside(x float64, min, max *float64) float64 {
	switch {
	case min != nil && x < *min:
		return *min - x
	case max != nil && x > *max:
		return x - *max
	}
	return 0
}
