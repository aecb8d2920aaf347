package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/lakewap/lakewap/schemas"
)

// duckDB is one opening of the engine's DuckDB and what is bound to it:
// the statements kept prepared on it and the run catalogs pooled on its
// connections. A statement that crashes DuckDB (an INTERNAL Error, such as
// DuckDB 1.5 reading a byte not UTF-8 in a CSV column of text past its
// sniffer's sample) invalidates the whole database: every later statement
// of every connection fails (FATAL Error: database has been invalidated).
// The engine then retires the opening (retire) and the next run opens
// another (acquire); the runs holding the retired one end with their
// errors, and it is closed when the last of them releases it.
//
// An opening is two databases: the engine's (side, its threads as
// configured), and solo, of one thread, on which a run whose files come
// to at most Options.SmallRunBytes runs (run.choose). DuckDB hands a
// statement's tasks to its worker threads, which wait for work spinning
// before they sleep: for the statement of a batch of one small file, which
// has one row group to scan and so nothing to run in parallel, that
// costs about a millisecond of CPU more at two threads than at one
// (docs/benchmarks.md). A table's full audit keeps the configured
// threads. The two share Options.MemoryLimit (splitMemory).
type duckDB struct {
	side
	solo *side // nil: every run on side
	// users are the runs (and rowOnly's queries) holding it, and retired
	// says the engine dropped it: closed when users reaches 0. Both under
	// Engine.duckMu.
	users   int
	retired bool
}

// side is one database of an opening, with the statements kept prepared
// on it and the run catalogs pooled on its connections.
type side struct {
	db       *sql.DB
	kept     stmtCache
	catalogs *runCatalogs
}

func (e *Engine) openDuck() (*duckDB, error) {
	wide, solo := e.opts.MemoryLimit, ""
	if e.soloRuns() {
		wide, solo = splitMemory(e.opts.MemoryLimit)
	}
	db, err := openDuckDB(filepath.Join(e.dir, "duckdb-tmp"), e.dir, wide, e.opts.Threads, e.opts)
	if err != nil {
		return nil, err
	}
	d := &duckDB{side: side{db: db, catalogs: newRunCatalogs()}}
	if solo != "" {
		sdb, err := openDuckDB(filepath.Join(e.dir, "duckdb-tmp-solo"), e.dir, solo, 1, e.opts)
		if err != nil {
			db.Close()
			return nil, err
		}
		d.solo = &side{db: sdb, catalogs: newRunCatalogs()}
	}
	return d, nil
}

// soloRuns: the engine runs small runs on a database of one thread of
// their own (duckDB).
func (e *Engine) soloRuns() bool { return e.opts.SmallRunBytes > 0 && e.opts.Threads != 1 }

// soloMemory is the most of the memory limit the one-thread database
// takes (a sixteenth of it, at most this): small runs read at most
// SmallRunBytes of files each, and one that needs more memory than the
// database has runs again on the other (Engine.Run).
const soloMemory = 64 << 20

// splitMemory divides the engine's memory limit between its databases:
// the one-thread database a sixteenth of it, at most soloMemory, and the
// other the rest. Without a limit (DuckDB's default, 80% of the machine's
// memory, for the other) the one-thread database takes soloMemory.
func splitMemory(limit string) (wide, solo string) {
	n, ok := memoryBytes(limit)
	if !ok {
		return limit, strconv.FormatInt(soloMemory>>10, 10) + "KiB"
	}
	s := min(n/16, soloMemory)
	return strconv.FormatInt((n-s)>>10, 10) + "KiB", strconv.FormatInt(s>>10, 10) + "KiB"
}

var memoryAmount = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?\s*$`)

// memoryBytes reads a memory limit as DuckDB does (KB = 1000 bytes, KiB =
// 1024; no unit: bytes); ok is false for an empty limit or one it cannot
// read.
func memoryBytes(limit string) (int64, bool) {
	m := memoryAmount.FindStringSubmatch(limit)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	units := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
	return int64(f * units[strings.ToUpper(m[2])]), true
}

// acquire is the engine's DuckDB for one user, opened again if a crash
// retired the last one; release it when done. An opening that fails is
// the machine's (infrastructure).
func (e *Engine) acquire() (*duckDB, error) {
	e.duckMu.Lock()
	defer e.duckMu.Unlock()
	if e.duckClosed {
		return nil, ErrClosed
	}
	if e.duck == nil {
		d, err := e.openDuck()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInfrastructure, err)
		}
		e.duck = d
		e.reopened.Add(1)
		e.opts.Logger.Warn("audit: DuckDB opened again after a crash invalidated it")
	}
	e.duck.users++
	return e.duck, nil
}

// release ends one use of d; the last use of a retired d closes it.
func (e *Engine) release(d *duckDB) {
	e.duckMu.Lock()
	d.users--
	last := d.retired && d.users == 0
	e.duckMu.Unlock()
	if last {
		d.close()
	}
}

// retire drops d, if it is still the engine's, for the next acquire to
// open another; closed by its last release.
func (e *Engine) retire(d *duckDB) {
	e.duckMu.Lock()
	defer e.duckMu.Unlock()
	if d.retired {
		return
	}
	d.retired = true
	if e.duck == d {
		e.duck = nil
	}
	e.opts.Logger.Error("audit: DuckDB crashed and invalidated its database: dropped, the next audit opens another")
}

// closeDuck closes the engine's DuckDB for good (Close, once no run holds it).
func (e *Engine) closeDuck() error {
	e.duckMu.Lock()
	d := e.duck
	e.duck, e.duckClosed = nil, true
	e.duckMu.Unlock()
	if d == nil {
		return nil
	}
	return d.close()
}

func (d *duckDB) close() error {
	err := d.side.close()
	if d.solo != nil {
		err = errors.Join(err, d.solo.close())
	}
	return err
}

func (s *side) close() error {
	s.catalogs.close()
	s.kept.close()
	return s.db.Close()
}

// crashed: a crash invalidated d, as a run that retired it found or as
// the database of it the run ran on (on; nil: d's own) answers now (a
// run that saw an error asks, whichever statement saw it and whatever
// the run made of it). The opening's other database may be sound, and
// the runs on it keep their verdicts; its next run that fails on the
// crashed one retires it.
func (e *Engine) crashed(d *duckDB, on *side) bool {
	e.duckMu.Lock()
	retired := d.retired
	e.duckMu.Unlock()
	if retired {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if on == nil {
		on = &d.side
	}
	_, err := on.db.ExecContext(ctx, "SELECT 1")
	return err != nil && invalidating(err)
}

// pool is the run's DuckDB pool: of the opening it holds, or, for a run
// made outside Run (derivations, tests), the engine's current one (nil
// once closed).
func (r *run) pool() *sql.DB {
	if r.duck != nil {
		return r.on().db
	}
	return r.e.duckDB()
}

// on is the database of its opening the run runs on: the one-thread one
// when choose chose it before the run's first use of DuckDB, else the
// engine's (fixed by that first use).
func (r *run) on() *side {
	if r.side == nil {
		r.side = &r.duck.side
	}
	return r.side
}

// choose runs r on its opening's one-thread database when the files it
// reads come to at most Options.SmallRunBytes (bytes), nothing of it ran
// in DuckDB yet, and it is not Engine.Run's second try of a small audit
// that failed there (Request.wide).
func (r *run) choose(bytes int64) {
	if r.side != nil || r.duck == nil || r.duck.solo == nil || bytes > r.e.opts.SmallRunBytes || r.req.wide {
		return
	}
	r.side = r.duck.solo
	r.e.soloRan.Add(1)
}

// solo: the run ran on its opening's one-thread database.
func (r *run) solo() bool { return r.duck != nil && r.side != nil && r.side == r.duck.solo }

// SoloRuns is how many runs ran on the one-thread database (duckDB).
func (e *Engine) SoloRuns() int64 { return e.soloRan.Load() }

// catalogs are the run catalogs pooled on the run's opening (nil for a
// run made outside Run: none kept).
func (r *run) catalogs() *runCatalogs {
	if r.duck == nil {
		return nil
	}
	return r.on().catalogs
}

// duckDB is the engine's current DuckDB pool, for tests that query it
// outside a run, and runs made outside Run (nil once closed).
func (e *Engine) duckDB() *sql.DB {
	e.duckMu.Lock()
	defer e.duckMu.Unlock()
	if e.duck == nil {
		return nil
	}
	return e.duck.db
}

// Reopened is how many times the engine opened its DuckDB again after a
// crash invalidated it.
func (e *Engine) Reopened() int64 { return e.reopened.Load() }

// invalidating: err is DuckDB's crash (an INTERNAL or a FATAL Error),
// which leaves its database invalidated, or the refusal of a statement
// on a database so left. DuckDB's error decides by its type: its message
// may quote the data (a value that did not convert).
func invalidating(err error) bool {
	if err == nil {
		return false
	}
	if de, ok := errors.AsType[*duckdb.Error](err); ok {
		return de.Type == duckdb.ErrorTypeInternal || de.Type == duckdb.ErrorTypeFatal
	}
	if _, ok := errors.AsType[verdict](err); ok {
		return false
	}
	if q, ok := errors.AsType[quoting](err); ok {
		// A verdict on the data, quoting an error without a type: DuckDB's
		// message that lost it begins with DuckDB's prefix, one the data
		// spells is inside it.
		msg := q.causeText()
		return strings.HasPrefix(msg, "INTERNAL Error") || strings.HasPrefix(msg, "FATAL Error")
	}
	// Errors that lost their type on the way keep DuckDB's text.
	msg := err.Error()
	return strings.Contains(msg, "INTERNAL Error") || strings.Contains(msg, "FATAL Error") ||
		strings.Contains(msg, "database has been invalidated")
}

// crashCause is the crash of DuckDB itself in err (an INTERNAL Error), as
// the run whose statement crashed it sees it; nil for the refusals of
// statements after it (FATAL Error), which the runs in flight see.
func crashCause(err error) error {
	if err == nil {
		return nil
	}
	if de, ok := errors.AsType[*duckdb.Error](err); ok {
		if de.Type == duckdb.ErrorTypeInternal {
			return err
		}
		return nil
	}
	if strings.Contains(err.Error(), "INTERNAL Error") {
		return err
	}
	return nil
}

// crashRefusal is the report of an audit whose own statement crashed
// DuckDB, as it did in an audit of the same batch before: each check
// errs (blocking the publish) naming the crash, and the batch is not read
// a third time.
func (r *run) crashRefusal(report schemas.AuditReport, cause error, start time.Time) schemas.AuditReport {
	why, _, _ := strings.Cut(cause.Error(), "\n\nStack Trace")
	msg := "DuckDB crashed reading this batch (its database was invalidated and opened again), as it did in an audit of the batch before: " +
		clip(why, 1024) + "; the batch is refused rather than read again"
	report.Checks = nil
	for _, c := range r.req.Suite.Checks {
		res := r.base(c)
		res.Status, res.Message = schemas.StatusError, msg
		report.Checks = append(report.Checks, res)
	}
	report.Passed = false
	report = clipReport(report, r.e.opts.MaxSampleValueBytes, r.e.opts.MaxReportBytes)
	report.DurationMs = time.Since(start).Milliseconds()
	r.log.Error("audit refused: its batch crashed DuckDB again", "err", why)
	return report
}

// key names the audit a run makes: its repository, dataset, ref and part.
func (r *run) key() string {
	return r.req.Repository + "\x00" + r.req.Dataset + "\x00" + r.req.Ref + "\x00" + r.req.part
}
