package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
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
	// BranchPrefix starts every batch branch name.
	BranchPrefix = "wap-"
	// maxFutureSkew is how far ahead of our clock a producer's timestamp may be.
	maxFutureSkew = 24 * time.Hour
)

// ValidationError is one problem with one field of a decoded event.
type ValidationError struct {
	Field   string
	Problem string
}

func (e *ValidationError) Error() string { return "invalid event: " + e.Field + ": " + e.Problem }

func isBatchIDChar(r rune) bool {
	return r < unicode.MaxASCII && (isWordChar(r) || strings.ContainsRune("-.:+@", r))
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
		if !isBatchIDChar(r) {
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
		return fmt.Sprintf("%q must start with a letter, digit or underscore", s)
	}
	for _, r := range s {
		if r >= unicode.MaxASCII || !isWordChar(r) && !strings.ContainsRune("-./", r) {
			return fmt.Sprintf("%q contains %q; allowed are letters, digits and _ - . /", s, r)
		}
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == ".." {
			return fmt.Sprintf("%q has an empty or \"..\" path segment", s)
		}
	}
	return ""
}

// validPath checks an object path reported by a writer: relative, no ".."
// segments, no control characters.
func validPath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is absolute; paths are relative to the branch root", p)
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Sprintf("%q contains a control character", p)
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Sprintf("%q has a \"..\" segment", p)
		}
	}
	return ""
}

// validator collects problems.
type validator struct {
	now  time.Time
	errs []error
}

func (v *validator) add(field, problem string) {
	if problem != "" {
		v.errs = append(v.errs, &ValidationError{Field: field, Problem: problem})
	}
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

func (v *validator) writes(field string, names []string) {
	if len(names) == 0 {
		v.add(field, "is empty")
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
			v.add(item, fmt.Sprintf("%q is listed twice", n))
		}
		seen[n] = true
	}
}

// Validate checks a decoded event: the batch id (see ValidateBatchID), the
// dataset (non-empty; known to the config when known is not nil), timestamps
// (set, at most a day after now), expected writes (non-empty, unique,
// well-formed names), object paths and the write deadline (after
// occurred_at). Problems are *ValidationError values, joined when there are
// several; use errors.As to get the first. Batch id problems come first, so
// a caller can tell "no usable batch id" from "invalid batch".
func Validate(ev Event, known func(dataset string) bool, now time.Time) error {
	if ev == nil {
		return &ValidationError{Field: "event", Problem: "is missing"}
	}
	v := &validator{now: now}
	if err := ValidateBatchID(ev.Batch()); err != nil {
		v.errs = append(v.errs, err)
	}
	dataset := func(d string) {
		switch {
		case d == "":
			v.add("dataset", "is empty")
		case len(d) > MaxDatasetLen:
			v.add("dataset", fmt.Sprintf("has %d characters, more than %d", len(d), MaxDatasetLen))
		case known != nil && !known(d):
			v.add("dataset", fmt.Sprintf("%q is not a configured dataset", d))
		}
	}
	switch e := ev.(type) {
	case BatchLanded:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
		v.writes("expected_writes", e.ExpectedWrites)
		if strings.IndexFunc(e.SourceRef, unicode.IsSpace) >= 0 {
			v.add("source_ref", fmt.Sprintf("%q contains white space", e.SourceRef))
		}
		if e.WriteDeadline != nil && !e.OccurredAt.IsZero() && !e.WriteDeadline.After(e.OccurredAt) {
			v.add("write_deadline", fmt.Sprintf("%s is not after occurred_at %s",
				e.WriteDeadline.UTC().Format(time.RFC3339Nano), e.OccurredAt.UTC().Format(time.RFC3339Nano)))
		}
		for k := range e.Attributes {
			if k == "" {
				v.add("attributes", "has an empty key")
			}
		}
	case WriteComplete:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
		v.add("write", validName(e.Write))
		for i, p := range e.Paths {
			v.add(fmt.Sprintf("paths[%d]", i), validPath(p))
		}
		if e.RowCount != nil && *e.RowCount < 0 {
			v.add("row_count", fmt.Sprintf("%d is negative", *e.RowCount))
		}
	case BatchCancelled:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
	case BranchReady:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
		v.writes("expected_writes", e.ExpectedWrites)
		if e.Branch == "" {
			v.add("branch", "is empty")
		}
	case BatchPublished:
		dataset(e.Dataset)
		v.timestamp("landed_at", e.LandedAt)
		v.timestamp("published_at", e.PublishedAt)
		if e.CommitID == "" {
			v.add("commit_id", "is empty")
		}
	case BatchAborted:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
		switch e.Reason {
		case ReasonAuditFailed, ReasonWriteTimeout, ReasonCancelled, ReasonMergeConflict, ReasonInvalid:
		default:
			v.add("reason", fmt.Sprintf("%q is not a known abort reason", e.Reason))
		}
	case BatchFailed:
		dataset(e.Dataset)
		v.timestamp("occurred_at", e.OccurredAt)
	case BatchReverted:
		dataset(e.Dataset)
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
	return errors.Join(v.errs...)
}

// BranchName returns the lakeFS branch of a batch: "wap-<dataset>-<batch>".
// It always matches lakeFS's ^\w[-\w]*$, is at most MaxBranchNameLen long,
// and is deterministic. The plain form is used only when it is unambiguous:
// the dataset is all letters, digits and underscores, and the batch id is
// letters, digits, underscores and single dashes, not starting with a dash;
// such names never contain "--". Otherwise (other characters, or too long)
// the parts are mapped to word characters, shortened, and followed by "--"
// and 12 hex digits of SHA-256(dataset, batch id), so distinct batches keep
// distinct branches.
func BranchName(dataset, batchID string) string {
	plainDataset := dataset != "" && strings.IndexFunc(dataset, func(r rune) bool { return !isWordChar(r) }) < 0
	plainBatch := batchID != "" && batchID[0] != '-' && !strings.Contains(batchID, "--") &&
		strings.IndexFunc(batchID, func(r rune) bool { return !isWordChar(r) && r != '-' }) < 0
	name := BranchPrefix + dataset + "-" + batchID
	if plainDataset && plainBatch && len(name) <= MaxBranchNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(dataset + "\x00" + batchID))
	suffix := "--" + hex.EncodeToString(sum[:6])
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
