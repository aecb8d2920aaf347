package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// poisonCSV writes, in the engine's directory (where DuckDB may read), a
// CSV file with a byte not UTF-8 in a column of text past the sniffer's
// sample, and returns the query that crashes DuckDB 1.5 on it (INTERNAL
// Error: Attempted to access index 1 within vector of size 1), which
// invalidates the whole database: every later statement of every
// connection fails (FATAL Error: database has been invalidated).
func poisonCSV(t testing.TB, e *Engine) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("v,n\n")
	for range 30000 {
		b.WriteString("x,y\n")
	}
	b.WriteString("x,\x80\n")
	f := filepath.Join(e.dir, "poison.csv")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return "SELECT count(n) FROM read_csv(" + quoteLiteral(f) + ")"
}

// TestReview41InvalidatedDatabaseIsReopened: one statement that crashes
// DuckDB invalidates the engine's database, and the engine kept it: every
// later audit of every dataset failed as an infrastructure error until the
// process restarted (a writer of one dataset stopped every publish). The
// crash is driven here by a statement run on the engine's database while
// an audit of a hostile dataset runs (review 40's guards refuse the CSV
// file that crashes it before a check reads it). The audit in flight ends
// with an infrastructure error (retried); the next audit of an honest
// batch on the same engine passes, on a database opened again.
func TestReview41InvalidatedDatabaseIsReopened(t *testing.T) {
	src := newBatchSource(t)
	src.writeRaw(t, "b1", "honest/a.csv", "v\nx\ny\n")
	src.writeRaw(t, "b1", "hostile/a.csv", "v\nx\n")
	e := newEngine(t, src, "")
	poison := poisonCSV(t, e)
	var once sync.Once
	var crash error
	e.onStatement = func(string) {
		once.Do(func() { _, crash = e.duckDB().ExecContext(context.Background(), poison) })
	}
	check := Check{Name: "c", Table: "t", Kind: KindNotNull, Column: "v"}
	run := func(path string) error {
		_, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: path, Format: FormatCSV}}, Checks: []Check{check}}})
		return err
	}
	err := run("hostile/")
	if crash == nil || !invalidating(crash) {
		t.Fatalf("the statement did not crash DuckDB (%v): the case shows nothing", crash)
	}
	if !errors.Is(err, ErrInfrastructure) {
		t.Fatalf("the audit in flight when DuckDB crashed: %v, want an infrastructure error (retried)", err)
	}
	for i := range 2 {
		rep := auditTableAt(t, e, "honest/", FormatCSV, check)
		if !rep.Passed {
			t.Fatalf("honest audit %d after the crash: %s", i, refusal(rep))
		}
	}
	if n := e.Reopened(); n != 1 {
		t.Errorf("reopened %d times, want 1", n)
	}
}

// currentDuck is the engine's current DuckDB opening (nil once closed or
// retired).
func (e *Engine) currentDuck() *duckDB {
	e.duckMu.Lock()
	defer e.duckMu.Unlock()
	return e.duck
}

// TestReview41CrashIsInfrastructure: DuckDB's crash (INTERNAL Error) and
// its refusal of every statement after it (FATAL Error, database
// invalidated) are the machine's, retried; a typed error of the data that
// quotes those words is not.
func TestReview41CrashIsInfrastructure(t *testing.T) {
	for msg, want := range map[string]bool{
		"INTERNAL Error: Attempted to access index 1 within vector of size 1":                                                                             true,
		"FATAL Error: Failed: database has been invalidated because of a previous fatal error. The database must be restarted prior to being used again.": true,
		"check c: cannot read table t (b1): INTERNAL Error: Attempted to access index 1 within vector of size 1":                                          true,
	} {
		if got := infrastructure(errors.New(msg)); got != want {
			t.Errorf("infrastructure(%q) = %v, want %v", msg, got, want)
		}
		if got := invalidating(errors.New(msg)); got != want {
			t.Errorf("invalidating(%q) = %v, want %v", msg, got, want)
		}
	}
	src := newBatchSource(t)
	e := newEngine(t, src, "")
	_, err := e.duckDB().ExecContext(context.Background(), "SELECT CAST('INTERNAL Error: FATAL Error: database has been invalidated' AS INTEGER)")
	if err == nil || infrastructure(err) || invalidating(err) {
		t.Errorf("a conversion error quoting the data (%v): infrastructure %v, invalidating %v", err, infrastructure(err), invalidating(err))
	}
}

// TestReview41JSONLinesByteNotUTF8DoesNotCrash: review 40's byte not
// UTF-8 past the sniffer's sample, which crashes DuckDB 1.5 in a CSV
// column of text read alone, tried on JSON lines (read_json): in a string
// value of the column checked, in a string of another column, in a key,
// outside a string. DuckDB refuses each such file cleanly (Invalid Input
// Error: Malformed JSON, invalid UTF-8): the audit fails (pandas cannot
// read the file either) without an infrastructure error, and the
// engine's database is not invalidated (an honest audit after passes on
// the same opening).
func TestReview41JSONLinesByteNotUTF8DoesNotCrash(t *testing.T) {
	sample := func(last string) string {
		var b strings.Builder
		for range 30000 {
			b.WriteString(`{"v": "x", "n": "y"}` + "\n")
		}
		return b.String() + last + "\n"
	}
	cases := []struct{ name, text, column string }{
		{"in_the_column_checked", sample(`{"v": "x", "n": "` + "\x80" + `"}`), "n"},
		{"in_another_column", sample(`{"v": "x", "n": "` + "\x80" + `"}`), "v"},
		{"in_a_key", sample(`{"v": "x", "n": "y", "` + "\x80" + `": "z"}`), "n"},
		{"outside_a_string", sample(`{"v": "x", "n": ` + "\x80" + `}`), "n"},
		{"null_after", sample(`{"v": "x", "n": "` + "\x80" + `"}` + "\n" + `{"v": "x", "n": null}`), "n"},
	}
	src := newBatchSource(t)
	src.writeRaw(t, "b1", "honest/a.jsonl", `{"v": "x", "n": "y"}`+"\n")
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.jsonl", c.text)
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		for _, k := range []Check{{Kind: KindNotNull, Column: c.column}, {Kind: KindSQL, SQL: "SELECT * FROM t WHERE " + quoteIdent(c.column) + " IS NULL"}} {
			k.Name, k.Table = "c", "t"
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: FormatJSONL}}, Checks: []Check{k}}})
			switch {
			case err != nil:
				t.Errorf("%s, %s: %v", c.name, k.Kind, err)
			case rep.Passed:
				t.Errorf("%s, %s passed a file pandas cannot read", c.name, k.Kind)
			default:
				t.Logf("%s, %s: refused: %s", c.name, k.Kind, refusal(rep))
			}
		}
	}
	if rep := auditTableAt(t, e, "honest/", FormatJSONL, Check{Kind: KindNotNull, Column: "n"}); !rep.Passed {
		t.Errorf("honest audit after: %s", refusal(rep))
	}
	if n := e.Reopened(); n != 0 {
		t.Errorf("DuckDB opened again %d times: a JSON lines file crashed it", n)
	}
}

// TestReview41ConcurrentRunsOverACrash: runs of other datasets in flight
// when DuckDB crashes end with an infrastructure error or with the verdict
// they reached before it, never a verdict made on the invalidated database;
// the engine opens one database again, and every audit after passes.
func TestReview41ConcurrentRunsOverACrash(t *testing.T) {
	src := newBatchSource(t)
	const n = 6
	for i := range n {
		src.writeRaw(t, "b1", "d"+strconv.Itoa(i)+"/a.csv", "v\nx\ny\n")
	}
	e := newEngine(t, src, "")
	poison := poisonCSV(t, e)
	started := make(chan struct{}, n)
	crashed := make(chan struct{})
	e.onStatement = func(string) {
		started <- struct{}{}
		<-crashed // every run has run a statement on the database the crash invalidates
	}
	audit := func(i int) (bool, error) {
		rep, err := e.Run(context.Background(), Request{Dataset: "d" + strconv.Itoa(i), Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "d" + strconv.Itoa(i) + "/", Format: FormatCSV}},
				Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "v"}}}})
		return rep.Passed, err
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var passed bool
			passed, errs[i] = audit(i)
			if errs[i] == nil && !passed {
				errs[i] = errors.New("failed")
			}
		})
	}
	for range n {
		<-started
	}
	db := e.duckDB()
	if _, err := db.ExecContext(context.Background(), poison); !invalidating(err) {
		t.Fatalf("the statement did not crash DuckDB (%v): the case shows nothing", err)
	}
	e.onStatement = nil // read by the runs after they see crashed closed
	close(crashed)
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, ErrInfrastructure) {
			t.Errorf("run %d over the crash: %v, want an infrastructure error", i, err)
		}
	}
	for i := range n {
		if passed, err := audit(i); !passed || err != nil {
			t.Errorf("audit %d after the crash: passed %v, %v", i, passed, err)
		}
	}
	if got := e.Reopened(); got != 1 {
		t.Errorf("opened again %d times, want 1", got)
	}
}

// TestReview41RepeatedCrashIsRefused: an audit whose own statement
// crashes DuckDB is retried (infrastructure: the crash may be the
// machine's), and the retry would crash it again, failing every audit in
// flight on it each time until the runner's retry budget ran out. The
// second crash of the same audit (repository, dataset, ref) refuses the
// batch: each check errs naming the crash and the table. The crash is
// driven through the listing of the table's columns (columnsFault), which
// runs the crashing statement inside the run.
func TestReview41RepeatedCrashIsRefused(t *testing.T) {
	src := newBatchSource(t)
	src.writeRaw(t, "b1", "honest/a.csv", "v\nx\n")
	src.writeRaw(t, "b1", "hostile/a.csv", "v\nx\n")
	e := newEngine(t, src, "")
	poison := poisonCSV(t, e)
	hostile := func() (schemas.AuditReport, error) {
		e.columnsFault = func() error {
			_, err := e.duckDB().ExecContext(context.Background(), poison)
			return err
		}
		defer func() { e.columnsFault = nil }()
		return e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "hostile/", Format: FormatCSV}},
				Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "v"}}}})
	}
	honest := func(when string) {
		t.Helper()
		if rep := auditTableAt(t, e, "honest/", FormatCSV, Check{Kind: KindNotNull, Column: "v"}); !rep.Passed {
			t.Fatalf("honest audit %s: %s", when, refusal(rep))
		}
	}
	if _, err := hostile(); !errors.Is(err, ErrInfrastructure) || crashCause(err) == nil {
		t.Fatalf("first crash: %v, want an infrastructure error naming DuckDB's crash", err)
	}
	honest("after the first crash")
	rep, err := hostile()
	if err != nil || rep.Passed || len(rep.Checks) != 1 || rep.Checks[0].Status != schemas.StatusError ||
		!strings.Contains(rep.Checks[0].Message, "crashed") || !strings.Contains(rep.Checks[0].Message, "table t") {
		t.Fatalf("second crash of the same audit: %v, %+v: want a refusal naming the crash and the table", err, rep.Checks)
	}
	t.Logf("refused: %s", refusal(rep))
	honest("after the second crash")
	if n := e.Reopened(); n != 2 {
		t.Errorf("opened again %d times, want 2", n)
	}
}
