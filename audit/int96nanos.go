package audit

import (
	"context"
	"encoding/binary"
	"fmt"
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
// named read, or such a chunk whose pages cannot be read.
func int96FileNanos(ctx context.Context, path string, chunks []chunkMeta, read []string) error {
	f := &chunkFile{path: path}
	defer f.close()
	for _, c := range chunks {
		if c.physical != ptInt96 || len(c.parts) != 1 || !containsFold(read, c.parts[0]) {
			continue
		}
		if err := f.open(); err != nil {
			return err
		}
		c.ctx = ctx
		var nanos uint64
		err := chunkValues(f.file, f.size, c, 12, &f.zd, func(v []byte) error {
			if n := binary.LittleEndian.Uint64(v); n%1000 != 0 {
				nanos = n
				return errBeyond
			}
			return nil
		})
		switch {
		case nanos != 0:
			return fmt.Errorf("row group %d, column %q holds an INT96 time of %d nanoseconds past a microsecond, which pyarrow and pandas read (and pandas renders every time of the column with nine fraction digits), and DuckDB and Spark truncate to microseconds: readers disagree on its text, which a regex or accepted_values check compares (write the column as TIMESTAMP_MICROS)",
				c.rowGroup, c.path, nanos%1000)
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("row group %d, column %q is of INT96 times, whose nanoseconds pyarrow and pandas read and DuckDB and Spark truncate, and its pages cannot be read to check that none has a fraction of a microsecond (%v): refused rather than read otherwise than pandas may", c.rowGroup, c.path, err)
		}
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
