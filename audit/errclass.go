package audit

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// ErrInfrastructure marks an audit that could not run because of the
// machine, not the data or the suite: DuckDB out of memory (the memory limit
// is shared by every run in flight), disk full, too many open files, a lost
// connection, DuckDB crashing (an INTERNAL Error, which invalidates its
// database, opened again for the next run: duckhandle.go). Retrying later may succeed, so callers retry it; a check that
// fails on the data or its own SQL (a binder, parser or conversion error)
// is a check result with status error instead, which blocks the publish.
var ErrInfrastructure = errors.New("audit could not run (infrastructure)")

// infraIO are I/O failures of the machine; other DuckDB I/O errors (a file
// that is not Parquet, a corrupt page) are about the data.
var infraIO = []string{"No space left on device", "Too many open files", "Cannot allocate memory",
	"Input/output error", "Could not write", "Permission denied"}

// infrastructure reports whether err is a failure of the machine.
func infrastructure(err error) bool {
	if de, ok := errors.AsType[*duckdb.Error](err); ok {
		switch de.Type {
		case duckdb.ErrorTypeOutOfMemory, duckdb.ErrorTypeFatal, duckdb.ErrorTypeInternal, duckdb.ErrorTypeConnection,
			duckdb.ErrorTypeNetwork, duckdb.ErrorTypeHTTP:
			return true
		}
		return de.Type == duckdb.ErrorTypeIO && ioInfra(de.Msg)
	}
	if _, ok := errors.AsType[verdict](err); ok {
		return false
	}
	if q, ok := errors.AsType[quoting](err); ok {
		// A verdict on the data, quoting an error without a type: DuckDB's
		// message that lost it begins with DuckDB's prefix, one the data
		// spells is inside it.
		msg := q.causeText()
		return strings.HasPrefix(msg, "Out of Memory Error") || invalidating(err) ||
			strings.HasPrefix(msg, "IO Error") && ioInfra(msg)
	}
	// Errors that lost their type on the way keep DuckDB's prefix.
	msg := err.Error()
	return strings.Contains(msg, "Out of Memory Error") || invalidating(err) ||
		strings.Contains(msg, "IO Error") && ioInfra(msg)
}

func ioInfra(msg string) bool {
	return slices.ContainsFunc(infraIO, func(s string) bool { return strings.Contains(msg, s) })
}

// quoting is the audit's refusal of the data quoting the error that made
// it (cause), whose text may quote the data: a value that did not
// convert, a string not UTF-8, spelling "Out of Memory Error" or
// "INTERNAL Error". Its cause's DuckDB type, when it has one, decides
// whether it is the machine's (infrastructure, invalidating), never the
// text it quotes; a cause that lost its type is the machine's only where
// its text begins with DuckDB's prefix of such an error (a value the data
// spells is inside a message of DuckDB's, never at its start)
// (TestReview46DataSpellingOutOfMemoryIsRefused,
// TestReview46QuotingIsDecidedByItsCausesType).
type quoting struct {
	refusal, cause error
}

func (q quoting) Error() string   { return q.refusal.Error() }
func (q quoting) Unwrap() []error { return []error{q.cause, q.refusal} }

// causeText is the text of q's cause ("" for none).
func (q quoting) causeText() string {
	if q.cause == nil {
		return ""
	}
	return q.cause.Error()
}

// quote is refusal (nil for nil) quoting cause: quoting.
func quote(refusal, cause error) error {
	if refusal == nil {
		return nil
	}
	return quoting{refusal: refusal, cause: cause}
}

// verdict is the audit's refusal of the data (a table's files, a Delta
// log), whose text names the data anywhere in it (a column, a value, a
// partition key, a path): never the machine's, whatever the data spells
// (TestReview46RefusalsSpellingOutOfMemoryAreRefusals).
type verdict struct{ error }

func (v verdict) Unwrap() error { return v.error }

// refused is err (nil for nil) as a verdict, unless it is the machine's:
// the context's, ErrInfrastructure, a DuckDB error of the machine's type
// (or a quoting one whose cause is), or an error that lost its type
// whose innermost text begins with DuckDB's prefix of such an error.
func refused(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrInfrastructure):
		return err
	}
	if _, ok := errors.AsType[*duckdb.Error](err); ok {
		if infrastructure(err) {
			return err
		}
		return verdict{err}
	}
	if _, ok := errors.AsType[quoting](err); ok {
		if infrastructure(err) {
			return err
		}
		return verdict{err}
	}
	if machineText(err) {
		return err
	}
	return verdict{err}
}

// machineText: an innermost error of err's chain begins with DuckDB's
// prefix of the machine's errors (a DuckDB error that lost its type; a
// refusal of the audit's begins with its own words).
func machineText(err error) bool {
	switch x := err.(type) {
	case interface{ Unwrap() error }:
		if u := x.Unwrap(); u != nil {
			return machineText(u)
		}
	case interface{ Unwrap() []error }:
		for _, u := range x.Unwrap() {
			if u != nil && machineText(u) {
				return true
			}
		}
		return false
	}
	msg := err.Error()
	for _, p := range []string{"Out of Memory Error", "INTERNAL Error", "FATAL Error"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.HasPrefix(msg, "IO Error") && ioInfra(msg)
}
