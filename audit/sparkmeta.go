package audit

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Spark 3 and 4 read a Parquet file's dates, its times adjusted to UTC
// (TIMESTAMP_MILLIS and _MICROS) and its INT96 times by the file's
// key-value metadata (DataSourceUtils.datetimeRebaseSpec and
// int96RebaseSpec): with org.apache.spark.version below 3.0.0 (INT96:
// 3.1.0), compared as text, or with it and org.apache.spark.legacyDateTime
// (INT96: org.apache.spark.legacyINT96), Spark takes the values as
// written in the hybrid Julian calendar and rebases them
// (RebaseDateTime.rebaseJulianToGregorianDays and _Micros). A date before
// 1582-10-15 then reads as another day (1500-01-01 as 1499-12-23), and a
// time before 1900-01-01 as another time in the JVM's zone or the one the
// file's org.apache.spark.timeZone names (Spark's rebase tables end there,
// over every zone), while DuckDB, pyarrow, pandas and delta-rs read them
// as written. Without the version key Spark follows its configuration
// (Spark 4: read as written; Spark 3: fail on such values), and times not
// adjusted to UTC read as TIMESTAMP_NTZ, which Spark never rebases.
// lakewap reads the keys from the footer (footer.go: compactReader.keyValues)
// and refuses a file whose rebased columns hold such a value
// (TestSparkLegacyCalendarIsRefused).

const (
	sparkVersionKey        = "org.apache.spark.version"
	sparkLegacyDateTimeKey = "org.apache.spark.legacyDateTime"
	sparkLegacyINT96Key    = "org.apache.spark.legacyINT96"
)

// sparkKeys are the calendar keys of a file's key-value metadata. Nothing
// of a value is kept but its comparison with the versions Spark compares
// it with, whatever its size or the number of keys. A key seen twice
// counts by each of its values: parquet-java keeps the last, and a file
// that says both is refused rather than read by one of them. A key
// without a value reads as absent to Spark (parquet-java maps it to null).
type sparkKeys struct {
	version      bool // org.apache.spark.version, with a value
	before300    bool // a version value before "3.0.0"
	before310    bool // a version value before "3.1.0"
	legacyDates  bool // org.apache.spark.legacyDateTime, with a value
	legacyInt96s bool // org.apache.spark.legacyINT96, with a value
}

// note takes one key and value of the metadata (value nil: none).
func (k *sparkKeys) note(key, value []byte) {
	if value == nil {
		return
	}
	switch string(key) {
	case sparkVersionKey:
		// Java compares the UTF-16 text, Go the UTF-8 bytes: against
		// ASCII text both order alike (anything not ASCII, or not
		// UTF-8 and so read as U+FFFD, is above it).
		k.version = true
		k.before300 = k.before300 || bytes.Compare(value, []byte("3.0.0")) < 0
		k.before310 = k.before310 || bytes.Compare(value, []byte("3.1.0")) < 0
	case sparkLegacyDateTimeKey:
		k.legacyDates = true
	case sparkLegacyINT96Key:
		k.legacyInt96s = true
	}
}

// dates: Spark rebases the file's dates and times adjusted to UTC.
func (k sparkKeys) dates() bool { return k.version && (k.before300 || k.legacyDates) }

// int96: Spark rebases the file's INT96 times.
func (k sparkKeys) int96() bool { return k.version && (k.before310 || k.legacyInt96s) }

// sparkKind is what Spark rebases a leaf as.
type sparkKind uint8

const (
	sparkNone  sparkKind = iota
	sparkDate            // INT32 DATE
	sparkTime            // INT64 TIMESTAMP adjusted to UTC, millis or micros
	sparkInt96           // INT96
)

// sparkKindOf is how Spark rebases a leaf of types nt under keys k. A
// logical type decides over the converted type, as parquet-java has it
// (pyarrow writes TIMESTAMP_MICROS beside a timestamp not adjusted to
// UTC); TIMESTAMP NANOS Spark does not read.
func sparkKindOf(nt nodeTypes, k sparkKeys) sparkKind {
	switch {
	case nt.physical == 3 && k.int96():
		return sparkInt96
	case !k.dates():
		return sparkNone
	case nt.physical == 1 && (nt.logical == 6 || nt.logical == 0 && nt.converted == 6):
		return sparkDate
	case nt.physical == 2 && nt.logical == 8 && nt.utc && (nt.unit == 1 || nt.unit == 2):
		return sparkTime
	case nt.physical == 2 && nt.logical == 0 && (nt.converted == 9 || nt.converted == 10):
		return sparkTime
	}
	return sparkNone
}

// before is the SQL condition on a value x of kind that Spark reads
// otherwise than DuckDB: a date before the Gregorian calendar's first
// day, a time before the last switch of Spark's rebase tables.
func (kind sparkKind) before(x string) string {
	switch kind {
	case sparkDate:
		return x + " < DATE '1582-10-15'"
	case sparkInt96:
		return x + " < TIMESTAMP '1900-01-01 00:00:00'" // DuckDB reads INT96 as TIMESTAMP
	}
	return x + " < TIMESTAMPTZ '1900-01-01 00:00:00+00'"
}

func (kind sparkKind) String() string {
	switch kind {
	case sparkDate:
		return "dates before 1582-10-15"
	case sparkInt96:
		return "INT96 times before 1900-01-01"
	}
	return "times before 1900-01-01"
}

// sparkStep is one step from a column's value (as DuckDB reads it) down to
// a leaf: a struct's field, a list's elements, a map's keys or values.
type sparkStep struct {
	op    byte // 'f' field, 'l' list, 'k' map keys, 'v' map values
	field string
}

// sparkLeaf is a leaf under a top-level column that Spark rebases.
type sparkLeaf struct {
	kind  sparkKind
	steps []sparkStep
	path  string // the leaf's Parquet path, dotted, for messages
}

// cond is the SQL condition on the column col that one of the leaf's
// values reads otherwise to Spark (NULL, as false, for none).
func (l sparkLeaf) cond(col string) string {
	var walk func(x string, steps []sparkStep) string
	walk = func(x string, steps []sparkStep) string {
		if len(steps) == 0 {
			return l.kind.before(x)
		}
		s := steps[0]
		if s.op == 'f' {
			return walk("struct_extract("+x+", "+quoteLiteral(s.field)+")", steps[1:])
		}
		list := x
		switch s.op {
		case 'k':
			list = "map_keys(" + x + ")"
		case 'v':
			list = "map_values(" + x + ")"
		}
		v := fmt.Sprintf("lakewap_y%d", len(steps))
		return fmt.Sprintf("len(list_filter(%s, lambda %s: %s)) > 0", list, v, walk(v, steps[1:]))
	}
	return walk(quoteIdent(col), l.steps)
}

// sparkLeaves are the leaves of a schema tree (depth first, the root
// first; types of each node) that Spark rebases under keys, by top-level
// column, each with its steps from the column's value as DuckDB's Parquet
// reader builds it: a repeated node is a list of what it is otherwise; a
// group of one child that is a LIST or a MAP, or repeated, is that child;
// a MAP_KEY_VALUE group (or a group after a MAP of one child) is a map of
// its two children; any other group is a struct.
func sparkLeaves(nodes []schemaNode, types []nodeTypes, k sparkKeys) map[string][]sparkLeaf {
	if !k.dates() && !k.int96() || len(nodes) == 0 || len(types) != len(nodes) {
		return nil
	}
	out := map[string][]sparkLeaf{}
	i := 1
	var walk func(top string, steps []sparkStep, path string) // the subtree at i
	walk = func(top string, steps []sparkStep, path string) {
		n, nt := nodes[i], types[i]
		if path != "" {
			path += "."
		}
		path += n.name
		repeated := nt.repetition == 2
		if n.children == 0 {
			i++
			if repeated {
				steps = append(slices.Clip(steps), sparkStep{op: 'l'})
			}
			if kind := sparkKindOf(nt, k); kind != sparkNone {
				out[top] = append(out[top], sparkLeaf{kind: kind, steps: steps, path: path})
			}
			return
		}
		mapKV := nt.converted == 2 || i > 0 && types[i-1].converted == 1 && nodes[i-1].children == 1
		list, isMap := nt.converted == 3, nt.converted == 1
		i++
		if repeated && !mapKV {
			steps = append(slices.Clip(steps), sparkStep{op: 'l'})
		}
		// Each child's steps are its own (Clip): siblings' appends to one
		// array would overwrite each other's last step.
		for c := int64(0); c < n.children && i < len(nodes); c++ {
			child := steps
			switch {
			case mapKV && c == 0:
				child = append(slices.Clip(steps), sparkStep{op: 'k'})
			case mapKV:
				child = append(slices.Clip(steps), sparkStep{op: 'v'})
			case n.children > 1 || !list && !isMap && !repeated:
				child = append(slices.Clip(steps), sparkStep{op: 'f', field: nodes[i].name})
			}
			walk(top, child, path)
		}
	}
	for c := int64(0); c < nodes[0].children && i < len(nodes); c++ {
		walk(nodes[i].name, nil, "")
	}
	return out
}

// markSpark notes on cols (a file's, by its footer ft) the leaves Spark
// rebases.
func markSpark(cols []fileColumn, ft parquetFooter) {
	leaves := sparkLeaves(ft.nodes, ft.types, ft.spark)
	for i := range cols {
		cols[i].rebased = leaves[cols[i].name]
	}
}

// duckdbNodeTypes are a schema element's types as parquet_schema renders
// them (what sparkKindOf and sparkLeaves look at).
func duckdbNodeTypes(typ, rep, conv, logical string) nodeTypes {
	nt := nodeTypes{physical: -1, repetition: -1, converted: -1}
	for i, p := range []string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"} {
		if typ == p {
			nt.physical = int32(i)
		}
	}
	for i, p := range []string{"REQUIRED", "OPTIONAL", "REPEATED"} {
		if rep == p {
			nt.repetition = int32(i)
		}
	}
	for c, p := range map[int32]string{1: "MAP", 2: "MAP_KEY_VALUE", 3: "LIST", 6: "DATE", 9: "TIMESTAMP_MILLIS", 10: "TIMESTAMP_MICROS"} {
		if conv == p {
			nt.converted = c
		}
	}
	if conv != "" && nt.converted == -1 {
		nt.converted = 99 // another converted type
	}
	switch {
	case logical == "":
	case strings.HasPrefix(logical, "DateType("):
		nt.logical = 6
	case strings.HasPrefix(logical, "TimestampType("):
		nt.logical = 8
		nt.utc = strings.Contains(logical, "isAdjustedToUTC=1")
		switch {
		case strings.Contains(logical, "MILLIS=MilliSeconds()"):
			nt.unit = 1
		case strings.Contains(logical, "MICROS=MicroSeconds()"):
			nt.unit = 2
		}
	case strings.HasPrefix(logical, "Float16Type("):
		nt.logical = 15 // markHalf
	default:
		nt.logical = 99 // another logical type
	}
	return nt
}

// sparkRebase names the first file of a Parquet (or Delta) table with a
// column whose values Spark rebases (markSpark) holding one Spark reads
// otherwise: one scan of such a file's rebased columns; a file that
// passed is kept in the memo by its identity.
func (r *run) sparkRebase(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string) error {
	for _, f := range files {
		var marked []fileColumn
		var conds []string
		for _, c := range cols[f] {
			if len(c.rebased) == 0 {
				continue
			}
			var or []string
			for _, l := range c.rebased {
				or = append(or, l.cond(c.name))
			}
			marked = append(marked, c)
			conds = append(conds, "count(*) FILTER (WHERE "+strings.Join(or, " OR ")+")")
		}
		if len(conds) == 0 {
			continue
		}
		err := r.guardScan(ctx, "spark-rebase", f, ids, conds, func(err error) error {
			return fmt.Errorf("file %s has Spark's legacy calendar metadata and column %q holds %s, which lakewap could not look for (%v): readers may disagree on them (write the file without Spark 2's metadata, or in Spark 3's CORRECTED rebase mode)",
				objPath[f], marked[0].name, marked[0].rebased[0].kind, err)
		}, func(i int, n int64) error {
			kinds, why := sparkKinds(marked[i].rebased)
			return fmt.Errorf("file %s has %d rows whose column %q holds %s (at %s), which Spark takes as written in the Julian calendar, by the file's key-value metadata (%s), and reads as other values, where DuckDB, pyarrow and pandas read them as written: readers disagree on them (write the file without Spark 2's metadata, or in Spark 3's CORRECTED rebase mode)",
				objPath[f], n, marked[i].name, kinds, sparkPaths(marked[i].rebased), why)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sparkKinds names the kinds of leaves, each once, and the metadata by
// which Spark rebases them.
func sparkKinds(leaves []sparkLeaf) (kinds, why string) {
	var out, whys []string
	seen := map[sparkKind]bool{}
	for _, l := range leaves {
		if seen[l.kind] {
			continue
		}
		seen[l.kind] = true
		out = append(out, l.kind.String())
		w := sparkVersionKey + " before 3.0.0, or it and " + sparkLegacyDateTimeKey
		if l.kind == sparkInt96 {
			w = sparkVersionKey + " before 3.1.0, or it and " + sparkLegacyINT96Key
		}
		if !slices.Contains(whys, w) {
			whys = append(whys, w)
		}
	}
	return strings.Join(out, " or "), strings.Join(whys, "; ")
}

// sparkPaths names up to four leaves' paths.
func sparkPaths(leaves []sparkLeaf) string {
	var out []string
	for i, l := range leaves {
		if i == 4 {
			out = append(out, fmt.Sprintf("and %d more", len(leaves)-i))
			break
		}
		out = append(out, l.path)
	}
	return strings.Join(out, ", ")
}
