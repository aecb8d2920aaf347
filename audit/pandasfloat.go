package audit

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lakewap/lakewap/schemas"
)

// pandas reads a 64-bit integer column (BIGINT, UBIGINT, HUGEINT as DuckDB
// types it) that holds a NULL as float64: pyarrow's to_pandas default,
// pandas.read_parquet, deltalake's to_pandas, read_csv and read_json of a
// column with empty fields. float64 holds every integer within ±2^53 and
// not all beyond, so ids 1 apart beyond it read as one value
// (TestPandasReadsBigIdsWithNullsAsFloat). A unique check that counts no
// duplicate in DuckDB's reading of such a column would pass a table where a
// pandas reader finds duplicates: readers disagree, and the check is
// refused instead. The condition is table-wide (pandas converts the whole
// column when any row is NULL); the figures it takes are the check's own
// scan's (its rows, the column's non-NULL count, min and max) or, in an
// incremental audit, the unchanged files' stored statistics.

// float64Exact is 2^53: every integer of at most this magnitude is a float64.
var float64Exact = big.NewInt(1 << 53)

// intRange is the range of an integer column's values, from their text.
type intRange struct {
	lo, hi *big.Int
}

// add widens r by the values lo and hi (DuckDB's text of integers); text
// that is not an integer is left out.
func (r *intRange) add(lo, hi string) {
	for _, s := range []string{lo, hi} {
		v, ok := new(big.Int).SetString(strings.TrimSpace(s), 10)
		if !ok {
			continue
		}
		if r.lo == nil || v.Cmp(r.lo) < 0 {
			r.lo = v
		}
		if r.hi == nil || v.Cmp(r.hi) > 0 {
			r.hi = v
		}
	}
}

// widen widens r by o's values.
func (r *intRange) widen(o intRange) {
	for _, v := range []*big.Int{o.lo, o.hi} {
		if v == nil {
			continue
		}
		if r.lo == nil || v.Cmp(r.lo) < 0 {
			r.lo = v
		}
		if r.hi == nil || v.Cmp(r.hi) > 0 {
			r.hi = v
		}
	}
}

// beyond is the value of r farthest beyond ±2^53, or nil when every value
// of r is within.
func (r intRange) beyond() *big.Int {
	var far *big.Int
	for _, v := range []*big.Int{r.lo, r.hi} {
		if v != nil && v.CmpAbs(float64Exact) > 0 && (far == nil || v.CmpAbs(far) > 0) {
			far = v
		}
	}
	return far
}

// pandasFloat is the refusal of a unique check over column col of table,
// of DuckDB type typ, when pandas reads the column otherwise: an integer
// column with nulls NULLs (of rows) whose values (in r) reach beyond
// ±2^53; or nil.
func pandasFloat(table, col, typ string, nulls, rows int64, r intRange) error {
	return pandasFloatAs(table, col, typ, nulls, rows, r, "duplicates this check does not count")
}

// pandasFloatAs is pandasFloat, saying what a pandas reader finds.
func pandasFloatAs(table, col, typ string, nulls, rows int64, r intRange, what string) error {
	if nulls <= 0 || !integerType(typ) {
		return nil
	}
	v := r.beyond()
	if v == nil {
		return nil
	}
	return fmt.Errorf("pandas reads column %q of table %s (%s) as float64 because it holds NULLs (%d of %d rows), and its values reach %s, beyond ±2^53, where float64 does not hold every integer: ids 1 apart read as one, so a pandas reader can find %s: readers disagree on it (write the column without NULLs, or ids within ±2^53)",
		col, table, strings.ToUpper(typ), nulls, rows, v, what)
}

// uniqueFigures are the expressions, after a single-column unique check's
// duplicate count, that pandasFloat needs: the column's non-NULL values,
// its min and max as text, and its type.
func uniqueFigures(col string) []string {
	q := quoteIdent(col)
	return []string{fmt.Sprintf("count(%s)", q), fmt.Sprintf("CAST(min(%s) AS VARCHAR)", q), fmt.Sprintf("CAST(max(%s) AS VARCHAR)", q), fmt.Sprintf("typeof(min(%s))", q)}
}

// int64Range bounds the integers pyarrow's JSON reader reads as int64.
var int64Min, int64Max = big.NewInt(-1 << 63), big.NewInt(1<<63 - 1)

// pyarrowJSONDouble is the refusal of a unique check over column col of
// JSON lines table, of DuckDB type typ, whose values (in r) leave the
// int64 range: pyarrow's JSON reader reads such a column as double (NULLs
// or none), where DuckDB reads UBIGINT or HUGEINT, and ids 1 apart read as
// one (TestReview12JSONIdsBeyondInt64AreRefusedUnderUnique); or nil.
func pyarrowJSONDouble(table, col, typ string, r intRange) error {
	return pyarrowJSONDoubleAs(table, col, typ, r, "duplicates this check does not count")
}

// pyarrowJSONDoubleAs is pyarrowJSONDouble, saying what a pyarrow reader
// finds.
func pyarrowJSONDoubleAs(table, col, typ string, r intRange, what string) error {
	if !integerType(typ) || r.lo == nil || (r.lo.Cmp(int64Min) >= 0 && r.hi.Cmp(int64Max) <= 0) {
		return nil
	}
	far := r.hi
	if r.lo.Cmp(int64Min) < 0 {
		far = r.lo
	}
	return fmt.Errorf("pyarrow reads column %q of JSON lines table %s (%s) as double because its values reach %s, beyond the int64 range, where double does not hold every integer: ids 1 apart read as one, so a pyarrow reader can find %s: readers disagree on it (write ids within the int64 range, or as strings)",
		col, table, strings.ToUpper(typ), far, what)
}

// The same reading refuses other checks over such a column
// (TestPandasFloatUnderOtherChecks, pandas 3.1.1): a multi-column unique
// (pandas' duplicated finds (2^53, 1) and (2^53+1, 1) equal), a unique
// with where (pandas converts the whole column, NULLs outside the
// condition too, before a user filters), accepted_values (isin compares
// the float 2^53 with the listed int 2^53+1 exactly: not in the list), and
// dbt's relationships (isin of a child column holding 2^53+1 and a NULL
// in a parent's int64 2^53+1 is False, and the reverse). A check that
// passed is refused when a column it reads is one pandas reads as float64
// with values beyond ±2^53, the figures taken over the column's whole
// table: the view's (a query of its own, for a 64-bit integer column
// only), or, incremental, the batch's and the unchanged files' stored
// statistics. A failed check is left failed: pandas' reading only merges
// values. A regex over an integer column with a NULL, or a BOOLEAN one, is
// refused too (pandasText), and in JSON lines tables integers beyond int64
// under any of these checks (pyarrowJSONDoubleAs).

// pandasCol is a column of a table a check reads.
type pandasCol struct{ table, col string }

// pandasColumnsOf are the columns of c whose reading by pandas
// pandasReadings compares: not a single-column unique without where, whose
// own scan has its figures (kind_unique.go).
func pandasColumnsOf(c Check) []pandasCol {
	switch c.Kind {
	case KindUnique:
		cols := c.columns()
		if len(cols) == 1 && strings.TrimSpace(c.Where) == "" {
			return nil
		}
		return each(cols, func(col string) pandasCol { return pandasCol{c.Table, col} })
	case KindAcceptedValues, KindRegex:
		return []pandasCol{{c.Table, c.Column}}
	case KindCrossTable, KindSQL:
		if child, col, parent, field, ok := relationshipsOf(c.SQL); ok {
			return []pandasCol{{child, col}, {parent, field}}
		}
	}
	return nil
}

// dbtRelationships is dbtCheck's SQL of a relationships test (its child a
// table, or the rows of one meeting a where condition).
var dbtRelationships = regexp.MustCompile(`^SELECT child\.\* FROM (?:("(?:[^"]|"")+")|\(SELECT \* FROM ("(?:[^"]|"")+") WHERE \((?s:.*)\)\)) AS child WHERE child\.("(?:[^"]|"")+") IS NOT NULL AND NOT EXISTS \(SELECT 1 FROM ("(?:[^"]|"")+") AS parent WHERE parent\.("(?:[^"]|"")+") = child\.("(?:[^"]|"")+")\)$`)

// relationshipsOf reads the tables and columns of dbt's relationships
// from the SQL dbtCheck made of it.
func relationshipsOf(query string) (child, col, parent, field string, ok bool) {
	m := dbtRelationships.FindStringSubmatch(strings.TrimSpace(query))
	if m == nil || m[3] != m[6] {
		return "", "", "", "", false
	}
	unquote := func(s string) string { return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`) }
	return unquote(m[1] + m[2]), unquote(m[3]), unquote(m[4]), unquote(m[5]), true
}

// pandasReadings refuses each check that passed and reads a column
// (pandasColumnsOf) that pandas or pyarrow read otherwise: as float64 with
// values beyond ±2^53 (pandasFloatAs), as other text under a regex
// (pandasText), as doubles beyond int64 in JSON lines (pyarrowJSONDoubleAs).
func (r *run) pandasReadings(ctx context.Context, results []schemas.CheckResult) {
	for i, c := range r.req.Suite.Checks {
		if i >= len(results) || results[i].Status != schemas.StatusPass {
			continue
		}
		for _, pc := range pandasColumnsOf(c) {
			if err := r.pandasColumn(ctx, i, c, pc); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				break
			}
		}
		if results[i].Status != schemas.StatusPass || r.table(c.Table).format() != FormatJSONL {
			continue
		}
		if (c.Kind == KindRange || c.Kind == KindStat) && pandasDateName(c.Column) {
			if err := r.pandasJSONDateRange(ctx, c); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				continue
			}
		}
		if c.Kind == KindUnique {
			if err := r.pandasJSONDateUnique(ctx, c); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				continue
			}
		}
		if c.Kind == KindNotNull {
			if err := r.pandasJSONDateNaT(ctx, c); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				continue
			}
		}
		for _, col := range pandasJSONTextColumns(c) {
			if err := r.pandasJSONNumbers(ctx, c, col); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				break
			}
		}
		if results[i].Status != schemas.StatusPass {
			continue
		}
		cols := pandasJSONTextColumns(c)
		if (c.Kind == KindRange || c.Kind == KindStat) && pandasDateName(c.Column) {
			cols = append(cols, c.Column)
		}
		for _, col := range cols {
			if err := r.pandasJSONFiles(ctx, c, col); err != nil {
				results[i] = r.errored(c, err, time.Duration(results[i].DurationMs)*time.Millisecond)
				break
			}
		}
	}
}

// pandasJSONTextColumns are the columns of check c over a JSON lines
// table whose text pandasJSONNumbers compares.
func pandasJSONTextColumns(c Check) []string {
	switch c.Kind {
	case KindRegex, KindAcceptedValues, KindUnique, KindNotNull:
		return c.columns()
	}
	return nil
}

// pandasJSONWholeDoubles is the refusal of a regex check over DOUBLE
// column col of JSON lines table in view k when pandas.read_json reads it
// as int64: a column of floats without a NULL whose every value is whole
// (and within int64) it coerces to integers, rendered 1 where DuckDB's
// text is 1.0 (TestJSONNumericTextPandasReadsAsNumbers); or nil.
func (r *run) pandasJSONWholeDoubles(ctx context.Context, k viewKey, table, col string) error {
	q := quoteIdent(col)
	s := fmt.Sprintf("SELECT count(*), count(%s), count(*) FILTER (WHERE %s = floor(%s) AND abs(%s) < 9.2e18) FROM %s", q, q, q, q, qualified(k.schema, table))
	vals, err := r.memoRow(ctx, s, s, 3, k)
	if err != nil {
		return err
	}
	rows := asInt(vals[0])
	if rows == 0 || asInt(vals[1]) < rows || asInt(vals[2]) < rows {
		return nil
	}
	return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s (DOUBLE), whose every value is whole and none NULL, as int64 (its dtype default), rendering 1 where DuckDB's text is 1.0, which the pattern is matched against: readers disagree on it (write a fraction, or check it with range)",
		col, table)
}

// pandasJSONNumbers is the refusal of check c over column col of its JSON
// lines table when DuckDB reads the column as text and pandas.read_json
// as numbers, judging them otherwise: it converts a column of strings to
// float64 (int64 when every one is whole) when every non-NULL one is a
// number's text (dtype's default), so "01" and "1" read as one value 1,
// "007" renders 7, "1.50" 1.5, and "NaN" is missing
// (TestJSONNumericTextPandasReadsAsNumbers). Refused: a unique check where
// two texts read as one number; a regex where a text is not its number's
// rendering; an accepted_values check (isin finds no listed string among
// numbers); a not_null where a text is a NaN's. Or nil.
func (r *run) pandasJSONNumbers(ctx context.Context, c Check, col string) error {
	k, name, types, err := r.viewTypes(ctx, c)
	if types == nil {
		return err
	}
	typ := types[strings.ToLower(col)]
	if typ == "DOUBLE" && c.Kind == KindRegex {
		return r.pandasJSONWholeDoubles(ctx, k, name, col)
	}
	if typ != "VARCHAR" {
		return nil
	}
	// DuckDB's TRY_CAST to DOUBLE takes the text Python's float does
	// (signs, spaces, 1e3, 1_000, NaN, Infinity) once the digits of other
	// scripts are ASCII ones (pythonFloatText), and renders a double as
	// Python's repr does (TestRegexOverColumnsPandasRendersOtherwise).
	s := fmt.Sprintf(`WITH x AS (SELECT %s AS t, TRY_CAST(%s AS DOUBLE) AS d FROM %s WHERE %s IS NOT NULL)
SELECT count(*), count(d), count(*) FILTER (WHERE isnan(d)), count(DISTINCT t), count(DISTINCT d),
coalesce(bool_and(d = floor(d) AND abs(d) < 9.2e18), false),
count(*) FILTER (WHERE NOT isnan(d) AND t <> CAST(TRY_CAST(d AS BIGINT) AS VARCHAR)), count(*) FILTER (WHERE NOT isnan(d) AND t <> CAST(d AS VARCHAR)) FROM x`,
		quoteIdent(col), pythonFloatText(quoteIdent(col)), qualified(k.schema, name), quoteIdent(col))
	vals, err := r.memoRow(ctx, s, s, 8, k)
	if err != nil {
		return err
	}
	nonNull, numbers, nans := asInt(vals[0]), asInt(vals[1]), asInt(vals[2])
	if nonNull == 0 || numbers < nonNull {
		return nil // pandas keeps the text
	}
	rendered := asInt(vals[7])
	if whole, _ := vals[5].(bool); whole {
		rendered = asInt(vals[6])
	}
	why := ""
	switch {
	case c.Kind == KindUnique && asInt(vals[3]) != asInt(vals[4]):
		why = fmt.Sprintf("%d texts read as %d numbers (\"01\" and \"1\" as 1), which can be duplicates", asInt(vals[3]), asInt(vals[4]))
	case c.Kind == KindRegex && rendered > 0:
		why = fmt.Sprintf("%d of them render as other text than they are (\"007\" as 7, \"1.50\" as 1.5), which the pattern is matched against", rendered)
	case c.Kind == KindAcceptedValues:
		why = "isin finds no listed text among numbers"
	case c.Kind == KindNotNull && nans > 0:
		why = fmt.Sprintf("%d of them are a NaN's text, which reads as missing", nans)
	default:
		return nil
	}
	return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s, whose every value is a number's text, as numbers (its dtype default): %s, where DuckDB reads the text: readers disagree on it (write the values as JSON numbers, or as text that is not a number)",
		col, name, why)
}

// pythonFloatText is SQL of the text expr as Python's float reads it,
// for DuckDB's TRY_CAST to DOUBLE: trimmed, and with the decimal digits of
// every script (Unicode's Nd: "１２" fullwidth, "٣٤" Arabic-Indic) as the
// ASCII digits of their values, which float takes and DuckDB does not
// (pandas.read_json reads "１２" as 12; TestJSONNumbersInOtherScriptsPandasReadsAsNumbers).
func pythonFloatText(expr string) string {
	return fmt.Sprintf("trim(translate(%s, %s, %s))", expr, quoteLiteral(otherDigits.from), quoteLiteral(otherDigits.to))
}

// otherDigits are the decimal digits beyond ASCII (Go's Unicode tables:
// each range of Nd is whole runs of 0-9) and their ASCII digits, in order.
var otherDigits = func() (d struct{ from, to string }) {
	var from, to strings.Builder
	for _, rg := range unicode.Nd.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			if r > unicode.MaxASCII {
				from.WriteRune(r)
				to.WriteByte(byte('0' + (r-rune(rg.Lo))/rune(rg.Stride)%10))
			}
		}
	}
	for _, rg := range unicode.Nd.R32 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			from.WriteRune(r)
			to.WriteByte(byte('0' + (r-rune(rg.Lo))/rune(rg.Stride)%10))
		}
	}
	d.from, d.to = from.String(), to.String()
	return d
}()

// pandasJSONDateRange is the refusal of range or stat check c over a JSON
// lines column named like a date that pandas.read_json reads as datetimes
// (pandasJSONDates): Great Expectations' pandas
// expect_column_values_to_be_between and expect_column_max_to_be_between
// compare them (or their max, a Timestamp) with the check's numbers, which
// pandas refuses (TypeError: Invalid comparison between dtype=datetime64
// and int), so the check errs there
// (TestJSONDateNamedColumnRangePandasComparesDatetimes); or nil.
func (r *run) pandasJSONDateRange(ctx context.Context, c Check) error {
	k, name, types, err := r.viewTypes(ctx, c)
	if types == nil {
		return err
	}
	typ := types[strings.ToLower(c.Column)]
	return r.pandasJSONDates(ctx, k, name, c.Column, typ)
}

// viewTypes is the view check c reads (its key and name) and the DuckDB
// type of each of its columns, by lower-case name, upper-case type (a
// view's column names differ in more than case). types is nil where the
// view is missing, broken or made up, which leaves nothing to refuse, or
// with err where it cannot be described.
func (r *run) viewTypes(ctx context.Context, c Check) (k viewKey, name string, types map[string]string, err error) {
	name = cmp.Or(r.table(c.Table).Name, c.Table)
	k = viewKey{schemaOf(c), strings.ToLower(name)}
	if v := r.views[k]; v == nil || v.broken || v.synthetic {
		return k, name, nil, nil
	}
	cols, err := r.describe(ctx, k.schema, name)
	if err != nil {
		return k, name, nil, err
	}
	types = make(map[string]string, len(cols))
	for _, cl := range cols {
		types[strings.ToLower(cl.name)] = strings.ToUpper(cl.typ)
	}
	return k, name, types, nil
}

// pandasNaTTexts are the texts pandas' to_datetime reads as NaT, a
// missing value, beside "" (pandas 3.1.1's nat_strings).
var pandasNaTTexts = []string{"NaT", "nat", "NAT", "nan", "NaN", "NAN"}

// pandasJSONDateNaT is the refusal of not_null check c over a VARCHAR
// column of a JSON lines table named like a date (pandasDateName) holding
// "" or a NaT's or NaN's text (pandasNaTTexts): pandas.read_json parses
// such a column with to_datetime when it can parse the others, reading
// those as NaT, a missing value, which DuckDB reads as text
// (TestJSONDateNamedTextNaTPandasReadsAsMissing); or nil. The whole view
// is counted: pandas converts the column before a where filters it.
func (r *run) pandasJSONDateNaT(ctx context.Context, c Check) error {
	k, name, types, err := r.viewTypes(ctx, c)
	if types == nil {
		return err
	}
	for _, col := range c.columns() {
		if !pandasDateName(col) || types[strings.ToLower(col)] != "VARCHAR" {
			continue
		}
		q := quoteIdent(col)
		s := fmt.Sprintf("SELECT count(*) FILTER (WHERE %s = '' OR %s IN (%s)) FROM %s", q, q, strings.Join(each(pandasNaTTexts, quoteLiteral), ", "), qualified(k.schema, name))
		vals, err := r.memoRow(ctx, s, s, 1, k)
		if err != nil {
			return err
		}
		if n := asInt(vals[0]); n > 0 {
			return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s (VARCHAR) as datetimes by its name (convert_dates) when it can parse its text, and %d of its values are \"\" or a NaT's or NaN's text (NaT, nan), which it reads as missing where DuckDB reads text: readers disagree on it (write them as null, or name the column otherwise)",
				col, name, n)
		}
	}
	return nil
}

// pandasJSONDateUnique is the refusal of unique check c over a VARCHAR
// column of a JSON lines table named like a date (pandasDateName) whose
// texts pandas.read_json may read as fewer times: it parses such a column
// with to_datetime, so "2024-01-02" and "2024-01-02 00:00:00" read as one
// value, a duplicate where DuckDB compares the text
// (TestJSONDateNamedTextUniquePandasReadsAsOneTime). Refused when two
// texts TRY_CAST to one TIMESTAMP, or when a text does not cast at all
// (pandas' parser takes more forms than DuckDB's, 01/02/2024 among them,
// so which times it reads is not known here); "" and NaT's texts, which
// it reads as missing, aside. The whole view is counted. Or nil.
func (r *run) pandasJSONDateUnique(ctx context.Context, c Check) error {
	k, name, types, err := r.viewTypes(ctx, c)
	if types == nil {
		return err
	}
	for _, col := range c.columns() {
		if !pandasDateName(col) || types[strings.ToLower(col)] != "VARCHAR" {
			continue
		}
		q := quoteIdent(col)
		s := fmt.Sprintf(`WITH x AS (SELECT %s AS t, TRY_CAST(%s AS TIMESTAMP) AS d FROM %s WHERE %s IS NOT NULL AND %s <> '' AND %s NOT IN (%s))
SELECT count(*), count(d), count(DISTINCT t), count(DISTINCT d) FROM x`,
			q, q, qualified(k.schema, name), q, q, q, strings.Join(each(pandasNaTTexts, quoteLiteral), ", "))
		vals, err := r.memoRow(ctx, s, s, 4, k)
		if err != nil {
			return err
		}
		n, cast, texts, times := asInt(vals[0]), asInt(vals[1]), asInt(vals[2]), asInt(vals[3])
		why := ""
		switch {
		case cast < n:
			why = fmt.Sprintf("%d of its texts are not times DuckDB reads, which pandas may read as times all the same (01/02/2024), so which of them it reads as one time is not known here", n-cast)
		case texts > times:
			why = fmt.Sprintf("its %d texts are %d times (\"2024-01-02\" and \"2024-01-02 00:00:00\" read as one), which can be duplicates", texts, times)
		default:
			continue
		}
		return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s (VARCHAR) as datetimes by its name (convert_dates) when it can parse its text: %s, where DuckDB compares the text: readers disagree on it (write the column as one form of time, or name it otherwise)",
			col, name, why)
	}
	return nil
}

// pandasFigures is the query of a column's figures for pandasFloat over
// a view: its rows, the column's non-NULL values, min and max as text, and
// type.
func pandasFigures(schema, table, col string) string {
	return fmt.Sprintf("SELECT count(*), %s FROM %s", strings.Join(uniqueFigures(col), ", "), qualified(schema, table))
}

// pandasColumn is the refusal of check i (c) for pandas' reading of
// column pc, or nil.
func (r *run) pandasColumn(ctx context.Context, i int, c Check, pc pandasCol) error {
	table := r.table(pc.table)
	name := cmp.Or(table.Name, pc.table)
	if r.inc != nil && r.inc.planned[i] && strings.EqualFold(pc.table, c.Table) {
		// The batch's rows and the unchanged files' statistics.
		it, err := r.incTableOf(ctx, c.Table)
		if err != nil {
			return err
		}
		key := strings.ToLower(pc.col)
		var rows, nonNull int64
		var in intRange
		wide, text := "", ""
		sts := it.oldStats
		if len(it.batchStats) == len(it.batch) {
			// The batch's files' statistics, which hold the column
			// (incTable's need): no query.
			sts = append(slices.Clone(it.batchStats), sts...)
		} else {
			q := pandasFigures(schemaBatch, name, pc.col)
			vals, err := r.memoRow(ctx, q, q, 5, viewKey{schemaBatch, strings.ToLower(name)})
			if err != nil {
				return err
			}
			rows, nonNull, wide = asInt(vals[0]), asInt(vals[1]), fmt.Sprint(vals[4])
			if integerType(wide) {
				in.add(fmt.Sprint(vals[2]), fmt.Sprint(vals[3]))
			}
			if strings.EqualFold(wide, "BOOLEAN") || pandasOtherText(wide) != "" || naiveTimestamp(wide) || strings.EqualFold(wide, "DOUBLE") {
				text = wide
			}
		}
		if err := pandasValueSet(c, name, pc.col, wide); err != nil {
			return err
		}
		if err := pandasNestedValues(c, name, pc.col, wide); err != nil {
			return err
		}
		// The unchanged files all of one type of the column: their
		// summary's figures (summary.go, keyColumn) tell what the loop
		// below would, file by file.
		var kc *keyColumn
		if it.sum != nil && len(it.oldStats) > 0 {
			if k := it.sum.keys[key]; k != nil && len(k.types) == 1 {
				kc, sts = k, sts[:len(sts)-len(it.oldStats)] // the batch's files', if any
			}
		}
		for _, st := range sts {
			cs := st.Cols[key]
			if err := pandasValueSet(c, name, pc.col, cs.Type); err != nil {
				return err
			}
			if err := pandasNestedValues(c, name, pc.col, cs.Type); err != nil {
				return err
			}
			rows += st.Rows
			nonNull += cs.NonNull
			switch {
			case integerType(cs.Type):
				in.add(cs.Min, cs.Max)
				if !integerType(wide) || int64Wide(cs.Type) {
					wide = cs.Type
				}
			case strings.EqualFold(cs.Type, "BOOLEAN") || pandasOtherText(cs.Type) != "" || naiveTimestamp(cs.Type) || strings.EqualFold(cs.Type, "DOUBLE"):
				text = cs.Type
			}
		}
		if kc != nil {
			var typ string
			for t := range kc.types {
				typ = t
			}
			if err := pandasValueSet(c, name, pc.col, typ); err != nil {
				return err
			}
			if err := pandasNestedValues(c, name, pc.col, typ); err != nil {
				return err
			}
			rows += it.sum.rows
			nonNull += kc.nonNull
			switch {
			case integerType(typ):
				in.widen(kc.ints)
				if !integerType(wide) || int64Wide(typ) {
					wide = typ // as for the first file; the others keep it
				}
			case strings.EqualFold(typ, "BOOLEAN") || pandasOtherText(typ) != "" || naiveTimestamp(typ) || strings.EqualFold(typ, "DOUBLE"):
				text = typ
			}
		}
		if (c.Kind == KindRegex || c.Kind == KindAcceptedValues) && naiveTimestamp(text) {
			// pandas renders each by all the column's values, which the
			// statistics do not tell: judge it over the whole table.
			if r.refull == "" {
				r.refull = fmt.Sprintf("check %s compares the text of timestamp column %q of table %s, which pandas renders by all the column's values (pandasTimestampText)", c.ID(), pc.col, name)
			}
			return nil
		}
		if c.Kind == KindAcceptedValues && plainTime(text) {
			// pandas renders a fraction otherwise, which the statistics
			// of the unchanged files do not tell.
			if r.refull == "" {
				r.refull = fmt.Sprintf("check %s compares the text of TIME column %q of table %s, which pandas renders otherwise with a fraction of a second (pandasTimeText)", c.ID(), pc.col, name)
			}
			return nil
		}
		if c.Kind == KindRegex && strings.EqualFold(text, "DOUBLE") {
			// Spark renders some values otherwise, which the statistics
			// of the unchanged files do not tell.
			if r.refull == "" {
				r.refull = fmt.Sprintf("check %s matches a pattern against DOUBLE column %q of table %s, whose values Spark renders otherwise beyond 10^7 and under 10^-3 (sparkDoubleText)", c.ID(), pc.col, name)
			}
			return nil
		}
		if c.Kind == KindRegex && text != "" {
			// A file's type pandas renders otherwise, whatever the others'.
			wide = text
		}
		return pandasRefusal(c, name, pc.col, wide, rows-nonNull, rows, in)
	}
	schema := schemaOf(c)
	k := viewKey{schema, strings.ToLower(name)}
	if v := r.views[k]; v == nil || v.broken || v.synthetic {
		return nil
	}
	cols, err := r.describe(ctx, schema, name)
	if err != nil {
		return err
	}
	typ := ""
	for _, col := range cols {
		if strings.EqualFold(col.name, pc.col) {
			typ = strings.ToUpper(col.typ)
		}
	}
	if err := pandasValueSet(c, name, pc.col, typ); err != nil {
		return err
	}
	if err := pandasNestedValues(c, name, pc.col, typ); err != nil {
		return err
	}
	if table.format() == FormatJSONL && (c.Kind == KindRegex || c.Kind == KindAcceptedValues) && pandasDateName(pc.col) {
		if err := r.pandasJSONDates(ctx, k, name, pc.col, typ); err != nil {
			return err
		}
	}
	switch {
	case (c.Kind == KindRegex || c.Kind == KindAcceptedValues) && naiveTimestamp(typ):
		q := pandasTimestampFigures(schema, name, pc.col, c.Where)
		vals, err := r.memoRow(ctx, q, q, 3, k)
		if err != nil {
			return err
		}
		return pandasTimestampText(name, pc.col, typ, asInt(vals[0]), asInt(vals[1]), asInt(vals[2]))
	case c.Kind == KindAcceptedValues && plainTime(typ):
		q := pandasTimestampFigures(schema, name, pc.col, c.Where)
		vals, err := r.memoRow(ctx, q, q, 3, k)
		if err != nil {
			return err
		}
		return pandasTimeText(name, pc.col, typ, asInt(vals[2]))
	case c.Kind == KindRegex && typ == "DOUBLE":
		q := sparkDoubleFigures(schema, name, pc.col, c.Where)
		vals, err := r.memoRow(ctx, q, q, 1, k)
		if err != nil {
			return err
		}
		return sparkDoubleText(name, pc.col, asInt(vals[0]))
	case c.Kind == KindRegex && (typ == "BOOLEAN" || pandasOtherText(typ) != ""):
		return pandasRefusal(c, name, pc.col, typ, 0, 0, intRange{})
	case c.Kind == KindRegex && integerType(typ), int64Wide(typ):
	default:
		return nil
	}
	q := pandasFigures(schema, name, pc.col)
	vals, err := r.memoRow(ctx, q, q, 5, k)
	if err != nil {
		return err
	}
	var in intRange
	in.add(fmt.Sprint(vals[2]), fmt.Sprint(vals[3]))
	rows, typ := asInt(vals[0]), fmt.Sprint(vals[4])
	if err := pandasRefusal(c, name, pc.col, typ, rows-asInt(vals[1]), rows, in); err != nil || table.format() != FormatJSONL {
		return err
	}
	// pyarrow's JSON reader reads integers beyond int64 as doubles, NULLs
	// or none (TestJSONIdsBeyondInt64UnderOtherChecks).
	what := "values other than this check compares"
	switch c.Kind {
	case KindUnique:
		what = "duplicates this check does not count"
	case KindRegex:
		what = "other text than DuckDB's (1.8446744073709552e+19), which the pattern is matched against"
	}
	return pyarrowJSONDoubleAs(name, pc.col, typ, in, what)
}

// pandasRefusal is the refusal of check c for pandas' reading of column
// col of table (of DuckDB type typ, with nulls NULLs of rows, its integers
// in r), or nil.
func pandasRefusal(c Check, table, col, typ string, nulls, rows int64, r intRange) error {
	switch c.Kind {
	case KindRegex:
		return pandasText(table, col, typ, nulls, rows)
	case KindUnique:
		return pandasFloatAs(table, col, typ, nulls, rows, r, "duplicates this check does not count")
	}
	return pandasFloatAs(table, col, typ, nulls, rows, r, "values other than this check compares (isin of an integer beyond ±2^53 finds no match)")
}

// pandasText is the refusal of a regex check over column col of table
// when pandas renders its values as other text than DuckDB, which Great
// Expectations' pandas regex matches (column.astype(str)): an integer
// column holding a NULL reads as float64, 12345 as "12345.0"; a boolean
// renders "True" and "False" (TestRegexOverColumnsPandasRendersOtherwise).
func pandasText(table, col, typ string, nulls, rows int64) error {
	if how := pandasOtherText(typ); how != "" {
		return fmt.Errorf("pandas renders column %q of table %s (%s) as other text than DuckDB's, %s, and the pattern is matched against the text: readers disagree on it (write the column as text, or check it otherwise)",
			col, table, strings.ToUpper(typ), how)
	}
	switch {
	case strings.EqualFold(typ, "BOOLEAN"):
		return fmt.Errorf("pandas renders column %q of table %s (BOOLEAN) as the text True and False, where DuckDB's is true and false, and the pattern is matched against the text: readers disagree on it (write the column as text, or check it otherwise)", col, table)
	case integerType(typ) && nulls > 0:
		return fmt.Errorf("pandas reads column %q of table %s (%s) as float64 because it holds NULLs (%d of %d rows), and renders its values as text with a fraction (12345.0 where DuckDB's is 12345), which the pattern is matched against: readers disagree on it (write the column without NULLs, or as text)",
			col, table, strings.ToUpper(typ), nulls, rows)
	}
	return nil
}

// pandasValueSet is the refusal of accepted_values check c over column
// col of table, of DuckDB type typ, when c's values come from a Great
// Expectations value_set (c.ValueTypes) and pandas' isin, which compares
// values of their types, finds a value otherwise than the audit's text
// (TestGreatExpectationsValueSetOfAnotherType, pandas 3.1.1): a string
// against a column that is not text (pandas reads numbers, booleans,
// dates, timestamps, UUIDs, which no string equals), a number or boolean
// against text, a number that is not a float32 against a FLOAT column (0.1
// is not the float32 0.1) or not the exact value of its double against a
// DECIMAL column (Decimal("0.1") is not 0.1); or nil. A number or boolean
// against another numeric or boolean column is left: its text is never
// DuckDB's text of such a value unless pandas finds it equal too (1.0 in
// a BIGINT column, true for 1, fail the audit only).
func pandasValueSet(c Check, table, col, typ string) error {
	t := strings.ToUpper(strings.TrimSpace(typ))
	if c.Kind != KindAcceptedValues || len(c.ValueTypes) != len(c.Values) || t == "" || t == "NULL" {
		return nil
	}
	text := t == "VARCHAR" || strings.HasPrefix(t, "VARCHAR(")
	for i, v := range c.Values {
		kind := c.ValueTypes[i]
		why := ""
		switch {
		case text && kind != valueString:
			why = fmt.Sprintf("pandas' isin finds no text equal to the %s %s, where the audit compares the text %q", kind, v, v)
		case !text && kind == valueString:
			why = fmt.Sprintf("pandas reads the column's values as %s values, which isin finds no string equal to, where the audit compares their text with %q", t, v)
		case kind == valueNumber && (t == "FLOAT" || t == "REAL") && !float32Exact(v):
			why = fmt.Sprintf("pandas' isin compares the column's float32 values with the double %s, which no float32 equals, where the audit compares their text", v)
		case kind == valueNumber && decimalScale.MatchString(t) && !doubleExact(v):
			why = fmt.Sprintf("pandas' isin compares the column's Decimal values with the double %s, which is not exactly %s, where the audit compares their text", v, v)
		}
		if why != "" {
			return fmt.Errorf("the value_set of Great Expectations' check %s holds the %s %s, and column %q of table %s is %s: %s; readers disagree on it (write the value as the column's type)",
				c.ID(), kind, v, col, table, t, why)
		}
	}
	return nil
}

// nestedType: DuckDB type typ is a list, an array, a struct, a map or a
// union.
func nestedType(typ string) bool {
	t := strings.ToUpper(strings.TrimSpace(typ))
	return strings.HasSuffix(t, "]") || strings.HasPrefix(t, "STRUCT") || strings.HasPrefix(t, "MAP") || strings.HasPrefix(t, "UNION")
}

// pandasNestedValues is the refusal of accepted_values check c over
// column col of table, of DuckDB type typ, a nested type: the check
// compares DuckDB's text of a value, pandas' astype(str) renders a list as
// a numpy array ([1 2] where DuckDB's is [1, 2]), a map as its pairs
// ([('k', 1)], DuckDB {k=1}) and a struct's text in quotes ({'b': 'x'},
// DuckDB {'b': x}) (TestReview39AcceptedValuesOverNestedColumnsAreRefused,
// pandas 3.1.1); one rule for the nested types, as pandasOtherText's for a
// regex. So is one over a timestamp with a zone, which pandas renders
// 2024-01-01 01:02:03+00:00 where DuckDB's text is 2024-01-01 01:02:03+00
// (and DuckDB reads a TIMESTAMP(NANOS) adjusted to UTC in microseconds,
// pandas in nanoseconds): pandas' astype(str).isin and isin found every
// row failing that the check passed
// (TestReview42AcceptedValuesOverTimestampsWithAZoneAreRefused); and one
// over a time with a zone, 04:05:06+00 to DuckDB, which pyarrow reads
// without it, 04:05:06 to pandas
// (TestReview42AcceptedValuesOverTimesPandasRendersOtherwise); and one
// over another type pandasOtherText names (a regex over which was
// refused): pandas renders a FLOAT 0.0001 as 1e-04, a BLOB as its
// characters, an INTERVAL as its 12 bytes and a DECIMAL(10,7) 0.0000001
// as 1E-7, where an accepted_values of DuckDB's text passed
// (TestReader63AcceptedValuesOverTypesPandasRendersOtherwise). Or nil.
func pandasNestedValues(c Check, table, col, typ string) error {
	if c.Kind != KindAcceptedValues {
		return nil
	}
	switch {
	case nestedType(typ):
		return fmt.Errorf("column %q of table %s is %s, whose values' text pandas renders otherwise than DuckDB's (a list as [1 2] where DuckDB's is [1, 2], a map as [('k', 1)] where it is {k=1}, a struct's text in quotes), and accepted_values compares the text: readers disagree on it (check its fields or elements, or write it as text)",
			col, table, strings.ToUpper(strings.TrimSpace(typ)))
	case zonedTime(typ):
		return fmt.Errorf("column %q of table %s is %s, whose values' text pandas renders otherwise than DuckDB's (2024-01-01 01:02:03+00:00 where DuckDB's is 2024-01-01 01:02:03+00, and the nanoseconds of a TIMESTAMP(NANOS) DuckDB reads in microseconds; a time as 04:05:06, without its zone, where DuckDB's is 04:05:06+00), and accepted_values compares the text: readers disagree on it (check it otherwise, or write it as text)",
			col, table, strings.ToUpper(strings.TrimSpace(typ)))
	case len(c.ValueTypes) == 0 && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(typ)), "TIME") && pandasOtherText(typ) != "":
		// A FLOAT, BLOB, INTERVAL or DECIMAL of scale past 6 (times by
		// their values: pandasTimestampText, pandasTimeText), under
		// values compared as text (a Great Expectations value_set's are
		// compared by their JSON types: pandasValueSet).
		return fmt.Errorf("column %q of table %s is %s, whose values' text pandas renders otherwise than DuckDB's (%s), and accepted_values compares the text: readers disagree on it (check it otherwise, or write it as text)",
			col, table, strings.ToUpper(strings.TrimSpace(typ)), pandasOtherText(typ))
	}
	return nil
}

// zonedTime: DuckDB type typ is a timestamp or a time with a zone.
func zonedTime(typ string) bool {
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", "TIMETZ", "TIME WITH TIME ZONE":
		return true
	}
	return false
}

// plainTime: DuckDB type typ is a time of day without a zone, whose text
// pandas renders as DuckDB does but for a fraction of a second
// (pandasTimeText).
func plainTime(typ string) bool {
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "TIME", "TIME_NS":
		return true
	}
	return false
}

// pandasTimeText is the refusal of an accepted_values check over TIME
// column col of table when fractions of its values have a fraction of a
// second, which pandas renders with six digits (01:02:03.500000, a
// datetime.time) where DuckDB's text is 01:02:03.5: pandas 3.1.1's
// astype(str).isin found such rows failing that the check passed
// (TestReview42AcceptedValuesOverTimesPandasRendersOtherwise). Whole
// seconds render alike.
func pandasTimeText(table, col, typ string, fractions int64) error {
	if fractions == 0 {
		return nil
	}
	return fmt.Errorf("pandas renders column %q of table %s (%s) as other text than DuckDB's, whose %d values with a fraction of a second it renders with six digits (01:02:03.500000 where DuckDB's is 01:02:03.5), and accepted_values compares the text: readers disagree on it (write the column as text, or check it otherwise)",
		col, table, strings.ToUpper(strings.TrimSpace(typ)), fractions)
}

// float32Exact: the JSON number v is an integer, or a double that is a
// float32 too.
func float32Exact(v string) bool {
	if _, ok := new(big.Int).SetString(v, 10); ok {
		return true
	}
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && float64(float32(f)) == f
}

// doubleExact: the JSON number v is an integer (Python compares an int
// with a Decimal exactly), or the double it parses as is exactly v.
func doubleExact(v string) bool {
	if _, ok := new(big.Int).SetString(v, 10); ok {
		return true
	}
	exact, ok := new(big.Rat).SetString(v)
	f, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		return false
	}
	r := new(big.Rat).SetFloat64(f)
	return r != nil && r.Cmp(exact) == 0
}

// naiveTimestamp: DuckDB type typ is a timestamp without a zone, of any
// unit.
func naiveTimestamp(typ string) bool {
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "DATETIME":
		return true
	}
	return false
}

// pandasTimestampFigures is the query of a timestamp column's figures
// for pandasTimestampText over a view (the rows meeting where): its
// non-NULL values, those DuckDB renders at another time than midnight,
// and those with a fraction.
func pandasTimestampFigures(schema, table, col, where string) string {
	v := "CAST(" + quoteIdent(col) + " AS VARCHAR)"
	q := fmt.Sprintf("SELECT count(%s), count(*) FILTER (WHERE %s NOT LIKE '%% 00:00:00'), count(*) FILTER (WHERE %s LIKE '%%.%%') FROM %s",
		quoteIdent(col), v, v, qualified(schema, table))
	if w := strings.TrimSpace(where); w != "" {
		// The rows a reader keeps before rendering them.
		q += " WHERE (\n" + w + "\n)"
	}
	return q
}

// pandasTimestampText is the refusal of a regex or accepted_values check
// (TestReview39AcceptedValuesOverTimestampsPandasRendersOtherwise) over
// timestamp column col of table (without a zone, of DuckDB type typ) when pandas
// renders its values as other text than DuckDB's: pandas renders a
// column by all its values, as 2024-01-01 when every one is a midnight
// (DuckDB: 2024-01-01 00:00:00), and with as many fraction digits as the
// finest one needs, 01:02:03.500 or .500000 (DuckDB: 01:02:03.5). A
// column of whole seconds not all midnights reads alike
// (TestRegexOverColumnsPandasRendersOtherwise). nonNull, otherTimes and
// fractions are the column's non-NULL values, those not at midnight and
// those with a fraction.
func pandasTimestampText(table, col, typ string, nonNull, otherTimes, fractions int64) error {
	switch {
	case fractions > 0:
		return fmt.Errorf("pandas renders column %q of table %s (%s) as other text than DuckDB's, whose %d values with a fraction of a second it renders with as many digits as the column's finest needs (01:02:03.500 where DuckDB's is 01:02:03.5), and the pattern is matched against the text: readers disagree on it (write the column as text, or check it otherwise)",
			col, table, strings.ToUpper(typ), fractions)
	case nonNull > 0 && otherTimes == 0:
		return fmt.Errorf("pandas renders column %q of table %s (%s) as other text than DuckDB's, whose values are all midnights, which it renders as dates (2024-01-01 where DuckDB's is 2024-01-01 00:00:00), and a regex or accepted_values check compares the text: readers disagree on it (write the column as text, or check it otherwise)",
			col, table, strings.ToUpper(typ))
	}
	return nil
}

// sparkDoubleFigures is the query of a DOUBLE column's values (of the
// rows meeting where) that Spark renders as other text than DuckDB: at or
// beyond 10^7, under 10^-3 but not 0, NaN and infinities.
func sparkDoubleFigures(schema, table, col, where string) string {
	q := quoteIdent(col)
	s := fmt.Sprintf("SELECT count(*) FILTER (WHERE isnan(%s) OR isinf(%s) OR (%s <> 0 AND (abs(%s) < 0.001 OR abs(%s) >= 10000000))) FROM %s",
		q, q, q, q, q, qualified(schema, table))
	if w := strings.TrimSpace(where); w != "" {
		s += " WHERE (\n" + w + "\n)"
	}
	return s
}

// sparkDoubleText is the refusal of a regex check over DOUBLE column col
// of table when some of its values (others) are ones Spark renders as
// other text than DuckDB: Great Expectations' Spark regex is
// column.rlike(regex), and Spark casts a double to text as Java does,
// 1.0E7, 1.0E-4, NaN and Infinity where DuckDB's are 10000000.0, 0.0001,
// nan and inf; between them both render the shortest text alike (Spark
// 4.3.0 on Java 17, 24,359 values: TestRegexOverDoublesSparkRendersOtherwise).
// pandas renders them as DuckDB does.
func sparkDoubleText(table, col string, others int64) error {
	if others == 0 {
		return nil
	}
	return fmt.Errorf("Spark renders column %q of table %s (DOUBLE) as other text than DuckDB's: %d of its values are at or beyond 10^7, under 10^-3, NaN or infinite, which Spark renders as 1.0E7, 1.0E-4, NaN and Infinity, where DuckDB's are 10000000.0, 0.0001, nan and inf, and the pattern is matched against the text: readers disagree on it (write the column as text, or check it with range)",
		col, table, others)
}

// pandasDateName: pandas.read_json converts a column of this name to
// datetimes where it can (convert_dates' default, keep_default_dates):
// ending in _at or _time, beginning with timestamp, or modified, date or
// datetime, in any case.
func pandasDateName(col string) bool {
	c := strings.ToLower(col)
	return strings.HasSuffix(c, "_at") || strings.HasSuffix(c, "_time") || strings.HasPrefix(c, "timestamp") ||
		c == "modified" || c == "date" || c == "datetime"
}

// pandasJSONMinStamp is the number pandas.read_json converts a date-like
// column's numbers to datetimes beyond (every one of them, NULLs aside):
// a year in seconds, its _MIN_STAMPS["s"].
const pandasJSONMinStamp = 31536000

// pandasJSONDates is the refusal of a regex or accepted_values check over
// column col (of DuckDB type typ) of JSON lines table, in view k, when
// pandas.read_json reads the column as datetimes by its name
// (pandasDateName), which those checks judge as other text and values:
// numbers when every one is beyond pandasJSONMinStamp (1704067200 reads
// 2024-01-01, which a regex ^[0-9]{10}$ and isin([1704067200]) do not
// find), and text, which it parses where it can (01/02/2024 reads
// 2024-01-02) (TestJSONDateNamedColumnsPandasReadsAsDatetimes); or nil.
// DuckDB's DATE and timestamps are judged as such elsewhere.
func (r *run) pandasJSONDates(ctx context.Context, k viewKey, table, col, typ string) error {
	why := ""
	switch {
	case typ == "VARCHAR":
		why = "parses its text as dates where it can (01/02/2024 reads 2024-01-02)"
	case integerType(typ) || typ == "DOUBLE" || typ == "FLOAT":
		q := quoteIdent(col)
		s := fmt.Sprintf("SELECT count(%s), count(*) FILTER (WHERE %s > %d) FROM %s", q, q, pandasJSONMinStamp, qualified(k.schema, table))
		vals, err := r.memoRow(ctx, s, s, 2, k)
		if err != nil {
			return err
		}
		if n := asInt(vals[0]); n == 0 || asInt(vals[1]) < n {
			return nil
		}
		why = fmt.Sprintf("reads its numbers, every one beyond %d, as times since 1970 (1704067200 reads 2024-01-01)", pandasJSONMinStamp)
	default:
		return nil
	}
	return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s (%s) as datetimes by its name (convert_dates): it %s, which the check judges as other text and values than DuckDB's (a range or stat compares them with its numbers, which pandas refuses): readers disagree on it (name the column otherwise, or write it as a date)",
		col, table, typ, why)
}

// decimalScale is the scale of a DuckDB DECIMAL(p,s) type.
var decimalScale = regexp.MustCompile(`^DECIMAL\(\s*\d+\s*,\s*(\d+)\s*\)$`)

// pandasOtherText is how pandas renders values of DuckDB type typ as
// text (astype(str), after pyarrow's to_pandas) otherwise than DuckDB's
// CAST to VARCHAR, whatever the values' NULLs, or "" for a type both
// render alike (text, integers, DATE, DOUBLE, UUID, DECIMAL of scale at
// most 6). Each was read so by pandas 3.1.1 from Parquet
// (TestRegexOverColumnsPandasRendersOtherwise).
func pandasOtherText(typ string) string {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch {
	case naiveTimestamp(t):
		return "" // by its values: pandasTimestampText
	case strings.HasPrefix(t, "TIMESTAMP"):
		return "a timestamp with a zone as 2024-01-01 01:02:03+00:00, where DuckDB's is 2024-01-01 01:02:03+00"
	case strings.HasPrefix(t, "TIME"):
		return "a time with a fraction as 01:02:03.500000, where DuckDB's is 01:02:03.5"
	case t == "FLOAT" || t == "REAL" || t == "FLOAT4":
		return "a float32 as 1e+15 and 1e-04, where DuckDB's is 1000000000000000.0 and 0.0001"
	case t == "BLOB" || t == "BYTEA" || t == "VARBINARY":
		return "bytes as the characters they are, where DuckDB escapes them (\\x00)"
	case t == "INTERVAL":
		return "an interval as its 12 bytes, where DuckDB's is 1 day"
	case strings.HasSuffix(t, "]") || strings.HasPrefix(t, "STRUCT") || strings.HasPrefix(t, "MAP") || strings.HasPrefix(t, "UNION"):
		return "a list as [1 2], a struct's text in quotes ('x') and a map as [('k', 1)], where DuckDB's are [1, 2], x and {k=1}"
	}
	if m := decimalScale.FindStringSubmatch(t); m != nil {
		if scale, err := strconv.Atoi(m[1]); err != nil || scale <= 6 {
			return ""
		}
		return "a decimal under 10^-6 as 1E-7 and zero as 0E-7, where DuckDB's are 0.0000001 and 0.0000000"
	}
	return ""
}

// int64Wide: DuckDB type typ is one pandas reads as int64 or uint64, so
// as float64 beside a NULL (BIGINT, UBIGINT; HUGEINT, which pyarrow reads
// from CSV and JSON as int64 or double).
func int64Wide(typ string) bool {
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "BIGINT", "UBIGINT", "HUGEINT":
		return true
	}
	return false
}
