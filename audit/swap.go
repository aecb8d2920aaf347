package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// A check failing on the target already excuses a change that adds no
// failing row of its own (worse). Beyond audit.sample_rows failing rows
// there, the samples cannot show which rows fail: a change mending one
// and making another (a swap) keeps the count. For a check of each row's
// own values, the rows failing with the change and not before are rows of
// the files it adds or rewrites (ownRowsFail). For the others (a custom
// query, unique, a where holding a query) a row elsewhere can start
// failing, so their failing rows with the change are compared with those
// at the base as multisets, in DuckDB (newFailingRows).

// maxNewRowsShown bounds the failing rows a verdict quotes, each clipped
// to newRowBytes: the verdict is a message of a report with a budget.
const (
	maxNewRowsShown = 3
	newRowBytes     = 200
)

// newFailingRows is why c, failing at base (the ref its result there was
// judged at) and with the change (req), fails with rows of the change's
// own: the rows of its failing-row query (failingRowsSQL) with the change
// that are not rows of the same query at base, counted as multisets (EXCEPT
// ALL: a row failing twice with the change and once there is one new). The
// query runs as a custom check of both refs (the base's tables are read as
// base.<table>, each plain name of the query shadowed by one), with the
// engine's budgets: audit.query_timeout, DuckDB's memory limit (it spills),
// and audit.sample_rows rows returned. Empty when none is new.
func newFailingRows(ctx context.Context, r Runner, req Request, suite Suite, c Check, base string) (string, error) {
	const beyond = "it fails with more rows there than its samples hold whole (audit.sample_rows, audit.max_sample_value_bytes), and "
	q, err := failingRowsSQL(c)
	if err != nil {
		return beyond + fmt.Sprintf("its failing rows cannot be compared with those there (%s): the change is judged alone", err), nil
	}
	d := Check{Name: c.ID(), Kind: KindCrossTable, SQL: multisetSQL(q, suite.Tables)}
	sum := sha256.Sum256([]byte(d.SQL))
	req.Suite = Suite{Tables: suite.Tables, Checks: []Check{d}}
	req.BaseRef = base // the ref before was judged at
	req.Full = true
	req.MergeOf = [2]string{} // its own run: no recheck's report answers it
	req.part = "new failing rows of " + d.Name + " " + hex.EncodeToString(sum[:8])
	req.plainQuery = q // a table named with its schema is not shadowed
	rep, err := r.Run(ctx, req)
	if err != nil {
		return "", fmt.Errorf("failing rows of check %s with the change and at %s: %w", c.ID(), short(base), err)
	}
	res, ok := resultsByName(rep)[d.Name]
	switch {
	case !ok || res.Status == schemas.StatusError:
		return beyond + fmt.Sprintf("its failing rows with this change cannot be compared with those there (%s): the change is judged alone", clip(res.Message, 300)), nil
	case res.Failures != nil && *res.Failures > 0:
		rows := res.SampleRows[:min(len(res.SampleRows), maxNewRowsShown)]
		return beyond + fmt.Sprintf("%d of its failing rows with this change do not fail there (compared with those there as multisets), e.g. %s: "+
			"the change makes it worse", *res.Failures, strings.Join(each(rows, func(r string) string { return clip(r, newRowBytes) }), ", ")), nil
	case res.Status != schemas.StatusPass:
		return beyond + "rows fail it with this change that do not fail there: the change makes it worse", nil
	}
	return "", nil
}

// failingRowsSQL is the query of c's failing rows, naming tables by their
// plain names (a custom query's own rows, a kind's failingRows, or the
// rows a row-level kind's condition fails, within its where). A query
// naming the main or batch schema's tables is refused: those names read
// the change's tables at the base too, so its rows there would not be the
// base's.
func failingRowsSQL(c Check) (string, error) {
	for _, text := range []string{c.SQL, c.Where} {
		for _, sc := range []string{schemaMain, schemaBatch} {
			if mentionsSchema[sc].MatchString(text) {
				return "", fmt.Errorf("it names tables as %s.<table>, which cannot be read as they were there", sc)
			}
		}
	}
	k := kindOf(c)
	from := quoteIdent(c.Table)
	if strings.TrimSpace(c.Where) != "" {
		from = fmt.Sprintf("(SELECT * FROM %s WHERE (\n%s\n)) AS %s", quoteIdent(c.Table), c.Where, quoteIdent(c.Table))
	}
	switch {
	case k == nil:
	case k.custom:
		return trimQuery(c.SQL), nil
	case k.failingRows != nil:
		return k.failingRows(c, from), nil
	case k.failing != nil:
		return fmt.Sprintf("SELECT * FROM %s WHERE %s", from, k.failing(c)), nil
	}
	return "", fmt.Errorf("a %s check has no failing rows to compare", c.Kind)
}

// multisetSQL is the rows of q (failingRowsSQL) over the run's tables that
// are not rows of q over the same tables at the base, as multisets. Each of
// tables is shadowed, by its plain name, by a CTE of its base view; names
// the query's own CTEs give shadow them in turn, as they do in q itself.
// The CTEs are not materialized: DuckDB reads through them.
func multisetSQL(q string, tables []Table) string {
	ctes := each(tables, func(t Table) string {
		return fmt.Sprintf("%s AS NOT MATERIALIZED (SELECT * FROM base.%s)", quoteIdent(t.Name), quoteIdent(t.Name))
	})
	return fmt.Sprintf("SELECT * FROM (\n%s\n) EXCEPT ALL SELECT * FROM (WITH %s SELECT * FROM (\n%s\n))", q, strings.Join(ctes, ", "), q)
}
