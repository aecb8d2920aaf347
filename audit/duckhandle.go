package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
type duckDB struct {
	db       *sql.DB
	kept     stmtCache
	catalogs *runCatalogs
	// users are the runs (and rowOnly's queries) holding it, and retired
	// says the engine dropped it: closed when users reaches 0. Both under
	// Engine.duckMu.
	users   int
	retired bool
}

func (e *Engine) openDuck() (*duckDB, error) {
	db, err := openDuckDB(e.dir, e.opts)
	if err != nil {
		return nil, err
	}
	return &duckDB{db: db, catalogs: newRunCatalogs()}, nil
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
	d.catalogs.close()
	d.kept.close()
	return d.db.Close()
}

// crashed: a crash invalidated d, as a run that retired it found or as
// d answers now (a run that saw an error asks, whichever statement saw
// it and whatever the run made of it).
func (e *Engine) crashed(d *duckDB) bool {
	e.duckMu.Lock()
	retired := d.retired
	e.duckMu.Unlock()
	if retired {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := d.db.ExecContext(ctx, "SELECT 1")
	return err != nil && invalidating(err)
}

// pool is the run's DuckDB pool: of the opening it holds, or, for a run
// made outside Run (derivations, tests), the engine's current one (nil
// once closed).
func (r *run) pool() *sql.DB {
	if r.duck != nil {
		return r.duck.db
	}
	return r.e.duckDB()
}

// catalogs are the run catalogs pooled on the run's opening (nil for a
// run made outside Run: none kept).
func (r *run) catalogs() *runCatalogs {
	if r.duck == nil {
		return nil
	}
	return r.duck.catalogs
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
