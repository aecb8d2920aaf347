package audit

import (
	"context"
	"fmt"
	"strings"
)

// DuckDB writes its DATE and TIMESTAMP infinity and -infinity to Parquet
// as the extreme integers (DATE ±(2^31-1) days, TIMESTAMP_MICROS
// ±(2^63-1)), and reads them back, from any writer's file, as infinity and
// -infinity. pyarrow 26.0.1 and pandas 3.1.1 read such a timestamp as the
// time it is, 294247-01-10 04:00:54.775807 (rendering every time of the
// column with six fraction digits), and fail on such a date (ValueError:
// year 5881580 is out of range); PySpark 4.3.0 reads +294247-01-10
// 04:00:54.775807 and +5881580-07-11. A year past 9999 is 10000-01-01 to
// DuckDB and pandas and +10000-01-01 to Spark. A regex or accepted_values
// check compares DuckDB's text, infinity, which the others do not read
// (TestReview39ExtremeTimesUnderTextChecksAreRefused); the other checks
// judge them alike (NULLs, duplicates; a freshness of infinity fails in
// every reading, pandas' 294247 being as far in the future). So a Parquet
// file whose top-level DATE or TIMESTAMP column such a check reads is
// scanned once (memoized by the file's identity) and refused when a value
// is infinite or of a year outside 1 to 9999. Years within, 1500 or 3000
// (outside pandas' old datetime64[ns] range, which pandas 3 no longer
// coerces to), read alike. INT96 times are int96Range's and int96Nanos'.

// markTemporal notes on cols (a file's, schemaColumns of nodes) its
// top-level leaves of the DATE or TIMESTAMP logical or converted type.
func markTemporal(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		t := types[i]
		cols[k].temporal = nodes[i].children == 0 && (t.physical == ptInt32 || t.physical == ptInt64) &&
			(t.logical == ltDate || t.logical == ltTimestamp || t.converted == cvDate || t.converted == cvTimestampMillis || t.converted == cvTimestampMicros)
	}
}

// extremeTimes names the first file of files (a Parquet or Delta
// table's) with a DATE or TIMESTAMP column (markTemporal) that a regex or
// accepted_values check of table reads holding an infinity or a year
// outside 1 to 9999. A file that passed is kept in the memo by its
// identity and the columns looked at.
func (r *run) extremeTimes(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string, checks []Check, table string) error {
	text := textCheckedColumns(checks, table)
	if len(text) == 0 {
		return nil
	}
	for _, f := range files {
		var names, conds []string
		for _, c := range cols[f] {
			if c.temporal && text[strings.ToLower(c.name)] {
				// DuckDB reads a DATE as DATE, a timestamp of any unit
				// or zone as one of the TIMESTAMP types: compared as a
				// timestamp without a zone (UTC), which casting neither
				// fails nor moves past a year's bound.
				v := "CAST(" + quoteIdent(c.name) + " AS TIMESTAMP)"
				names = append(names, c.name)
				conds = append(conds, fmt.Sprintf("count(*) FILTER (WHERE NOT isfinite(%s) OR %s < TIMESTAMP '0001-01-01' OR %s >= TIMESTAMP '10000-01-01')", v, v, v))
			}
		}
		if len(conds) == 0 {
			continue
		}
		err := r.guardScan(ctx, "extreme-times\x00"+strings.Join(names, "\x00"), f, ids, conds, func(err error) error {
			return fmt.Errorf("file %s: column %q is of dates or times, whose infinities and years beyond 9999 DuckDB renders otherwise than pandas and Spark, and lakewap could not look for them (%v): readers may disagree on its text, which a regex or accepted_values check compares",
				objPath[f], names[0], err)
		}, func(i int, n int64) error {
			return fmt.Errorf("file %s: column %q holds %d dates or times that are infinite or of a year outside 1 to 9999, which DuckDB reads as infinity, -infinity or 10000-01-01, pandas as the times they are (294247-01-10 04:00:54.775807) or fails on (a date past 9999), and Spark renders as +294247-01-10 04:00:54.775807 and +10000-01-01: readers disagree on their text, which a regex or accepted_values check compares (write them as NULL, or within years 1 to 9999)",
				objPath[f], names[i], n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
