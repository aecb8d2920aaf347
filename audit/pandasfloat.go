package audit

import (
	"fmt"
	"math/big"
	"strings"
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
	if nulls <= 0 || !integerType(typ) {
		return nil
	}
	v := r.beyond()
	if v == nil {
		return nil
	}
	return fmt.Errorf("pandas reads column %q of table %s (%s) as float64 because it holds NULLs (%d of %d rows), and its values reach %s, beyond ±2^53, where float64 does not hold every integer: ids 1 apart read as one, so a pandas reader can find duplicates this check does not count: readers disagree on it (write the column without NULLs, or ids within ±2^53)",
		col, table, strings.ToUpper(typ), nulls, rows, v)
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
	if !integerType(typ) || r.lo == nil || (r.lo.Cmp(int64Min) >= 0 && r.hi.Cmp(int64Max) <= 0) {
		return nil
	}
	far := r.hi
	if r.lo.Cmp(int64Min) < 0 {
		far = r.lo
	}
	return fmt.Errorf("pyarrow reads column %q of JSON lines table %s (%s) as double because its values reach %s, beyond the int64 range, where double does not hold every integer: ids 1 apart read as one, so a pyarrow reader can find duplicates this check does not count: readers disagree on it (write ids within the int64 range, or as strings)",
		col, table, strings.ToUpper(typ), far)
}
