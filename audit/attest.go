package audit

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// MetaAttestation is the commit metadata key of lakewap's attestation on a
// publish's merge commit: the suite that audited the merged state, and its
// verdict (see Attestation).
const MetaAttestation = "wap.attestation"

// maxAttestationBytes is the byte budget of an attestation's text in commit
// metadata; Encode refuses to make a longer one.
const maxAttestationBytes = 1024

// maxWarned bounds the checks an attestation names as not passing; with
// more, it names none and says all ("*"), so that no check is incremental.
const maxWarned = 64

// Attestation is what lakewap records in the metadata of a publish's merge
// commit: the dataset, the digest of the suite that audited the merged
// state, the sealed commit merged, the target commit it was checked against
// (the merge's first parent when nothing came in between), how it was
// audited, and which checks did not pass (warned: a publish has no failed
// ones). A commit carrying a valid attestation of the same suite is a state
// of the table that passed every other check, so the next audit reads only
// its batch for those (see Engine).
//
// Metadata can be written by anyone who can commit. So an attestation is
// taken only when it matches the commit's graph (parents: Against, then
// Sealed) and, with a key (audit.attestation_key), carries its HMAC: without
// a key, it guards against accidents (manual merges, reverts, direct
// commits carry none), not against someone forging one.
type Attestation struct {
	Dataset string
	Suite   string // SuiteDigest of the suite
	Sealed  string // the sealed commit merged
	Against string // the target commit the merged state was checked against
	Mode    string // full or incremental
	// NotPassed are the suite indexes of the checks that did not pass (warned
	// or skipped); AllNotPassed says more did than could be named.
	NotPassed    []int
	AllNotPassed bool
}

// Audit modes, as reports and attestations name them.
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
)

// auditRules names the rules this build judges a table by beyond the
// suite's declaration: what each check means, what an audit reads and
// what it refuses. SuiteDigest holds it, so an attestation is taken only
// under the same rules: a table an earlier build passed under weaker ones
// (review 38's incremental unique passed a repeated (NULL, x) key) is
// audited whole once instead of trusted, and a batch audited before an
// upgrade is rechecked before its merge (Run.Suites). Raise it with any
// change that makes an audit fail or refuse a table an earlier build
// passed (a CHANGELOG Security entry of audit/). 49: reviews 49 to 59
// refused what 48 passed (Spark's integer widths across files, its
// readings of Spark-schema leaves, CHAR padding, among others) without
// raising it, and review 60 makes incremental audits of tables Spark reads
// otherwise across files run full. 50: review 61 refuses a Parquet table
// one of whose files lacks a column another's Spark schema declares an
// EXISTS_DEFAULT (Spark reads the default there, DuckDB NULL), which 49
// passed and attested. 51: review 62 refuses a Parquet table whose files
// give a leaf an INT32 type beside another's long or double that Spark
// reads by its raw integer (a DECIMAL(9,1) 4.0 beside a BIGINT as 40),
// and a column of an integer and a float or DECIMAL, or of DECIMALs of two
// scales, holding a value DuckDB's read_parquet without union_by_name
// rounds to the first file's type, and a column an accepted_values or
// regex reads whose files' types render its values otherwise (3.0 beside
// 3), and texts beside a DATE file of no rows that a DATE reads as one
// date (2024-1-1 beside 2024-01-01), all of which 50 passed and attested.
// 52: review 63 refuses a Delta table whose log declares an EXISTS_DEFAULT
// of a column a data file lacks (delta-spark reads the default there,
// delta-rs NULL), and a column of numbers' types rendered otherwise
// across files whose text a where condition or custom query reads
// (CAST(x AS VARCHAR), x = '3.5'), and an accepted_values over a FLOAT,
// BLOB, INTERVAL or DECIMAL of scale past 6 (pandas renders them
// otherwise), and integers of two widths under a typeof of a where or
// sql, which 51 passed and attested. 53: review 64 refuses a column
// under a typeof of a where or sql whose nested leaves have two integer
// widths across files, or which is a DECIMAL of two precisions, and a
// DATE beside a TIMESTAMP of midnights whose text a where or sql reads,
// and integers of two widths under hash, bit_count or a cast to BIT,
// which 52 passed and attested. 54: review 64b refuses a Delta table one
// of whose data files holds a UINTEGER (UINT_32) where the log declares a
// double (delta-spark reads 4294967295 as -1.0, DuckDB as 4294967295.0),
// and one whose add claims a UTC timestamp's min or max without an offset
// (delta-spark reads it in its session's time zone and skips the file by
// it), which 53 passed and attested.
const auditRules = 54

// SuiteDigest is the digest of a suite's declaration under this build's
// rules (auditRules): tables and checks as configured (a change of any
// field is a change of the suite).
// The same declaration digests alike in every process of one build: two
// instances on one config must agree (Service.SuitesDigest, an
// attestation's suite).
func SuiteDigest(s Suite) string {
	enc := func(checks []Check) ([]byte, error) {
		return json.Marshal(struct {
			Rules   int       `json:"rules"`
			Tables  []Table   `json:"tables"`
			Checks  []Check   `json:"checks"`
			Skipped []Skipped `json:"skipped"`
		}{auditRules, s.Tables, checks, s.Skipped})
	}
	b, err := enc(s.Checks)
	if err != nil {
		// Only a meta value encoding/json refuses fails (a YAML mapping
		// with a key that is not a string, a NaN): the meta is made of
		// JSON's values (jsonSafe). The suite's %#v, hashed before, holds
		// the addresses of its pointers (min, max): the digest differed
		// between two loads of the same config.
		checks := slices.Clone(s.Checks)
		for i := range checks {
			if m, ok := jsonSafe(checks[i].Meta).(map[string]any); ok {
				checks[i].Meta = m
			}
		}
		if b, err = enc(checks); err != nil { // not reached: jsonSafe's values encode
			for i := range checks {
				checks[i].Meta = nil // shown, not judged
			}
			b, _ = enc(checks)
		}
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// jsonSafe is v, a value decoded from YAML or JSON, with every mapping's
// keys made text (fmt's %v, in a map[string]any) and every float that
// JSON cannot hold (NaN, infinities) made its text; other values as they
// are. Meta is shown, not judged: two keys whose texts collide are taken
// for one.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x)
		}
	}
	return v
}

// NewAttestation is the attestation of rep, a passing report of the suite
// s over the state merging sealed onto against leaves.
func NewAttestation(dataset string, s Suite, rep schemas.AuditReport, sealed, against string) Attestation {
	a := Attestation{Dataset: dataset, Suite: SuiteDigest(s), Sealed: sealed, Against: against, Mode: cmp.Or(rep.Mode, ModeFull)}
	for i, c := range s.Checks {
		// The report is read by position, and only a result of the same
		// check attests it: a suite changed between the audit and the
		// publish (a restart with a new config) has other checks there.
		if i >= len(rep.Checks) || rep.Checks[i].Status != schemas.StatusPass || rep.Checks[i].Name != c.ID() {
			a.NotPassed = append(a.NotPassed, i)
		}
	}
	if len(a.NotPassed) > maxWarned {
		a.NotPassed, a.AllNotPassed = nil, true
	}
	return a
}

var attestationFields = []string{"v", "dataset", "suite", "sealed", "against", "mode", "not_passed"}

// body is the attestation's text without its signature.
func (a Attestation) body() string {
	np := strings.Join(each(a.NotPassed, strconv.Itoa), ",")
	if a.AllNotPassed {
		np = "*"
	}
	vals := []string{"1", a.Dataset, a.Suite, a.Sealed, a.Against, a.Mode, np}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = attestationFields[i] + "=" + v
	}
	return strings.Join(parts, " ")
}

// Encode is the attestation's text for commit metadata, signed with key
// when there is one.
func (a Attestation) Encode(key []byte) (string, error) {
	for _, v := range []string{a.Dataset, a.Suite, a.Sealed, a.Against, a.Mode} {
		if v == "" || strings.ContainsAny(v, " =\n") {
			return "", fmt.Errorf("attestation field %q is empty or holds a space, = or newline", v)
		}
	}
	s := a.body()
	if len(key) > 0 {
		s += " sig=" + sign(key, s)
	}
	if len(s) > maxAttestationBytes {
		return "", fmt.Errorf("attestation of %d bytes is over its budget of %d", len(s), maxAttestationBytes)
	}
	return s, nil
}

func sign(key []byte, s string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// ParseAttestation reads an attestation's text and checks its signature
// when key is set (an unsigned one is then refused).
func ParseAttestation(s string, key []byte) (Attestation, error) {
	if len(s) > maxAttestationBytes {
		return Attestation{}, errors.New("attestation over its byte budget")
	}
	body, sig, signed := strings.Cut(s, " sig=")
	if len(key) > 0 {
		if !signed {
			return Attestation{}, errors.New("attestation is not signed")
		}
		if !hmac.Equal([]byte(sig), []byte(sign(key, body))) {
			return Attestation{}, errors.New("attestation signature does not match")
		}
	}
	parts := strings.Split(body, " ")
	if len(parts) != len(attestationFields) {
		return Attestation{}, errors.New("attestation has the wrong fields")
	}
	vals := make([]string, len(parts))
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k != attestationFields[i] {
			return Attestation{}, fmt.Errorf("attestation field %d is not %s", i, attestationFields[i])
		}
		vals[i] = v
	}
	if vals[0] != "1" {
		return Attestation{}, fmt.Errorf("attestation version %q is not 1", vals[0])
	}
	a := Attestation{Dataset: vals[1], Suite: vals[2], Sealed: vals[3], Against: vals[4], Mode: vals[5]}
	switch np := vals[6]; np {
	case "":
	case "*":
		a.AllNotPassed = true
	default:
		for _, f := range strings.Split(np, ",") {
			i, err := strconv.Atoi(f)
			if err != nil || i < 0 {
				return Attestation{}, fmt.Errorf("attestation not_passed %q is not a list of check indexes", np)
			}
			a.NotPassed = append(a.NotPassed, i)
		}
	}
	return a, nil
}

// passed reports whether check i of the suite passed in the attested audit.
func (a Attestation) passed(i int) bool { return !a.AllNotPassed && !slices.Contains(a.NotPassed, i) }

// CommitInfo is a commit as incremental audits and verify read it.
type CommitInfo struct {
	ID        string
	Parents   []string
	Metadata  map[string]string
	Message   string
	Committer string
}

// Attested checks commit c's attestation for dataset and the suite digest
// suite: it returns the attestation, or why c is not an attested publish of
// that suite.
func Attested(c CommitInfo, dataset, suite string, key []byte) (Attestation, error) {
	text, ok := c.Metadata[MetaAttestation]
	if !ok {
		return Attestation{}, errors.New("no lakewap attestation (not a lakewap publish: a direct commit, a merge or revert made by hand)")
	}
	a, err := ParseAttestation(text, key)
	switch {
	case err != nil:
		return a, err
	case a.Dataset != dataset:
		return a, fmt.Errorf("attested for dataset %s, not %s", a.Dataset, dataset)
	case len(c.Parents) != 2 || c.Parents[0] != a.Against || c.Parents[1] != a.Sealed:
		return a, fmt.Errorf("attested merge of %s checked against %s, but its parents are %s",
			short(a.Sealed), short(a.Against), strings.Join(each(c.Parents, short), ", "))
	case a.Suite != suite:
		return a, fmt.Errorf("audited by another suite, or by an earlier lakewap's rules (digest %s; the configured suite is %s)", a.Suite, suite)
	}
	return a, nil
}

func short(id string) string { return id[:min(len(id), 12)] }

// OwnUser is a History that knows lakewap's own lakeFS user as lakeFS
// names the committer of the merges lakewap makes (its GetCurrentUser).
type OwnUser interface {
	// OwnCommitter is lakewap's user, "" when lakeFS does not name it.
	OwnCommitter(ctx context.Context) (string, error)
}

// MadeBy is nil when lakewap's user own made commit c, or when own is ""
// (unknown: not compared); else why c is not lakewap's publish whatever
// attestation it carries. lakeFS's merge takes any metadata from whoever may
// merge, and names that caller as the commit's committer: without an
// attestation key, an attestation is lakewap's word only on lakewap's own
// commit (review 57).
func MadeBy(c CommitInfo, own string) error {
	if own == "" || c.Committer == own {
		return nil
	}
	return fmt.Errorf("it carries an attestation but lakewap did not make it: committer %q, not lakewap's user %q",
		schemas.Clip(c.Committer, 128), schemas.Clip(own, 128))
}

// Verdicts of Verify.
const (
	VerifyAttested   = "attested"
	VerifyUnattested = "NOT ATTESTED"
	VerifyRoot       = "root"
)

// Verify says whether commit c of dataset's target is lakewap's attested
// publish: attested (of the configured suite or an older one, or a publish
// of another dataset into the same target), the repository's first commit
// (root), or not attested and why. Without a key an attested commit's
// detail says it is unsigned (Unsigned).
func Verify(c CommitInfo, dataset, suite string, key []byte) (verdict, detail string) {
	verdict, detail = verify(c, dataset, suite, key)
	if verdict == VerifyAttested && len(key) == 0 {
		detail += "; " + Unsigned
	}
	return verdict, detail
}

// Unsigned is what lakewap verify says of an attestation taken without
// audit.attestation_key: its graph and committer hold, but lakeFS's
// createCommitRecord writes a commit naming any committer, so whoever may
// move the target to such a record (a write of the target) can write one
// that reads the same.
const Unsigned = "unsigned (audit.attestation_key is not set)"

func verify(c CommitInfo, dataset, suite string, key []byte) (verdict, detail string) {
	if len(c.Parents) == 0 {
		return VerifyRoot, "the repository's first commit"
	}
	a, err := Attested(c, dataset, suite, key)
	switch {
	case err == nil:
		return VerifyAttested, fmt.Sprintf("publish of %s (%s audit), suite %s", short(a.Sealed), a.Mode, a.Suite)
	case a.Suite != "" && a.Dataset != dataset:
		if _, err := Attested(c, a.Dataset, a.Suite, key); err == nil {
			return VerifyAttested, fmt.Sprintf("publish of dataset %s (%s)", a.Dataset, short(a.Sealed))
		}
	case a.Suite != "" && a.Suite != suite:
		if _, err := Attested(c, dataset, a.Suite, key); err == nil {
			return VerifyAttested, fmt.Sprintf("publish of %s by an earlier suite %s (the configured one is %s)", short(a.Sealed), a.Suite, suite)
		}
	}
	return VerifyUnattested, err.Error()
}
