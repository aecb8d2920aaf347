package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review 60: an incremental audit reads only the batch's files, and takes
// the unchanged ones' rows as they passed at the foundation. The full
// audit refuses a Parquet table whose files Spark reads otherwise than
// DuckDB together, though each file alone reads alike: Spark reads every
// file of the table by one file's types and Spark schema (review 58's
// INT(8) beside a plain INT32: 300 read as 44; charpad59's CHAR(5)
// declared in one file padding another's `ab` to `ab   `). Read alone,
// the batch's files agree with one another, so the incremental audit
// passed what the full audit of the same state refuses.

// writeSQLMeta writes the Parquet file of query q at path of ref, with
// the Spark schema spark (org.apache.spark.sql.parquet.row.metadata) in
// its footer when it is set.
func writeSQLMeta(t *testing.T, l *lakeSim, ref, path, q, spark string) {
	t.Helper()
	dst := filepath.Join(l.root, ref, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	kv := ""
	if spark != "" {
		kv = fmt.Sprintf(", KV_METADATA {%s: %s}", quoteLiteral(sparkRowMetadataKey), quoteLiteral(spark))
	}
	copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet%s)", q, quoteLiteral(dst), kv))
}

// charSpark is the Spark schema of one string column c declared char(5).
const charSpark = `{"type":"struct","fields":[{"name":"c","type":"string","nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"char(5)"}}]}`

// TestMerge60SparkIntegerWidthsAcrossFilesAreAuditedWhole: the table's
// files hold x as TINYINT (a Parquet INT32 annotated INT(8), a byte to
// Spark) and an attested publish on top; a batch writes x as a plain
// INT32 (INTEGER), 300. The full audit refuses the table (sparkIntsApart:
// Spark reads 300 as 44). Before the fix the incremental audit passed it:
// integers of one signedness are one family to schemaDisagreement. Now
// INT32 integers of other widths make the audit full, which fails.
func TestMerge60SparkIntegerWidthsAcrossFilesAreAuditedWhole(t *testing.T) {
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "x"},
		{Kind: KindRange, Table: "t", Column: "x", Min: f64(0)},
	}}
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": "SELECT 1::TINYINT AS x"}, "SELECT 2::TINYINT AS x", suite)
		s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", "SELECT 300::INTEGER AS x")
		wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `column "x" is TINYINT in data/t/d.parquet and INTEGER in data/t/s1/part-0.parquet: Spark reads`)
		// A widening to INT64, which Spark reads as a long from every
		// file, stays incremental.
		w := r.batchSQL("c001", "s2", "data/t/s2/part-0.parquet", "SELECT 300::BIGINT AS x")
		if rep := r.audit(Request{Ref: w, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
			t.Fatalf("a BIGINT batch: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
		}
	})
}

// TestMerge60SparkCharDeclarationsAcrossFilesAreAuditedWhole: Spark pads
// every file's values of a column some file of the table declares
// char(5). Either way round, the batch's file alone reads alike to Spark
// and DuckDB: a batch declaring c char(5) (its values 5 long) beside an
// unchanged `ab`, and a batch's undeclared `ab` beside unchanged files
// declaring char(5). The full audit refuses both (sparkChars). Before the
// fix the incremental audit passed both. Review 60 audited whole a table
// one of whose audited files declares a CHAR; since review 61 the first
// batch brings a declaration no unchanged file makes (the audit runs
// full), and the second is found by the scan of the batch's files by the
// unchanged files' declarations (the audit runs full, which refuses it).
func TestMerge60SparkCharDeclarationsAcrossFilesAreAuditedWhole(t *testing.T) {
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindNotNull, Table: "t", Column: "c"}}}
	eachCache(t, func(t *testing.T, cache bool) {
		t.Run("batch_declares", func(t *testing.T) {
			r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": "SELECT 'ab' AS c"}, "SELECT 'abcde' AS c", suite)
			s := cid("s1")
			r.lake.branch(t, cid("c001"), s)
			r.lake.commit(s, []string{cid("c001")}, nil)
			writeSQLMeta(t, r.lake, s, "data/t/s1/part-0.parquet", "SELECT 'vwxyz' AS c", charSpark)
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `declares column "c" "char(5)" in its Spark schema, which no unchanged file of the table declares`)
		})
		t.Run("table_declares", func(t *testing.T) {
			// The unchanged files declare c char(5), their values 5 long,
			// as Spark writes a CHAR.
			r := newMemoRigWith(t, cache, suite, func(l *lakeSim, ref, path string) {
				writeSQLMeta(t, l, ref, path, "SELECT 'abcde' AS c", charSpark)
			})
			s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", "SELECT 'ab' AS c")
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `holds values shorter than their CHAR's length in 1 rows, and is declared "char(5)" in the Spark schema of file data/t/`)
		})
	})
}

// newMemoRigWith is newMemoRigSQL whose files write makes: data/t/d.parquet
// at c000, then s0's file as an attested publish c001.
func newMemoRigWith(t *testing.T, cache bool, suite Suite, write func(l *lakeSim, ref, path string)) *memoRig {
	lake := newLakeSim(t)
	lake.commit(cid("c000"), nil, nil)
	write(lake, cid("c000"), "data/t/d.parquet")
	r := &memoRig{t: t, lake: lake, suite: suite}
	r.engines(cache)
	s := cid("s0")
	lake.branch(t, cid("c000"), s)
	lake.commit(s, []string{cid("c000")}, nil)
	write(lake, s, "data/t/s0/part-0.parquet")
	rep := r.audit(Request{Ref: s, BaseRef: cid("c000"), Full: true})
	r.publish("c000", "s0", "c000", "c001", rep)
	return r
}

// TestMerge60AttestationsOfRules48AreNotTaken: the builds from review 48
// to review 59 all digested their suites under rules 48 (auditRules was
// never raised), though reviews 58, 59 and charpad59 refused tables they
// passed before (a plain INT32 beside an INT(8), Spark-schema leaves Spark
// reads otherwise, CHAR padding). An attestation those builds wrote was
// taken by this build, so an attested table holding such files was never
// judged under the new rules: its unchanged files are not read by an
// incremental audit. Before the fix the digests were equal; now such an
// attestation is refused, naming the rules, and the next audit is full.
func TestMerge60AttestationsOfRules48AreNotTaken(t *testing.T) {
	suite := memoSuite()
	// The digest as the builds of rules 48 made it.
	b, err := json.Marshal(struct {
		Rules   int       `json:"rules"`
		Tables  []Table   `json:"tables"`
		Checks  []Check   `json:"checks"`
		Skipped []Skipped `json:"skipped"`
	}{48, suite.Tables, suite.Checks, suite.Skipped})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	old := hex.EncodeToString(sum[:16])
	if old == SuiteDigest(suite) {
		t.Fatalf("this build digests the suite as the builds of rules 48 did (%s): their attestations are taken", old)
	}
	text, err := Attestation{Dataset: "d", Suite: old, Sealed: cid("s"), Against: cid("a"), Mode: ModeFull}.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := CommitInfo{ID: cid("m"), Parents: []string{cid("a"), cid("s")}, Metadata: map[string]string{MetaAttestation: text}}
	if _, err := Attested(c, "d", SuiteDigest(suite), nil); err == nil || !strings.Contains(err.Error(), "earlier lakewap's rules") {
		t.Fatalf("an attestation of rules 48 is taken: %v", err)
	}
}
