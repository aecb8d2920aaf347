package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on identifiers. Batch ids may use ASCII letters, digits and
// - _ . : + @ (enough for UUIDs, ISO timestamps and Airflow run ids); names
// of writes may use letters, digits and _ - . / (table names, paths).
const (
	MaxBatchIDLen   = 200
	MaxWriteNameLen = 128
	MaxDatasetLen   = 128
	// MaxBranchNameLen bounds BranchName. lakeFS itself only requires
	// ^\w[-\w]*$; 128 keeps names readable and far from key-size limits of
	// lakeFS's KV stores.
	MaxBranchNameLen = 128
	// RevertScratchSuffix names a run's revert audit's scratch branch
	// after its batch branch (pipeline/runner).
	RevertScratchSuffix = "-revert-audit"
	// MaxLakewapBranchNameLen bounds every branch lakewap makes, scratch
	// branches included: the janitor's listing keeps no longer name.
	MaxLakewapBranchNameLen = MaxBranchNameLen + len(RevertScratchSuffix)
	// BranchPrefix starts every batch branch name.
	BranchPrefix = "wap-"
	// maxFutureSkew is how far ahead of our clock a producer's timestamp may be.
	maxFutureSkew = 24 * time.Hour
	// DefaultMaxDeadlineHorizon is how far after now a write deadline may
	// be unless Rules says otherwise: a run waits at most this long.
	DefaultMaxDeadlineHorizon = 7 * 24 * time.Hour
	// MaxExpectedWrites bounds expected_writes: the run stores each name and
	// the time its write completed.
	MaxExpectedWrites = 256
	// MaxPaths bounds the object paths of one WriteComplete.
	MaxPaths = 1000
	// MaxPathLen, MaxRefLen, MaxTextLen bound an object path, a source ref,
	// and free text (producer, cancel reason, attribute values).
	MaxPathLen = 1024
	MaxRefLen  = 256
	MaxTextLen = 1024
	// MaxAttributes bounds the attributes map of a BatchLanded.
	MaxAttributes = 64
	// MaxProblems is how many problems a validation error lists; the rest
	// are counted, so the error of a hostile event stays small.
	MaxProblems = 5
	// maxQuoted is how much of a bad value a problem quotes.
	maxQuoted = 64
)

// ValidationError is one problem with one field of a decoded event.
type ValidationError struct {
	Field   string
	Problem string
}

func (e *ValidationError) Error() string { return "invalid event: " + e.Field + ": " + e.Problem }

// Clip shortens s to at most limit bytes on a rune boundary, saying how
// much was cut: the one way stored and sent texts are held to a budget.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("… (%d bytes clipped)", len(s)-limit)
	cut := max(limit-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// quote is %q of s, clipped to maxQuoted bytes: a problem names the bad
// value without repeating all of it.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// text checks a free-text field: valid UTF-8, at most max bytes.
func text(s string, max int) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case len(s) > max:
		return fmt.Sprintf("has %d bytes, more than %d", len(s), max)
	}
	return ""
}

func isWordChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
}

// ValidateBatchID checks a batch id: 1..MaxBatchIDLen characters, each an
// ASCII letter, digit or one of - _ . : + @.
func ValidateBatchID(id string) error {
	switch {
	case id == "":
		return &ValidationError{Field: "batch_id", Problem: "is empty"}
	case len(id) > MaxBatchIDLen:
		return &ValidationError{Field: "batch_id", Problem: fmt.Sprintf("has %d characters, more than %d", len(id), MaxBatchIDLen)}
	}
	for _, r := range id {
		if r >= unicode.MaxASCII || !isWordChar(r) && !strings.ContainsRune("-.:+@", r) {
			return &ValidationError{Field: "batch_id", Problem: fmt.Sprintf("contains %q; allowed are letters, digits and - _ . : + @", r)}
		}
	}
	return nil
}

// validName checks a write (table or writer) name: 1..MaxWriteNameLen
// characters from letters, digits and _ - . /, starting with a letter, digit
// or underscore, without empty or ".." path segments.
func validName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > MaxWriteNameLen:
		return fmt.Sprintf("has %d characters, more than %d", len(s), MaxWriteNameLen)
	case !isWordChar(rune(s[0])):
		return fmt.Sprintf("%s must start with a letter, digit or underscore", quote(s))
	}
	for _, r := range s {
		if r >= unicode.MaxASCII || !isWordChar(r) && !strings.ContainsRune("-./", r) {
			return fmt.Sprintf("%s contains %q; allowed are letters, digits and _ - . /", quote(s), r)
		}
	}
	if segs := strings.Split(s, "/"); slices.Contains(segs, "") || slices.Contains(segs, "..") {
		return fmt.Sprintf("%s has an empty or \"..\" path segment", quote(s))
	}
	return ""
}

// validPath checks an object path reported by a writer: relative, no ".."
// segments, no control characters.
func validPath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case text(p, MaxPathLen) != "":
		return text(p, MaxPathLen)
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%s is absolute; paths are relative to the branch root", quote(p))
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return fmt.Sprintf("%s contains a control character", quote(p))
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Sprintf("%s has a \"..\" segment", quote(p))
	}
	return ""
}

// validator collects problems: the first MaxProblems, and a count of the rest.
type validator struct {
	now     time.Time
	horizon time.Duration
	errs    []error
	more    int
}

func (v *validator) add(field, problem string) {
	if problem != "" {
		v.addErr(&ValidationError{Field: field, Problem: problem})
	}
}

func (v *validator) addErr(err error) {
	if len(v.errs) >= MaxProblems {
		v.more++
		return
	}
	v.errs = append(v.errs, err)
}

func (v *validator) err() error {
	if v.more > 0 {
		return errors.Join(append(v.errs, &ValidationError{Field: "event", Problem: fmt.Sprintf("and %d more problem(s)", v.more)})...)
	}
	return errors.Join(v.errs...)
}

// timestamp checks t is set and not more than a day ahead of now.
func (v *validator) timestamp(field string, t time.Time) {
	switch {
	case t.IsZero() || t.UnixMilli() <= 0:
		v.add(field, "is not set")
	case t.After(v.now.Add(maxFutureSkew)):
		v.add(field, fmt.Sprintf("%s is more than %s in the future", t.UTC().Format(time.RFC3339), maxFutureSkew))
	}
}

// deadline checks a write deadline is after occurred_at and within the
// horizon: a run never waits longer than that, and a deadline in year
// 10000 (Long.MAX_VALUE milliseconds) cannot even be written as JSON.
func (v *validator) deadline(field string, d *time.Time, occurred time.Time) {
	switch {
	case d == nil:
	case d.After(v.now.Add(v.horizon)) || d.Year() > 9999:
		v.add(field, fmt.Sprintf("%s is more than %s after now (the maximum deadline horizon)", clipTime(*d), v.horizon))
	case !occurred.IsZero() && !d.After(occurred):
		v.add(field, fmt.Sprintf("%s is not after occurred_at %s",
			d.UTC().Format(time.RFC3339Nano), occurred.UTC().Format(time.RFC3339Nano)))
	}
}

// clipTime formats t, or says it is out of range for RFC 3339.
func clipTime(t time.Time) string {
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Sprintf("a time in year %d", y)
	}
	return t.UTC().Format(time.RFC3339)
}

func (v *validator) writes(field string, names []string) {
	if len(names) == 0 {
		v.add(field, "is empty")
		return
	}
	if len(names) > MaxExpectedWrites {
		v.add(field, fmt.Sprintf("has %d names, more than %d", len(names), MaxExpectedWrites))
		return
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		item := fmt.Sprintf("%s[%d]", field, i)
		if p := validName(n); p != "" {
			v.add(item, p)
			continue
		}
		if seen[n] {
			v.add(item, fmt.Sprintf("%s is listed twice", quote(n)))
		}
		seen[n] = true
	}
}

// Rules are the bounds Validate applies beyond the event's own shape.
type Rules struct {
	// Known reports whether a dataset is configured; nil accepts any.
	Known func(dataset string) bool
	// SourceAllowed reports whether a batch of a configured dataset may
	// branch from ref (BatchLanded.source_ref); nil allows any.
	SourceAllowed func(dataset, ref string) bool
	Now           time.Time
	// MaxDeadlineHorizon bounds write_deadline - now; default
	// DefaultMaxDeadlineHorizon.
	MaxDeadlineHorizon time.Duration
}

// Validate checks a decoded event: the batch id (see ValidateBatchID), the
// dataset (non-empty; known to the config when known is not nil), timestamps
// (set, at most a day after now), expected writes (non-empty, unique,
// well-formed names), object paths and the write deadline (after
// occurred_at). Problems are *ValidationError values, joined when there are
// several; use errors.As to get the first. Batch id problems come first, so
// a caller can tell "no usable batch id" from "invalid batch".
func Validate(ev Event, known func(dataset string) bool, now time.Time) error {
	return Rules{Known: known, Now: now}.Validate(ev)
}

// Validate is the package's Validate with these rules. At most MaxProblems
// problems are listed, followed by a count of the others; every string is
// bounded and must be valid UTF-8.
func (rules Rules) Validate(ev Event) error {
	known := rules.Known
	if ev == nil {
		return &ValidationError{Field: "event", Problem: "is missing"}
	}
	v := &validator{now: rules.Now, horizon: rules.MaxDeadlineHorizon}
	if v.horizon <= 0 {
		v.horizon = DefaultMaxDeadlineHorizon
	}
	if err := ValidateBatchID(ev.Batch()); err != nil {
		v.addErr(err)
	}
	switch d := ev.DatasetName(); {
	case d == "":
		v.add("dataset", "is empty")
	case len(d) > MaxDatasetLen:
		v.add("dataset", fmt.Sprintf("has %d characters, more than %d", len(d), MaxDatasetLen))
	case !utf8.ValidString(d):
		v.add("dataset", "is not valid UTF-8")
	case known != nil && !known(d):
		v.add("dataset", fmt.Sprintf("%s is not a configured dataset", quote(d)))
	}
	switch e := ev.(type) {
	case BatchLanded:
		v.timestamp("occurred_at", e.OccurredAt)
		v.writes("expected_writes", e.ExpectedWrites)
		if p := text(e.SourceRef, MaxRefLen); p != "" {
			v.add("source_ref", p)
		} else if strings.IndexFunc(e.SourceRef, unicode.IsSpace) >= 0 {
			v.add("source_ref", fmt.Sprintf("%s contains white space", quote(e.SourceRef)))
		} else if e.SourceRef != "" && rules.SourceAllowed != nil && (known == nil || known(e.Dataset)) && !rules.SourceAllowed(e.Dataset, e.SourceRef) {
			v.add("source_ref", fmt.Sprintf("%s is not a ref dataset %s may branch from (its source_refs)", quote(e.SourceRef), e.Dataset))
		}
		v.deadline("write_deadline", e.WriteDeadline, e.OccurredAt)
		v.add("producer", text(e.Producer, MaxTextLen))
		if len(e.Attributes) > MaxAttributes {
			v.add("attributes", fmt.Sprintf("has %d entries, more than %d", len(e.Attributes), MaxAttributes))
		} else {
			for _, k := range slices.Sorted(maps.Keys(e.Attributes)) { // problems in a stable order
				switch {
				case k == "":
					v.add("attributes", "has an empty key")
				case text(k, MaxWriteNameLen) != "":
					v.add("attributes", "key "+text(k, MaxWriteNameLen))
				case text(e.Attributes[k], MaxTextLen) != "":
					v.add("attributes."+k, text(e.Attributes[k], MaxTextLen))
				default:
					v.add("attributes."+k, UILinkProblem(k, e.Attributes[k]))
				}
			}
		}
	case WriteComplete:
		v.timestamp("occurred_at", e.OccurredAt)
		v.add("write", validName(e.Write))
		if len(e.Paths) > MaxPaths {
			v.add("paths", fmt.Sprintf("has %d paths, more than %d", len(e.Paths), MaxPaths))
		} else {
			for i, p := range e.Paths {
				v.add(fmt.Sprintf("paths[%d]", i), validPath(p))
			}
		}
		if e.RowCount != nil && *e.RowCount < 0 {
			v.add("row_count", fmt.Sprintf("%d is negative", *e.RowCount))
		}
	case BatchCancelled:
		v.timestamp("occurred_at", e.OccurredAt)
		v.add("reason", text(e.Reason, MaxTextLen))
		if e.RequestID != "" || e.RequestedBy != "" {
			v.request(e.RequestID, e.RequestedBy)
		}
	case RetryRequested:
		v.timestamp("occurred_at", e.OccurredAt)
		v.request(e.RequestID, e.RequestedBy)
	case RevertRequested:
		v.timestamp("occurred_at", e.OccurredAt)
		v.request(e.RequestID, e.RequestedBy)
		if strings.TrimSpace(e.Reason) == "" {
			v.add("reason", "is empty")
		} else {
			v.add("reason", text(e.Reason, MaxTextLen))
		}
	case RequestRefused:
		v.timestamp("occurred_at", e.OccurredAt)
	case BranchReady:
		v.timestamp("occurred_at", e.OccurredAt)
		v.writes("expected_writes", e.ExpectedWrites)
		if e.Branch == "" {
			v.add("branch", "is empty")
		}
	case BatchPublished:
		v.timestamp("landed_at", e.LandedAt)
		v.timestamp("published_at", e.PublishedAt)
		if e.CommitID == "" {
			v.add("commit_id", "is empty")
		}
	case BatchAborted:
		v.timestamp("occurred_at", e.OccurredAt)
		if !slices.Contains(abortReasons, e.Reason) {
			v.add("reason", fmt.Sprintf("%s is not a known abort reason", quote(e.Reason)))
		}
	case BatchFailed:
		v.timestamp("occurred_at", e.OccurredAt)
	case UnattestedChange:
		v.timestamp("occurred_at", e.OccurredAt)
		if e.Kind != ChangeUnattestedCommit && e.Kind != ChangeSuiteChanged {
			v.add("kind", fmt.Sprintf("%s is not a known kind", quote(e.Kind)))
		}
		if e.CommitID == "" {
			v.add("commit_id", "is empty")
		}
	case BatchReverted:
		v.timestamp("occurred_at", e.OccurredAt)
		if e.PublishedCommitID == "" {
			v.add("published_commit_id", "is empty")
		}
		if e.CommitID == "" {
			v.add("commit_id", "is empty")
		}
	default:
		v.add("event", fmt.Sprintf("unknown event type %T", ev))
	}
	return v.err()
}

// BranchName returns the lakeFS branch of a batch: "wap-<dataset>-<batch>".
// It always matches lakeFS's ^\w[-\w]*$, is at most MaxBranchNameLen long,
// and is deterministic. The plain form is used only when it is unambiguous:
// the dataset is all letters, digits and underscores, and the batch id is
// letters, digits, underscores and single dashes, not starting with a dash;
// such names never contain "--". Otherwise (other characters, or too long)
// the parts are mapped to word characters, shortened, and followed by "--"
// and 24 hex digits (96 bits) of SHA-256(dataset, batch id), so distinct
// batches keep distinct branches. 48 bits, as before review 21, let a
// producer search another batch id with the branch of one it foresaw (2^47
// hashes, hours on a GPU), and two runs then shared one branch.
func BranchName(dataset, batchID string) string {
	return branchName(dataset, batchID, branchHashBytes)
}

// branchHashBytes is how much of the SHA-256 a hashed branch name keeps.
const branchHashBytes = 12

// IsBranchOf reports whether branch is the batch's: its BranchName, or the
// name with a 48-bit hash that runs stored before review 21 hold.
func IsBranchOf(branch, dataset, batchID string) bool {
	return branch == BranchName(dataset, batchID) || branch == branchName(dataset, batchID, 6)
}

func branchName(dataset, batchID string, hashBytes int) string {
	plainDataset := dataset != "" && strings.IndexFunc(dataset, func(r rune) bool { return !isWordChar(r) }) < 0
	plainBatch := batchID != "" && batchID[0] != '-' && !strings.Contains(batchID, "--") &&
		strings.IndexFunc(batchID, func(r rune) bool { return !isWordChar(r) && r != '-' }) < 0
	name := BranchPrefix + dataset + "-" + batchID
	if plainDataset && plainBatch && len(name) <= MaxBranchNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(dataset + "\x00" + batchID))
	suffix := "--" + hex.EncodeToString(sum[:hashBytes])
	word := func(s string, keepDash bool) string {
		return strings.Map(func(r rune) rune {
			if isWordChar(r) || keepDash && r == '-' {
				return r
			}
			return '_'
		}, s)
	}
	name = BranchPrefix + word(dataset, false) + "-" + word(batchID, true)
	if room := MaxBranchNameLen - len(suffix); len(name) > room {
		name = name[:room]
	}
	return name + suffix
}

// lakeFSUILink matches the commit metadata keys lakeFS's UI opens as a
// link: a button "Open <name> UI" on the commit that sets window.location
// to the value, whatever its scheme (lakeFS webui,
// commits/commit/metadata.tsx: /::lakefs::(.*)::url\[ur[il]:ui\]$/, not
// anchored at the start; matched here in any case).
var lakeFSUILink = regexp.MustCompile(`(?i)::lakefs::(.*)::url\[ur[il]:ui\]$`)

// UILinkProblem says why value may not be the value of commit metadata key
// (a BatchLanded attribute becomes the publish commit's metadata): "" when
// lakeFS's UI does not open key as a link, or value is an absolute http(s)
// URL. Any other (javascript:, data:, a relative address) would put a
// button on lakewap's publish commit that runs or opens what the producer
// chose, with the session of whoever clicks it.
func UILinkProblem(key, value string) string {
	if !lakeFSUILink.MatchString(key) {
		return ""
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.IndexFunc(value, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Sprintf("%s is not an http(s) URL: lakeFS's UI opens this key's value as a link on the publish commit", quote(value))
	}
	return ""
}
