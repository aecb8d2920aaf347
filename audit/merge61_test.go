package audit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Review 61: a table some file of which declares a CHAR column in its
// Spark schema was audited full at every batch since review 60 (the cost
// followed the table). Now each file's statistics record the CHAR
// declarations its Spark schema makes, and an incremental audit scans the
// batch's files by the declarations of the unchanged files and the
// batch's, and runs full only when the batch brings a declaration no
// unchanged file makes (the unchanged files' values were never scanned by
// it) or a record does not know its file's.

// charSparkOf is the Spark schema of one string column c declared typ
// (char(5), struct<...>), or "" for none.
func charSparkOf(typ string) string {
	if typ == "" {
		return ""
	}
	return fmt.Sprintf(`{"type":"struct","fields":[{"name":"c","type":"string","nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":%q}}]}`, typ)
}

// textsSQL is a file of column c holding vals.
func textsSQL(vals ...string) string {
	return "SELECT * FROM (VALUES " + strings.Join(each(vals, func(v string) string { return "(" + quoteLiteral(v) + ")" }), ", ") + ") v(c)"
}

// charSuite checks column c of table t.
func charSuite() Suite {
	return Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "c"},
		{Kind: KindRowCount, Table: "t", Min: f64(1)},
	}}
}

// charBatch makes commit name from commit from, writing c's values at
// path with Spark schema spark ("" for none).
func (r *memoRig) charBatch(from, name, path, spark string, vals ...string) string {
	from, name = cid(from), cid(name)
	r.lake.branch(r.t, from, name)
	r.lake.commit(name, []string{from}, nil)
	writeSQLMeta(r.t, r.lake, name, path, textsSQL(vals...), spark)
	return name
}

// TestMerge61CharTableStaysIncremental: the table's files declare c
// char(5), their values 5 long, as Spark writes a CHAR; an honest batch
// (declaring c alike, or nothing, its values 5 long) passes the full
// audit. Before the fix its audit ran full, as every audit of the table
// did; now it is incremental and passes.
func TestMerge61CharTableStaysIncremental(t *testing.T) {
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigWith(t, cache, charSuite(), func(l *lakeSim, ref, path string) {
			writeSQLMeta(t, l, ref, path, textsSQL("abcde"), charSpark)
		})
		for i, spark := range []string{charSpark, "", charSparkOf("CHAR( 5 )")} {
			s := r.charBatch("c001", fmt.Sprint("s1-", i), "data/t/s1/part-0.parquet", spark, "vwxyz", "abcdef")
			if full := r.audit(Request{Ref: s, BaseRef: cid("c001"), Full: true}); !full.Passed {
				t.Fatalf("batch %d: the full audit fails: the test shows nothing: %+v", i, full.Checks)
			}
			if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
				t.Fatalf("batch %d (Spark schema %q): mode %s (%s), passed %v, want incremental and passed: %+v", i, spark, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
			}
		}
	})
}

// TestMerge61SparkCharsIncrementally: the CHAR attacks of review 60 and
// one more, each refused by an incremental audit as the full audit
// refuses them:
//   - batch_declares: the batch declares c char(5) (its values 5 long)
//     beside an unchanged `ab` that declares nothing: the unchanged
//     files were never scanned by char(5), so the audit runs full;
//   - batch_declares_shorter: the same with char(3) beside unchanged
//     files declaring char(5) (`vwx`, padded to char(3), is short of 5);
//   - batch_short: the batch declares char(5) and holds `ab` beside
//     unchanged files declaring it alike: its own scan refuses it;
//   - undeclared_short: unchanged files declare char(5), their values all
//     5 long; the batch declares nothing and holds `ab`, which Spark pads
//     by the unchanged files' declaration: the batch's scan by the
//     unchanged files' declarations finds it, and the audit runs full,
//     which refuses it, naming the file.
//
// Before the fix review 60 ran every such audit full. Honest batches
// bringing a new declaration run full and pass.
func TestMerge61SparkCharsIncrementally(t *testing.T) {
	declared := func(t *testing.T, cache bool) *memoRig {
		return newMemoRigWith(t, cache, charSuite(), func(l *lakeSim, ref, path string) {
			writeSQLMeta(t, l, ref, path, textsSQL("abcde"), charSpark)
		})
	}
	eachCache(t, func(t *testing.T, cache bool) {
		t.Run("batch_declares", func(t *testing.T) {
			r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": textsSQL("ab")}, textsSQL("abcde"), charSuite())
			s := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", charSpark, "vwxyz")
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `declares column "c" "char(5)" in its Spark schema, which no unchanged file of the table declares`)
		})
		t.Run("batch_declares_shorter", func(t *testing.T) {
			r := declared(t, cache)
			s := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", charSparkOf("char(3)"), "vwx")
			wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `declares column "c" "char(3)" in its Spark schema, which no unchanged file of the table declares`)
			// Values 5 long pass: the audit runs full and passes.
			s = r.charBatch("c001", "s2", "data/t/s2/part-0.parquet", charSparkOf("char(3)"), "vwxyz")
			if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); rep.Mode != ModeFull || !rep.Passed {
				t.Fatalf("a batch declaring char(3), its values 5 long: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
			}
		})
		t.Run("batch_short", func(t *testing.T) {
			r := declared(t, cache)
			s := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", charSpark, "ab")
			rep := wantFailsAsFull(t, r, s, cid("c001"), ModeIncremental, "")
			if c := check(rep, KindNotNull); c.Status != schemas.StatusError || !strings.Contains(c.Message, "shorter than their CHAR's length") {
				t.Fatalf("not_null %s %q, want it refused for the CHAR", c.Status, c.Message)
			}
		})
		t.Run("undeclared_short", func(t *testing.T) {
			r := declared(t, cache)
			s := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", "", "ab", "vwxyz")
			rep := wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `holds values shorter than their CHAR's length in 1 rows, and is declared "char(5)" in the Spark schema of file data/t/`)
			if c := check(rep, KindNotNull); c.Status != schemas.StatusError || !strings.Contains(c.Message, "data/t/s1/part-0.parquet") {
				t.Fatalf("not_null %s %q, want it refused naming the batch's file", c.Status, c.Message)
			}
		})
	})
}

// TestMerge61RecordsWithoutCharFactsAreComputedAgain: statistics records
// written by review 60's build hold a file's first CHAR column, not its
// declarations; taken as they are, an unchanged file's char(5) would be
// no declaration to the batch's scan, and a batch's `ab` beside it would
// pass. Such records (and any without the facts) are computed again: the
// unchanged files' records below are made review 60's (no declaration),
// and the batch's `ab` is still refused.
func TestMerge61RecordsWithoutCharFactsAreComputedAgain(t *testing.T) {
	var st fileStats
	for _, tc := range []struct {
		rec  string
		want bool
	}{
		{`{"rows":1,"schema":[["c","VARCHAR"]]}`, false},
		{`{"rows":1,"schema":[["c","VARCHAR"]],"spark":{}}`, false},
		{`{"rows":1,"schema":[["c","VARCHAR"]],"spark":{"char":"c"}}`, false},
		{fmt.Sprintf(`{"rows":1,"schema":[["c","VARCHAR"]],"spark":{"v":%d}}`, sparkFactsV), true},
		{fmt.Sprintf(`{"rows":1,"schema":[["c","VARCHAR"]],"spark":{"v":%d,"chars":[{"column":"c","declared":["char(5)"]}]}}`, sparkFactsV), true},
	} {
		st = fileStats{}
		if err := json.Unmarshal([]byte(tc.rec), &st); err != nil {
			t.Fatal(err)
		}
		if got := st.has(statsNeed{}); got != tc.want {
			t.Errorf("record %s: taken %v, want %v", tc.rec, got, tc.want)
		}
	}
	r := newMemoRigWith(t, true, charSuite(), func(l *lakeSim, ref, path string) {
		writeSQLMeta(t, l, ref, path, textsSQL("abcde"), charSpark)
	})
	honest := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", "", "vwxyz")
	if rep := r.audit(Request{Ref: honest, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("an honest batch: mode %s (%s), passed %v", rep.Mode, rep.ModeReason, rep.Passed)
	}
	for _, e := range []*Engine{r.memo, r.plain} {
		e.stats.mu.Lock()
		n := 0
		for k, st := range e.stats.mem {
			st.Spark = &sparkFacts{} // review 60's record of a file: no CHAR column
			e.stats.mem[k] = st
			n++
		}
		e.stats.mu.Unlock()
		if n < 2 {
			t.Fatalf("%d records in the store: the test changes nothing", n)
		}
	}
	s := r.charBatch("c001", "s2", "data/t/s2/part-0.parquet", "", "ab")
	wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `holds values shorter than their CHAR's length`)
}

// TestMerge61CharIncrementalEqualsFull is the differential test of CHAR
// histories: batches of files declaring c char(3), char(5), varchar(4)
// or nothing, with values short of their declarations or
// of another file's now and then, some removing an old file, under a
// suite that compares with the target; every audit is run as it comes
// and full, and the verdicts and every check's status
// must be the same; those that pass are published.
func TestMerge61CharIncrementalEqualsFull(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 61))
			decls := []string{"", "", "char(5)", "char(5)", "char(3)", "varchar(4)"}
			spark := func(d string) string {
				if d == "" {
					return ""
				}
				return charSparkOf(d)
			}
			value := func() string {
				n := 5
				if rng.IntN(8) == 0 {
					n = 1 + rng.IntN(6)
				}
				return strings.Repeat(string(rune('a'+rng.IntN(26))), n)
			}
			suite := charSuite()
			// A full audit comparing with the target reads its files too
			// (the base view), those the batch removes among them.
			suite.Checks = append(suite.Checks, Check{Kind: KindVolumeChange, Table: "t", MaxGrowthPct: f64(100000), Severity: SeverityWarn})
			r := newMemoRigWith(t, true, suite, func(l *lakeSim, ref, path string) {
				writeSQLMeta(t, l, ref, path, textsSQL("abcde"), charSpark)
			})
			head, file := "c001", 0
			var inc, full, failed int
			for step := range 14 {
				s := fmt.Sprintf("s%02d", step+1)
				r.lake.branch(t, cid(head), cid(s))
				r.lake.commit(cid(s), []string{cid(head)}, nil)
				for range 1 + rng.IntN(2) {
					file++
					vals := []string{value(), value()}
					writeSQLMeta(t, r.lake, cid(s), fmt.Sprintf("data/t/part-%04d.parquet", file), textsSQL(vals...), spark(decls[rng.IntN(len(decls))]))
				}
				if old := r.lake.files(t, cid(head)); len(old) > 1 && rng.IntN(4) == 0 {
					r.lake.remove(t, cid(s), old[rng.IntN(len(old))])
				}
				req := Request{Ref: cid(s), BaseRef: cid(head)}
				rep := r.audit(req)
				req.Full = true
				want := r.audit(req)
				if rep.Passed != want.Passed || len(rep.Checks) != len(want.Checks) {
					t.Fatalf("step %d: %s (%s) passed=%v, full passed=%v\n%+v\n%+v", step, rep.Mode, rep.ModeReason, rep.Passed, want.Passed, rep.Checks, want.Checks)
				}
				for i := range want.Checks {
					if a, b := rep.Checks[i], want.Checks[i]; a.Status != b.Status || a.Observed != b.Observed {
						t.Fatalf("step %d check %s: %s %s %q, full %s %q", step, b.Name, rep.Mode, a.Status, a.Message, b.Status, b.Message)
					}
				}
				if rep.Mode == ModeIncremental {
					inc++
				} else {
					full++
				}
				if !rep.Passed {
					failed++
					continue
				}
				c := fmt.Sprintf("c%03d", step+2)
				r.publish(head, s, head, c, rep)
				head = c
			}
			t.Logf("%d incremental and %d full audits, %d failed", inc, full, failed)
			if inc == 0 || failed == 0 || inc+full-failed == 0 {
				t.Fatalf("%d incremental, %d full, %d failed: the history compares too little", inc, full, failed)
			}
		})
	}
}

// TestMerge61CharFactsHaveABudget: a record keeps at most
// maxSparkCharFacts columns' declarations and maxSparkCharFactBytes of
// their names and texts, and as many integer leaves not told; past either
// it says Unknown (and an incremental audit of the table runs full),
// never a part of them.
func TestMerge61CharFactsHaveABudget(t *testing.T) {
	col := func(name, text string) fileColumn {
		return fileColumn{name: name, sparkChar: "length(x) < 5", sparkCharType: clip(text, 128), sparkCharTexts: []string{text}}
	}
	var many []fileColumn
	for i := range maxSparkCharFacts + 1 {
		many = append(many, col(fmt.Sprint("c", i), "char(5)"))
	}
	long := "struct<" + strings.Repeat("x", maxSparkCharFactBytes) + ":char(5)>"
	for _, tc := range []struct {
		name    string
		cols    []fileColumn
		unknown bool
		chars   int
	}{
		{"none", []fileColumn{{name: "c"}}, false, 0},
		{"one", []fileColumn{{name: "a"}, col("c", "char(5)")}, false, 1},
		{"at the bound", many[:maxSparkCharFacts], false, maxSparkCharFacts},
		{"past the count", many, true, 0},
		{"past the bytes", []fileColumn{col("c", long)}, true, 0},
		{"integer leaves not told past the count", []fileColumn{{name: "ts", sparkInts: slices.Repeat([]sparkIntLeaf{{path: "x", typ: "timestamp", physical: ptInt64}}, maxSparkCharFacts+1)}}, true, 0},
		{"integer leaves told", []fileColumn{{name: "ts", sparkInts: slices.Repeat([]sparkIntLeaf{{path: "x", typ: "timestamp", physical: ptInt64, told: true}}, maxSparkCharFacts+1)}}, false, 0},
	} {
		f := sparkFactsOf(tc.cols)
		if !f.current() || f.Unknown != tc.unknown || len(f.Chars) != tc.chars {
			t.Errorf("%s: %+v, want unknown %v and %d columns", tc.name, f, tc.unknown, tc.chars)
		}
		b, err := json.Marshal(f)
		if err != nil || len(b) > maxSparkCharFactBytes+maxSparkCharFacts*64 {
			t.Errorf("%s: %d bytes stored (%v)", tc.name, len(b), err)
		}
	}
}
