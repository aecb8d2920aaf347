package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"strings"
)

// An INT96 time holds nanoseconds (8 bytes of the day's, 4 of its Julian
// day), which pyarrow and pandas read, and DuckDB 1.5 and Spark truncate
// to microseconds. pandas renders every value of a column with as many
// fraction digits as its finest needs, so a column of pyarrow's INT96
// (use_deprecated_int96_timestamps) holding 01:02:03.000000500 and
// 04:05:06 rendered 01:02:03.000000500 and 04:05:06.000000000, where
// DuckDB's text was 01:02:03 and 04:05:06: a regex of whole seconds and an
// accepted_values of their text passed where pandas 3.1.1 found both rows
// failing (TestReview36Int96NanosecondsUnderTextChecksAreRefused).
// pandasTimestampText, which judges DuckDB's values, cannot see the
// nanoseconds, so a top-level INT96 column of a Parquet table that such a
// check reads is read in Go (chunkValues) and its file refused when a time
// has a fraction of a microsecond, or its pages cannot be read. Checks
// that do not compare text (unique counts DuckDB's truncated times, so
// more duplicates) are left; Delta readers take the log's microseconds.

// int96Nanos names the first file of files (a Parquet table's) whose
// INT96 column a regex or accepted_values check of table reads holds a
// time of a fraction of a microsecond. A file that passed is kept in the
// memo by its identity.
func (r *run) int96Nanos(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string, checks []Check, table string) error {
	text := textCheckedColumns(checks, table)
	if len(text) == 0 {
		return nil
	}
	for _, f := range files {
		var read []string
		for _, c := range cols[f] {
			if c.int96 && text[strings.ToLower(c.name)] {
				read = append(read, c.name)
			}
		}
		if len(read) == 0 {
			continue
		}
		var key [32]byte
		keyed := false
		if id := ids[f]; id != "" && r.e.memo != nil {
			key, keyed = memoKey("int96nanos\x00"+strings.Join(read, "\x00"), id), true
			if _, ok := r.e.memo.get(key); ok {
				continue
			}
		}
		if err := r.ready(ctx); err != nil {
			return err
		}
		ft, err := readFooter(f)
		if err != nil {
			continue // readerIndexes refuses a footer the Go reader gives up on
		}
		if err := int96FileNanos(ctx, f, ft.chunks, read); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("file %s: %w", objPath[f], err)
		}
		if keyed {
			r.e.memo.put(key, true, 48)
		}
	}
	return nil
}

// int96FileNanos refuses the first time of a fraction of a microsecond in
// the chunks of the Parquet file at path of the top-level INT96 columns
// named read, or such a chunk whose pages cannot be read. The nanoseconds
// are a signed number, as every reader reads them: -616 is read by DuckDB
// and Spark as 0 microseconds (divided toward zero), by pandas as 616
// nanoseconds before the day; read unsigned (18446744073709551000) they
// looked whole (TestReview52Int96NegativeNanosecondsAreRefused). Nanoseconds
// of a day or more are added to the day by every reader alike
// (TestReview52Int96NanosecondsBeyondADayReadAlike).
func int96FileNanos(ctx context.Context, path string, chunks []chunkMeta, read []string) error {
	var nanos int64
	c, err := int96Values(ctx, path, chunks, read, false, func(n int64, _ uint32) bool {
		if n%1000 != 0 {
			nanos = n
			return false
		}
		return true
	})
	switch {
	case nanos != 0:
		return fmt.Errorf("row group %d, column %q holds an INT96 time of %d nanoseconds into its day, not a whole number of microseconds, which pyarrow and pandas read (and pandas renders every time of the column with nine fraction digits), and DuckDB and Spark truncate to microseconds: readers disagree on its text, which a regex or accepted_values check compares (write the column as TIMESTAMP_MICROS)",
			c.rowGroup, c.path, nanos)
	case err != nil:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("row group %d, column %q is of INT96 times, whose nanoseconds pyarrow and pandas read and DuckDB and Spark truncate, and its pages cannot be read to check that none has a fraction of a microsecond (%v): refused rather than read otherwise than pandas may", c.rowGroup, c.path, err)
	}
	return nil
}

// int96Values calls fn with each value (its nanoseconds, signed, and its
// Julian day) of the chunks of the Parquet file at path of the top-level
// INT96 columns named read (nested: of the INT96 leaves below the
// top-level columns named read, at any depth), until fn returns false; it
// returns the chunk it stopped in, or whose pages could not be read (with
// the error).
func int96Values(ctx context.Context, path string, chunks []chunkMeta, read []string, nested bool, fn func(nanos int64, day uint32) bool) (chunkMeta, error) {
	f := &chunkFile{path: path}
	defer f.close()
	for _, c := range chunks {
		if c.physical != ptInt96 || len(c.parts) == 0 || (len(c.parts) > 1) != nested || !containsFold(read, c.parts[0]) {
			continue
		}
		if err := f.open(); err != nil {
			return c, err
		}
		c.ctx = ctx
		stopped := false
		err := chunkValues(f.file, f.size, c, 12, &f.zd, func(v []byte) error {
			if !fn(int64(binary.LittleEndian.Uint64(v)), binary.LittleEndian.Uint32(v[8:])) {
				stopped = true
				return errBeyond
			}
			return nil
		})
		if stopped {
			return c, nil
		}
		if err != nil {
			return c, err
		}
	}
	return chunkMeta{}, nil
}

// int96Within says whether the time an INT96 value holds (its Julian day
// and nanoseconds, in full) is within pandas' nanosecond range, the 64
// bits of nanoseconds from 1970 (2^63 - 1 at most, and more than -2^63,
// which is NaT), where every reader's 64-bit reading is that time.
func int96Within(day uint32, nanos int64) bool {
	const perDay = int64(86400e9)
	const days = 106751                  // whole days in 2^63 nanoseconds
	const rest = 1<<63 - 1 - days*perDay // the nanoseconds past them
	d := int64(day) - julianUnixEpoch + nanos/perDay
	n := nanos % perDay
	switch {
	case d > days+1 || d < -days-1:
		return false
	case d >= days:
		return (d-days)*perDay+n <= rest
	case d <= -days:
		return (d+days)*perDay+n >= -rest
	}
	return true
}

// int96Micros is an INT96 claim (a row group's or a page's min or max)
// in microseconds since 1970, as DuckDB reads the values: its Julian day
// and its nanoseconds divided toward zero. A time outside int96Within,
// which readers compute wrapped, is an error.
func int96Micros(b []byte) (*big.Int, error) {
	if len(b) != 12 {
		return nil, fmt.Errorf("%d bytes, want 12", len(b))
	}
	nanos, day := int64(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint32(b[8:])
	if !int96Within(day, nanos) {
		return nil, fmt.Errorf("an INT96 time of Julian day %d and %d nanoseconds, outside 1677-09-21 to 2262-04-11, which readers compute in 64 bits and wrap each otherwise", day, nanos)
	}
	// Within that range the sum fits: DuckDB's days times a day's
	// microseconds, plus the nanoseconds divided toward zero.
	return big.NewInt((int64(day)-julianUnixEpoch)*86400e6 + nanos/1000), nil
}

// julianUnixEpoch is 1970-01-01's Julian day.
const julianUnixEpoch = 2440588

// int96Days names file f (a Parquet table's, or a Delta table's) when a
// value of its top-level INT96 columns names holds a time outside pandas'
// nanosecond range (int96Within), which readers compute in 64 bits and
// wrap each otherwise: Julian day 2350995351 with 0 nanoseconds was
// 2000-01-01 07:39:54.932224 to DuckDB 1.5.6 and pyarrow 26.0.1 (pandas),
// -66141-12-07 00:16:25.964544 to PySpark 4.3.0 and deltalake 1.6.6, and
// int96Range, which judges DuckDB's reading, passed it
// (TestReview52Int96JulianDayThatWrapsIsRefused). Read in Go, as
// int96Nanos: a file whose pages the Go reader cannot read is left to
// int96Range's scan; one that passed is kept in the memo by its identity.
//
// nested: the INT96 leaves below the top-level columns names (a struct's
// field, a list's element, a map's key or value), which no scan reads:
// pyarrow 26.0.1 and pandas 3.1.1 read a struct's 2500-01-01 as
// 1915-06-14 00:25:26.290448384 and a list's 1500-06-01 as 2084-12-18,
// DuckDB 1.5.6 and PySpark 4.3.0 as written, and a custom SQL check
// finding no time before 2000 passed
// (TestReview55NestedInt96OutsidePandasRangeIsRefused). A leaf whose pages
// the Go reader cannot read refuses the file.
func (r *run) int96Days(ctx context.Context, f string, names []string, nested bool, objPath, ids map[string]string) error {
	var key [32]byte
	keyed := false
	if id := ids[f]; id != "" && r.e.memo != nil {
		tag := "int96days\x00"
		if nested {
			tag = "int96nested\x00"
		}
		key, keyed = memoKey(tag+strings.Join(names, "\x00"), id), true
		if _, ok := r.e.memo.get(key); ok {
			return nil
		}
	}
	if err := r.ready(ctx); err != nil {
		return err
	}
	ft, err := readFooter(f)
	if err != nil {
		return nil // readerIndexes refuses a footer the Go reader gives up on
	}
	var day uint32
	var nanos int64
	out := false
	c, err := int96Values(ctx, f, ft.chunks, names, nested, func(n int64, d uint32) bool {
		if !int96Within(d, n) {
			day, nanos, out = d, n, true
			return false
		}
		return true
	})
	switch {
	case out:
		seen := "Julian day 2350995351 read 2000-01-01 to DuckDB and pandas, -66141-12-07 to Spark and delta-rs"
		if nested {
			seen = "inside a struct, a list or a map, 2500-01-01 read 1915-06-14 to pyarrow and pandas, as written to DuckDB and Spark"
		}
		return fmt.Errorf("file %s: row group %d, column %q holds an INT96 time of Julian day %d and %d nanoseconds, outside 1677-09-21 to 2262-04-11, which readers compute in 64 bits and wrap each otherwise (%s): readers disagree on it (write the column as TIMESTAMP_MICROS)",
			objPath[f], c.rowGroup, c.path, day, nanos, seen)
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && nested:
		return fmt.Errorf("file %s: row group %d, column %q is of INT96 times inside column %q, which pyarrow and pandas read in nanoseconds, wrapping around those before 1677-09-21 or after 2262-04-11, and DuckDB and Spark as written, and its pages cannot be read to look for such times (%v): readers may disagree on them (write the column as TIMESTAMP_MICROS)",
			objPath[f], c.rowGroup, c.path, c.parts[0], err)
	case err != nil:
		return nil // int96Range's scan read the file as DuckDB does
	}
	if keyed {
		r.e.memo.put(key, true, 48)
	}
	return nil
}

// containsFold: names holds name in any case.
func containsFold(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// textCheckedColumns is the columns (lower-case) of table that a regex or
// accepted_values check of checks reads: checks that compare the column's
// text.
func textCheckedColumns(checks []Check, table string) map[string]bool {
	text := map[string]bool{}
	for _, c := range checks {
		if strings.EqualFold(c.Table, table) && (c.Kind == KindRegex || c.Kind == KindAcceptedValues) {
			for _, col := range c.columns() {
				text[strings.ToLower(col)] = true
			}
		}
	}
	return text
}

// bindsAlone says whether DuckDB binds a read of file f in format on its
// own (readable), with the error of a read that failed for the run's sake
// rather than the file's: ctx ended, or the machine failed (out of memory:
// infrastructure). A guard whose scan failed asks it, and must not take a
// DESCRIBE that ran out of memory for a file DuckDB cannot read, passing
// the file to a view that reads it once memory is free.
func (r *run) bindsAlone(ctx context.Context, format, f string) (bool, error) {
	return r.binds(ctx, format, []string{f})
}

// binds is bindsAlone for the read of files together.
func (r *run) binds(ctx context.Context, format string, files []string) (bool, error) {
	if format == FormatDelta {
		format = FormatParquet
	}
	_, err := r.pool().ExecContext(ctx, "DESCRIBE SELECT * FROM "+readSQL(format, files))
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	case infrastructure(err):
		return false, err
	}
	return false, nil
}
