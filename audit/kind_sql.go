package audit

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lakewap/lakewap/schemas"
)

// KindSQL: a query over the dataset's tables (plain names resolve to the
// check's scope; base.<table> is the table at the base ref); every row it
// returns is a failure.
const KindSQL = "sql"

func init() {
	registerKind(&checkKind{
		name:     KindSQL,
		fields:   []string{"sql"},
		custom:   true,
		validate: needSQL,
		run:      (*run).custom,
	})
}

func needSQL(c Check, add addFunc) {
	if strings.TrimSpace(c.SQL) == "" {
		add("sql", "missing")
	}
}

// custom runs a sql or cross_table check: every row the query returns is a
// failure. Plain table names resolve to the check's scope. A query that
// cannot run while a table it names has no file anywhere observes that
// (unbornObserved).
func (r *run) custom(ctx context.Context, c Check) schemas.CheckResult {
	res, err := r.query(ctx, c)
	if res.Status != schemas.StatusError || !bindError(err) {
		return res // a query that binds errs on the data, not for want of a table's files
	}
	for _, t := range namedTables(c.SQL, r.req.Suite.Tables) {
		if v := r.views[viewKey{schemaOf(c), t}]; v != nil && v.synthetic {
			res.Observed = fmt.Sprintf(unbornObserved, v.table.Name)
			break
		}
	}
	return res
}

// unbornObserved is what a custom query observes that cannot run while a
// table it names has no file anywhere (its view is made up of the columns
// the suite's checks name): on a new target, a join of a table no dataset
// has published to yet. The engine alone writes it, in place of no
// observed value, never from the data or the error's text.
const unbornObserved = "no file of table %s anywhere yet"

// bindError says whether err is DuckDB's refusal to bind a query (a
// column or table it names is not there), as a query naming a table of no
// file errs; an error while it runs (a cast of a value, say) is the data's.
func bindError(err error) bool {
	de, ok := errors.AsType[*duckdb.Error](err)
	return ok && (de.Type == duckdb.ErrorTypeBinder || de.Type == duckdb.ErrorTypeCatalog)
}

// unborn says whether res is a custom query's error while a table it names
// has no file anywhere and the query could not bind (unbornObserved).
func unborn(res schemas.CheckResult) bool {
	head, tail, _ := strings.Cut(unbornObserved, "%s")
	table, ok := strings.CutPrefix(res.Observed, head)
	return res.Status == schemas.StatusError && ok && strings.HasSuffix(table, tail) && len(table) > len(tail)
}

// query runs c's query (custom), and says DuckDB's error when the query
// could not start.
func (r *run) query(ctx context.Context, c Check) (schemas.CheckResult, error) {
	if schema := schemaOf(c); schema != schemaMain {
		r.conn.searchPath = true // the catalog is not kept for another run (run.close)
		if _, err := r.conn.ExecContext(ctx, "SET search_path = "+quoteLiteral(r.catalog+"."+schema)); err != nil {
			return r.errored(c, err, 0), nil
		}
		// USE sets the search path back to the catalog's main schema.
		defer r.conn.ExecContext(context.WithoutCancel(ctx), "USE "+quoteIdent(r.catalog))
	}
	q := customSQL(c.SQL, r.e.opts.SampleRows)
	if err := r.confine(ctx, q); err != nil { // what runs is one query too
		return r.errored(c, err, 0), nil
	}
	if r.req.plainQuery != "" {
		if err := r.plainTables(ctx, r.req.plainQuery); err != nil {
			return r.errored(c, err, 0), nil
		}
	}
	// A time bound of its own: a query that runs for ever (a cross join of
	// generate_series) must not hold the audit until the step's deadline.
	qctx, cancel := context.WithTimeout(ctx, r.e.opts.QueryTimeout)
	defer cancel()
	overTime := func(err error) error {
		if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the query ran longer than its time bound of %s (audit.query_timeout)", r.e.opts.QueryTimeout)
		}
		return err
	}
	rows, err := r.conn.QueryContext(qctx, q)
	if err != nil {
		return r.errored(c, cmp.Or(r.refusedTable(c, err), overTime(err)), 0), err
	}
	defer rows.Close()
	var (
		n       int64
		samples []string
	)
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s, &n); err != nil {
			return r.errored(c, overTime(err), 0), nil
		}
		samples = append(samples, s.String)
	}
	if err := rows.Err(); err != nil {
		return r.errored(c, overTime(err), 0), nil
	}
	res := r.judged(c, n > 0, fmt.Sprintf("%d rows returned", n), "0 rows")
	res.SampleRows = samples
	res.Failures = &n
	return res, nil
}

// refusedTable is why a table the query names could not be read, when the
// query failed for want of it: a table the audit refused (its files' names
// collide, its claims do not hold for its data, ...) has no view, and
// DuckDB's "Table with name t does not exist" would hide the reason.
func (r *run) refusedTable(c Check, err error) error {
	msg := err.Error()
	i := strings.Index(msg, "Table with name ")
	if i < 0 {
		return nil
	}
	name, _, ok := strings.Cut(msg[i+len("Table with name "):], " does not exist")
	if !ok {
		return nil
	}
	for _, schema := range []string{schemaOf(c), schemaMain, schemaBase} {
		if v := r.views[viewKey{schema, strings.ToLower(name)}]; v != nil && v.colsErr != nil {
			return v.colsErr
		}
	}
	return nil
}

// customSQL runs a user query as a subquery, which admits a single query
// and nothing else (no second statement, no DDL). It returns the number of
// rows and up to limit of them as JSON objects in one pass.
func customSQL(query string, limit int) string {
	q := trimQuery(query)
	// The newline ends a trailing -- comment in the user's query.
	return fmt.Sprintf("SELECT CAST(to_json(__lakewap_row) AS VARCHAR), count(*) OVER () FROM (\n%s\n) __lakewap_row LIMIT %d", q, limit)
}
