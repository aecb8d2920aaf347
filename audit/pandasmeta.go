package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// A Parquet file's key-value metadata "pandas" is read by pandas.read_parquet
// (pyarrow's to_pandas) and by no other reader of main: it names each
// column (the field "other" read as pandas' column "id"), restores a pandas
// dtype by its numpy_type (Float64 over a BIGINT field renders 1 as 1.0,
// string makes numbers text), and its datetimetz pandas_type moves a
// timestamp to a zone. Its writer controls it, so a check passed on
// DuckDB's reading of a column pandas reads otherwise
// (TestPandasMetadataOfAParquetFileIsReadAsPandasReadsIt, pandas 3.1.1).
// pandasMetadata names the first such column of a file.

// pandasColumnMeta is one entry of the metadata's "columns", its members
// as pyarrow reads them (exact keys: Python's json).
type pandasColumnMeta struct {
	name, fieldName, pandasType, numpyType string
	nameIsText                             bool
	timezone                               bool // metadata.timezone is set
}

// plainNumpyType: pandas takes numpy_type n as a NumPy dtype, which
// to_pandas does not apply (the field's type decides): int64 over a string
// field reads text. Names pandas resolves to its own extension dtypes
// (Int64, Float64, boolean, string, str, datetime64[ns, UTC], period[D],
// ...) are applied.
var plainNumpyType = regexp.MustCompile(`^(bool|object|u?int(8|16|32|64)|float(16|32|64)|complex(64|128)|datetime64(\[[a-z]+\])?|timedelta64(\[[a-z]+\])?|bytes|category)$`)

// pandasKind is what a top-level field of a Parquet file is to pyarrow:
// int, float, bool, string, timestamp (naive), timestamptz (adjusted to
// UTC), or other.
func pandasKind(nt nodeTypes, group bool) string {
	switch {
	case group:
		return "other"
	case nt.physical == 0:
		return "bool"
	case nt.physical == 3:
		return "timestamp" // INT96: naive to pyarrow
	case nt.physical == 4 || nt.physical == 5:
		return "float"
	case nt.logical == 8:
		if nt.utc {
			return "timestamptz"
		}
		return "timestamp"
	case nt.logical == 0 && (nt.converted == 9 || nt.converted == 10):
		return "timestamptz" // TIMESTAMP_MILLIS and _MICROS are adjusted to UTC
	case nt.logical == 5 || nt.converted == 5 || nt.logical == 6 || nt.converted == 6 || nt.logical == 7 || nt.converted == 7 || nt.converted == 8:
		return "other" // decimal, date, time
	case nt.physical == 1 || nt.physical == 2:
		return "int"
	case nt.logical == 1 || nt.logical == 4 || nt.logical == 12 || nt.converted == 0 || nt.converted == 4 || nt.converted == 19:
		return "string"
	}
	return "other"
}

// pandasDtypeFits: pandas' extension dtype n over a field of kind reads
// the field's values as DuckDB does (or fails): nullable integers over
// integers, Float32/Float64 over floats, boolean over booleans, the string
// dtypes over text, a zoned datetime64 over a timestamp adjusted to UTC
// (its rendering is judged as a zoned one's elsewhere).
func pandasDtypeFits(n, kind string) bool {
	switch kind {
	case "int":
		return regexp.MustCompile(`^U?Int(8|16|32|64)$`).MatchString(n)
	case "float":
		return n == "Float32" || n == "Float64"
	case "bool":
		return n == "boolean"
	case "string":
		return n == "string" || n == "str" || n == "string[python]" || n == "string[pyarrow]" || n == "string[pyarrow_numpy]"
	case "timestamptz":
		return regexp.MustCompile(`^datetime64\[(s|ms|us|ns), [^\]]+\]$`).MatchString(n)
	}
	return false
}

// pandasMetadata is why pandas reads column col of a Parquet file
// otherwise than DuckDB, by the file's "pandas" metadata metas (each value
// of the key), or "": kinds are the file's top-level fields by name
// (pandasKind), nil when the types are not known (a footer DuckDB read),
// and then any dtype pandas applies counts.
func pandasMetadata(metas [][]byte, kinds map[string]string) (col, why string) {
	for _, m := range metas {
		entries, index, err := parsePandasMeta(m)
		if err != nil {
			return "", fmt.Sprintf("its pandas metadata is not JSON lakewap reads (%v), which pandas may read", err)
		}
		for _, e := range entries {
			kind, ok := kinds[e.fieldName]
			if kinds != nil && !ok || index[e.fieldName] {
				continue // not a field of the file, or pandas' index
			}
			switch {
			case e.nameIsText && e.name != e.fieldName:
				return e.fieldName, fmt.Sprintf("pandas reads field %q as its column %q", e.fieldName, e.name)
			case e.numpyType != "" && !plainNumpyType.MatchString(e.numpyType) && !pandasDtypeFits(e.numpyType, kind):
				return e.fieldName, fmt.Sprintf("pandas reads field %q as dtype %s (its numpy_type)", e.fieldName, e.numpyType)
			case e.pandasType == "datetimetz" && e.timezone && kind != "timestamptz":
				return e.fieldName, fmt.Sprintf("pandas reads field %q as times in the zone its metadata names (pandas_type datetimetz)", e.fieldName)
			}
		}
	}
	return "", ""
}

// parsePandasMeta reads the metadata's columns and the names of its index
// columns. Keys are matched exactly, as Python's json does (Go's
// encoding/json would take "Name" for name).
func parsePandasMeta(m []byte) ([]pandasColumnMeta, map[string]bool, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(m, &top); err != nil {
		return nil, nil, err
	}
	index := map[string]bool{}
	var idx []json.RawMessage
	if raw, ok := top["index_columns"]; ok {
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, nil, fmt.Errorf("index_columns: %w", err)
		}
	}
	for _, r := range idx {
		var s string
		if json.Unmarshal(r, &s) == nil {
			index[s] = true
		}
	}
	var cols []map[string]json.RawMessage
	if raw, ok := top["columns"]; ok {
		if err := json.Unmarshal(raw, &cols); err != nil {
			return nil, nil, fmt.Errorf("columns: %w", err)
		}
	}
	var out []pandasColumnMeta
	for _, c := range cols {
		var e pandasColumnMeta
		e.nameIsText = json.Unmarshal(c["name"], &e.name) == nil && !bytes.Equal(bytes.TrimSpace(c["name"]), []byte("null"))
		if json.Unmarshal(c["field_name"], &e.fieldName) != nil || bytes.Equal(bytes.TrimSpace(c["field_name"]), []byte("null")) {
			if !e.nameIsText {
				continue
			}
			e.fieldName = e.name // older metadata: pyarrow takes the name for it
		}
		_ = json.Unmarshal(c["pandas_type"], &e.pandasType)
		_ = json.Unmarshal(c["numpy_type"], &e.numpyType)
		var md map[string]json.RawMessage
		if json.Unmarshal(c["metadata"], &md) == nil {
			tz := strings.TrimSpace(string(md["timezone"]))
			e.timezone = tz != "" && tz != "null"
		}
		out = append(out, e)
	}
	return out, index, nil
}

// topLevelKinds are the pandasKind of each top-level field of a footer's
// schema, by name.
func topLevelKinds(nodes []schemaNode, types []nodeTypes) map[string]string {
	if len(nodes) == 0 || len(types) != len(nodes) {
		return nil
	}
	kinds := map[string]string{}
	for _, i := range topLevel(nodes, types) {
		kinds[nodes[i].name] = pandasKind(types[i], nodes[i].children > 0)
	}
	return kinds
}

// markPandas notes on cols (a file's) why pandas reads one of them
// otherwise (pandasMetadata); a reason of no column goes on the first.
func markPandas(cols []fileColumn, metas [][]byte, kinds map[string]string) {
	col, why := pandasMetadata(metas, kinds)
	if why == "" || len(cols) == 0 {
		return
	}
	for i := range cols {
		if cols[i].name == col {
			cols[i].pandas = why
			return
		}
	}
	cols[0].pandas = why
}

// pandasRenamed names the first Parquet file whose pandas metadata makes
// pandas read a column of it otherwise than DuckDB (markPandas).
func pandasRenamed(names map[string][]fileColumn, order []string, objPath map[string]string) error {
	for _, f := range order {
		for _, c := range names[f] {
			if c.pandas != "" {
				return fmt.Errorf("file %s: %s, by the pandas metadata of its footer (its key-value metadata \"pandas\", or that of its ARROW:schema, which pyarrow takes first), which pandas.read_parquet reads and DuckDB, Spark and Delta readers ignore: readers disagree on it (write the file without that metadata, or with pandas' own)",
					objPath[f], c.pandas)
			}
		}
	}
	return nil
}
