package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Spark reads a Parquet file by the Spark schema its key-value metadata
// holds under org.apache.spark.sql.parquet.row.metadata (Spark writes it;
// ParquetFileFormat.readSchemaFromFooter takes it over the Parquet schema),
// and the writer controls it: a plain INT32 column the schema says is a
// byte read 300 as 44, a short 70000 as 4464, a date 19723 as 2024-01-01,
// a UINT_32 it says is an integer 4294967295 as -1 (PySpark 4.3.0,
// spark.read.parquet), where DuckDB, pyarrow and pandas read 300, 70000,
// 19723 and 4294967295 (TestReview55SparkSchemaOfAParquetFileIsReadAsSparkReadsIt).
// A file whose Spark schema gives an INT32, INT64, INT96 or DECIMAL leaf
// (a top-level column or nested below one) another type than Spark reads
// its Parquet type as without it (ParquetToSparkSchemaConverter;
// sparkLeafType) is refused, naming the file, the column, the path to the
// leaf and both types. Honest Spark files state the converter's types
// (but for intervals, which Spark writes as plain integers and DuckDB
// reads so: refused too, as readers disagree on them).

const sparkRowMetadataKey = "org.apache.spark.sql.parquet.row.metadata"

// maxSparkSchemaBytes bounds the Spark schema read (the footer's own bound
// holds it too): past it the file is refused.
const maxSparkSchemaBytes = 4 << 20

// maxSparkNestedBytes bounds the text sparkNested reads of one file's
// Spark schema, its levels together.
const maxSparkNestedBytes = 16 << 20

// sparkInteger is the Spark type ParquetToSparkSchemaConverter reads an
// INT32 or INT64 leaf of types nt as, or "" for one not compared.
func sparkInteger(nt nodeTypes) string {
	bits, unsigned, isInt := int8(0), false, false
	switch {
	case nt.logical == ltInteger:
		bits, unsigned, isInt = nt.intBits, nt.unsigned, true
	case nt.logical == 0 && nt.converted >= cvUint8 && nt.converted <= cvInt64:
		isInt = true
		bits = [...]int8{8, 16, 32, 64}[(nt.converted-cvUint8)%4]
		unsigned = nt.converted < cvInt8
	}
	decimal := func() string {
		p, s := nt.precision, nt.scale
		if nt.logical == ltDecimal {
			p, s = nt.logicalPrecision, nt.logicalScale
		}
		return fmt.Sprintf("decimal(%d,%d)", p, s)
	}
	switch nt.physical {
	case ptInt32:
		switch {
		case nt.logical == 0 && nt.converted == -1:
			return "integer"
		case isInt && !unsigned && bits == 8:
			return "byte"
		case isInt && !unsigned && bits == 16, isInt && unsigned && bits == 8:
			return "short"
		case isInt && !unsigned && bits == 32, isInt && unsigned && bits == 16:
			return "integer"
		case isInt && unsigned && bits == 32:
			return "long"
		case nt.logical == ltDate || nt.logical == 0 && nt.converted == cvDate:
			return "date"
		case nt.logical == ltDecimal || nt.logical == 0 && nt.converted == cvDecimal:
			return decimal()
		}
	case ptInt64:
		switch {
		case nt.logical == 0 && nt.converted == -1:
			return "long"
		case isInt && !unsigned && bits == 64:
			return "long"
		case isInt && unsigned && bits == 64:
			return "decimal(20,0)"
		case nt.logical == ltTimestamp && (nt.unit == 1 || nt.unit == 2):
			if nt.utc {
				return "timestamp"
			}
			return "timestamp_ntz"
		case nt.logical == 0 && (nt.converted == cvTimestampMillis || nt.converted == cvTimestampMicros):
			return "timestamp"
		case nt.logical == ltDecimal || nt.logical == 0 && nt.converted == cvDecimal:
			return decimal()
		}
	}
	return ""
}

// sparkLeafType is the Spark type ParquetToSparkSchemaConverter reads a
// leaf of types nt as, for the leaves whose Spark schema's type is
// compared: INT32 and INT64 (sparkInteger; "a type lakewap does not
// compare" for one it does not read), INT96 (a timestamp), and DECIMAL
// over FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY; compared false for another.
// Review 59: parquet-mr's reader in PySpark 4.3.0 read a
// FIXED_LEN_BYTE_ARRAY DECIMAL(20,2) 123.45 a Spark schema said was a
// decimal(20,0) as 123, one it said was a decimal(4,2) as NULL, and INT96
// times it said were a string as their twelve bytes. Leaves of other
// types are not compared: Spark fails on a BOOLEAN, FLOAT or DOUBLE the
// schema gives another numeric type but for a FLOAT it says is a double,
// which it widens to the same number DuckDB reads (0.1 as
// 0.10000000149011612), and reads the bytes of a BYTE_ARRAY as text or
// binary as the schema says, as DuckDB reads them as a BLOB or text.
func sparkLeafType(nt nodeTypes) (typ string, compared bool) {
	switch nt.physical {
	case ptInt32, ptInt64:
		return cmp.Or(sparkInteger(nt), "a type lakewap does not compare"), true
	case ptInt96:
		if nt.logical == 0 && nt.converted == -1 {
			return "timestamp", true
		}
		return "a type lakewap does not compare", true
	case ptFixed, ptByteArray:
		if nt.logical == ltDecimal {
			return fmt.Sprintf("decimal(%d,%d)", nt.logicalPrecision, nt.logicalScale), true
		}
		if nt.logical == 0 && nt.converted == cvDecimal {
			return fmt.Sprintf("decimal(%d,%d)", nt.precision, nt.scale), true
		}
	}
	return "", false
}

// physicalName is the name of a Parquet physical type.
func physicalName(pt int32) string {
	if pt >= 0 && int(pt) < len(physicalNames) {
		return physicalNames[pt]
	}
	return fmt.Sprintf("physical type %d", pt)
}

var physicalNames = [...]string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}

// sparkLeafDisagrees is why Spark reads a leaf of types nt, whose Spark
// schema's type is want, otherwise than by its Parquet type, or "".
func sparkLeafDisagrees(want string, nt nodeTypes) string {
	got, compared := sparkLeafType(nt)
	if !compared || got == want {
		return ""
	}
	return fmt.Sprintf("Spark reads as %s (its Spark schema's type) and would read as %s by its Parquet type (%s), which DuckDB, pyarrow and pandas read", clip(want, 64), got, physicalName(nt.physical))
}

// sparkField is a top-level field of a Spark schema: its name, its type
// and its metadata as written.
type sparkField struct {
	name      string
	raw, meta json.RawMessage
}

// sparkSchemaFields reads the top-level fields of a Spark schema (its
// JSON), in order. An error: the schema cannot be read as Spark reads it
// (not JSON, an object with two keys alike but for case, which Go and
// Spark's json4s take otherwise, no struct, two fields whose names fold
// alike).
func sparkSchemaFields(value []byte) ([]sparkField, error) {
	if len(value) > maxSparkSchemaBytes {
		return nil, fmt.Errorf("a Spark schema of %d bytes", len(value))
	}
	if err := jsonKeysApart(value); err != nil {
		return nil, err
	}
	var s struct {
		Type   string `json:"type"`
		Fields []struct {
			Name     string          `json:"name"`
			Type     json.RawMessage `json:"type"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, err
	}
	if s.Type != "struct" {
		return nil, fmt.Errorf("a Spark schema of type %q", s.Type)
	}
	seen := make(map[string]bool, len(s.Fields))
	out := make([]sparkField, 0, len(s.Fields))
	for _, f := range s.Fields {
		k := foldName(f.Name)
		if seen[k] {
			return nil, fmt.Errorf("field %q twice", f.Name)
		}
		seen[k] = true
		out = append(out, sparkField{name: f.Name, raw: f.Type, meta: f.Metadata})
	}
	return out, nil
}

// jsonKeysApart fails on a JSON value holding an object with two keys
// alike but for case (or twice).
func jsonKeysApart(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	var walk func(depth int) error
	walk = func(depth int) error {
		if depth > 64 {
			return fmt.Errorf("nested deeper than 64")
		}
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				// Go's decoder matches a key to a field by
				// unicode.ToUpper ("fıelds" and "fieldſ" are "fields"),
				// json4s by its exact text.
				key := strings.ToLower(strings.ToUpper(k.(string)))
				if seen[key] {
					return fmt.Errorf("key %q twice", k)
				}
				seen[key] = true
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		case json.Delim('['):
			for d.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		}
		return nil
	}
	if err := walk(0); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return fmt.Errorf("text after the value")
	}
	return nil
}

// markSparkSchema notes on cols (a file's, schemaColumns of nodes) the
// first top-level INT32 or INT64 column whose type in the file's Spark
// schemas (values) is not the one Spark reads its Parquet type as
// (fileColumn.sparkSchema), or, on the first column, why the schema
// cannot be read. types nil: the footer was read by DuckDB, whose reading
// does not give the types to compare: a file with the key is refused.
func markSparkSchema(cols []fileColumn, nodes []schemaNode, types []nodeTypes, values [][]byte) {
	if len(values) == 0 || len(cols) == 0 {
		return
	}
	if types == nil || len(types) != len(nodes) {
		cols[0].sparkSchema = "its footer is read by DuckDB, whose reading does not give the Parquet types to compare the Spark schema with"
		return
	}
	top := topLevel(nodes, types) // the nodes of the top-level columns
	if len(top) != len(cols) {
		return
	}
	for _, v := range values {
		fields, err := sparkSchemaFields(v)
		if err != nil {
			cols[0].sparkSchema = fmt.Sprintf("its Spark schema cannot be read as Spark reads it (%v)", err)
			return
		}
		// Spark matches the schema's fields to the Parquet columns by
		// Java's toLowerCase(Locale.ROOT), which foldName does not
		// reproduce ("İD" is "i̇d" to Java, "id" to Go; review 58): the
		// fields must name the columns exactly, in order, as Spark
		// writes them, and are compared by their place.
		if len(fields) != len(top) {
			cols[0].sparkSchema = fmt.Sprintf("its Spark schema has %d top-level fields and its Parquet schema %d columns", len(fields), len(top))
			return
		}
		for k, i := range top {
			if fields[k].name != nodes[i].name {
				cols[k].sparkSchema = fmt.Sprintf("its Spark schema's field %d is named %q and its Parquet column %q: Spark matches them by Java's lower case, which lakewap does not", k+1, clip(fields[k].name, 128), clip(nodes[i].name, 128))
				return
			}
		}
		var ends []int
		budget := maxSparkNestedBytes
		for c, i := range top {
			n, nt := nodes[i], types[i]
			if cols[c].sparkSchema != "" {
				continue
			}
			if why := markSparkDefault(&cols[c], fields[c]); why != "" {
				cols[c].sparkSchema = why
				continue
			}
			if why := markSparkChar(&cols[c], fields[c]); why != "" {
				cols[c].sparkSchema = why
				continue
			}
			if n.children != 0 || nt.repetition == 2 {
				if ends == nil {
					ends = subtreeEnds(nodes)
				}
				if why := sparkNested(fields[c].raw, nodes, types, ends, i, false, n.name, 0, &budget); why != "" {
					cols[c].sparkSchema = why
				}
				continue
			}
			if why := sparkLeafDisagrees(sparkTypeText(fields[c].raw), nt); why != "" {
				cols[c].sparkSchema = why
			}
		}
	}
}

// sparkSchemaDisagreement names the first Parquet file of files with a
// column marked by markSparkSchema.
func sparkSchemaDisagreement(cols map[string][]fileColumn, files []string, objPath map[string]string) error {
	for _, f := range files {
		for _, c := range cols[f] {
			if c.sparkSchema != "" {
				return fmt.Errorf("file %s: column %q: %s (%s): readers disagree on its values (write the file without that key, or with the types of its Parquet schema)",
					objPath[f], c.name, c.sparkSchema, sparkRowMetadataKey)
			}
		}
	}
	return nil
}

// subtreeEnds is, for each node of a footer's schema, the index after its
// subtree (depth first).
func subtreeEnds(nodes []schemaNode) []int {
	ends := make([]int, len(nodes))
	var walk func(i int) int
	walk = func(i int) int {
		j := i + 1
		for c := int64(0); c < nodes[i].children && j < len(nodes); c++ {
			j = walk(j)
		}
		ends[i] = j
		return j
	}
	for i := 0; i < len(nodes); i = walk(i) {
	}
	return ends
}

// children are the indexes of the children of the node at i.
func children(nodes []schemaNode, ends []int, i int) []int {
	var out []int
	for j, c := i+1, int64(0); c < nodes[i].children && j < len(nodes); c++ {
		out = append(out, j)
		j = ends[j]
	}
	return out
}

// sparkNested compares the Spark type t (its JSON) of the node at i, a
// group or a repeated field, with the node's Parquet type as Spark's
// converter reads it (ParquetToSparkSchemaConverter): a struct's fields by
// name and place, a list's element (the format's rules for lists, as
// Spark applies them), a map's key and value, a user-defined type's SQL
// type, down to the leaves, compared as sparkLeafType reads them.
// element: the node is a list's element, its repetition the list's. It returns the first disagreement,
// with the path to it, or "" for none (review 58: a struct's INT32 field
// the Spark schema said was a byte read 200 as -56 in PySpark 4.3.0).
func sparkNested(t json.RawMessage, nodes []schemaNode, types []nodeTypes, ends []int, i int, element bool, path string, depth int, budget *int) string {
	if depth > 64 {
		return fmt.Sprintf("its Spark schema nests %s deeper than 64", clip(path, 256))
	}
	// Each level reads its own type's text again: the text read is
	// bounded, not only the schema's size (a deep field's padding is read
	// once per level above it).
	if *budget -= len(t); *budget < 0 {
		return fmt.Sprintf("its Spark schema is too large to compare nested as deep as %s (over %d bytes read)", clip(path, 256), maxSparkNestedBytes)
	}
	var name string
	var o struct {
		Type   string `json:"type"`
		Fields []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
		ElementType json.RawMessage `json:"elementType"`
		KeyType     json.RawMessage `json:"keyType"`
		ValueType   json.RawMessage `json:"valueType"`
		SQLType     json.RawMessage `json:"sqlType"`
	}
	if json.Unmarshal(t, &name) != nil && json.Unmarshal(t, &o) != nil {
		return fmt.Sprintf("its Spark schema's type of %s cannot be read", clip(path, 256))
	}
	if o.Type == "udt" {
		return sparkNested(o.SQLType, nodes, types, ends, i, element, path, depth+1, budget)
	}
	shape := func(parquet string) string {
		spark := name
		if spark == "" {
			spark = o.Type
		}
		return fmt.Sprintf("%s is a %s to its Spark schema and a %s to its Parquet schema", clip(path, 256), clip(spark, 64), parquet)
	}
	n, nt := nodes[i], types[i]
	kids := children(nodes, ends, i)
	if nt.repetition == 2 && !element {
		// A repeated field outside a LIST or MAP: Spark reads a list of it.
		if o.Type != "array" {
			return shape("list (a repeated field)")
		}
		return sparkNested(o.ElementType, nodes, types, ends, i, true, subPath(path, "[]"), depth+1, budget)
	}
	switch {
	case n.children == 0:
		if why := sparkLeafDisagrees(sparkTypeText(t), nt); why != "" {
			return clip(path, 256) + ": " + why
		}
		return ""
	case nt.converted == cvList || nt.logical == ltList:
		if o.Type != "array" {
			return shape("list")
		}
		if len(kids) != 1 || types[kids[0]].repetition != 2 {
			return shape("list of another layout")
		}
		r := kids[0]
		el := r
		if rk := children(nodes, ends, r); len(rk) == 1 && nodes[r].name != "array" && nodes[r].name != n.name+"_tuple" {
			el = rk[0]
		}
		return sparkNested(o.ElementType, nodes, types, ends, el, el == r, subPath(path, "[]"), depth+1, budget)
	case nt.converted == cvMap || nt.converted == cvMapKeyValue || nt.logical == ltMap:
		if o.Type != "map" {
			return shape("map")
		}
		if len(kids) != 1 || types[kids[0]].repetition != 2 {
			return shape("map of another layout")
		}
		kv := children(nodes, ends, kids[0])
		if len(kv) == 0 || len(kv) > 2 {
			return shape("map of another layout")
		}
		if why := sparkNested(o.KeyType, nodes, types, ends, kv[0], false, subPath(path, ".key"), depth+1, budget); why != "" {
			return why
		}
		if len(kv) == 2 {
			return sparkNested(o.ValueType, nodes, types, ends, kv[1], false, subPath(path, ".value"), depth+1, budget)
		}
		return ""
	}
	if o.Type != "struct" {
		return shape("struct")
	}
	if len(o.Fields) != len(kids) {
		return fmt.Sprintf("%s has %d fields to its Spark schema and %d to its Parquet schema", clip(path, 256), len(o.Fields), len(kids))
	}
	for k, c := range kids {
		if o.Fields[k].Name != nodes[c].name {
			return fmt.Sprintf("%s's field %d is named %q to its Spark schema and %q to its Parquet schema: Spark matches them by Java's lower case, which lakewap does not", clip(path, 256), k+1, clip(o.Fields[k].Name, 128), clip(nodes[c].name, 128))
		}
		if why := sparkNested(o.Fields[k].Type, nodes, types, ends, c, false, subPath(path, "."+clip(nodes[c].name, 128)), depth+1, budget); why != "" {
			return why
		}
	}
	return ""
}

// Spark reads a Parquet table's files by one file's types, not each by
// its own: the first file's footer (or its Spark schema) unless asked to
// merge them. Its readers then read another file's INT32 or INT64 leaf
// by that type, truncating: PySpark 4.3.0 read a plain INT32 300 beside a
// file whose column is an INT32 annotated INT(8) as 44 (review 58), and
// the same of a struct's field, a list's element and a map's value
// (review 59), where DuckDB reads each file by its own type (300) and
// pyarrow and pandas fail on the table. A leaf two files give another
// Spark type of the same physical type is refused, naming both files, the
// column and the path to the leaf. Leaves of INT32 integers in one file
// and INT64 in another (a column widened from int to bigint) pass: Spark
// widens an INT32 to a long, and fails on an INT64 it is to read as
// narrower. But it widens an INT32 to a long or a double by its raw
// integer, whatever its annotation (review 62: a DECIMAL(9,1) 4.0 beside
// a BIGINT first read 40, a UINT_32 4294967295 beside a DOUBLE first
// -1.0): an INT32 leaf beside another file's long or double leaf of its
// path that Spark reads otherwise under it (sparkWidensAlike) is refused
// too. Left:
// files whose footer DuckDB reads for the Go reader, whose types are not
// known here.

// maxSparkIntLeaves bounds the INT32 and INT64 leaves of a file
// markSparkInts notes (each with its path, clipped): past it, or past
// nesting 64 deep, the file is marked (sparkIntsOver), and a table of it
// and other files refused.
const maxSparkIntLeaves = 1 << 14

// sparkIntLeaf is an INT32 or INT64 leaf of a column: its path as Spark
// reads it (sparkIntLeaves; "" for the column itself), the type Spark
// reads it as (sparkInteger, or "a type lakewap does not compare"), and
// its physical type.
type sparkIntLeaf struct {
	path, typ string
	physical  int32
	// told: DuckDB's type of the leaf tells typ (sparkIntTold).
	told bool
	// nulls: the leaf is of the logical type UNKNOWN, NULLs only (pandas
	// writes a column of None so), which Spark reads as NULL under any
	// type.
	nulls bool
}

// sparkIntTold says whether DuckDB's type of an INT32 or INT64 leaf of
// types nt (a file's that passed typesDisagree) tells the type Spark
// reads it as (sparkInteger): no leaf of another Spark type of the same
// physical type reads as the same DuckDB type. An incremental audit
// compares the files' DuckDB types (schemaDisagreement), and the full
// audit Spark's (sparkIntsApart); for a leaf not told, the records keep
// Spark's (sparkFacts.Ints). Not told: a TIMESTAMP of the legacy
// ConvertedType only, a timestamp to Spark, which DuckDB reads as a
// TIMESTAMP, as it does a timestamp_ntz (a LogicalType not UTC-adjusted);
// a TIMESTAMP(NANOS) UTC-adjusted, which Spark does not read, and DuckDB
// 1.5.6 reads as a TIMESTAMP WITH TIME ZONE, as it does a timestamp of
// millis or micros; and any other annotation sparkInteger does not read
// but TIME's (DuckDB's TIME, no integer's) and a TIMESTAMP(NANOS) not
// UTC-adjusted (TIMESTAMP_NS) (review 61).
func sparkIntTold(nt nodeTypes) bool {
	switch {
	case nt.logical == 0 && (nt.converted == cvTimestampMillis || nt.converted == cvTimestampMicros):
		return false
	case nt.logical == ltTimestamp && nt.unit == 3:
		return !nt.utc
	case nt.logical == ltTime, nt.logical == 0 && (nt.converted == cvTimeMillis || nt.converted == cvTimeMicros):
		return true
	}
	return sparkInteger(nt) != ""
}

// sparkIntLeafOf is the leaf markSparkInts notes of a leaf of types nt
// at path: an INT32 or INT64 one, and a DOUBLE one (a double to Spark and
// DuckDB, told), under whose type Spark reads another file's INT32 by its
// raw integer (sparkWidensAlike); false for another.
func sparkIntLeafOf(nt nodeTypes, path string) (sparkIntLeaf, bool) {
	switch {
	case nt.physical == ptInt32 || nt.physical == ptInt64:
		return sparkIntLeaf{path: path, typ: cmp.Or(sparkInteger(nt), "a type lakewap does not compare"), physical: nt.physical, told: sparkIntTold(nt), nulls: nt.logical == ltUnknown}, true
	case nt.physical == ptDouble && nt.logical == 0 && nt.converted == -1:
		return sparkIntLeaf{path: path, typ: "double", physical: nt.physical, told: true}, true
	}
	return sparkIntLeaf{}, false
}

// markSparkInts notes on cols (a file's, schemaColumns of nodes) the
// INT32, INT64 and DOUBLE leaves of each top-level column, nested too, and
// the types Spark reads them as; on the first column, that the file has
// more than maxSparkIntLeaves of them, or some nested deeper than 64.
func markSparkInts(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	var ends []int
	left := maxSparkIntLeaves
	for k, i := range top {
		n, nt := nodes[i], types[i]
		if n.children == 0 && nt.repetition != 2 {
			if l, ok := sparkIntLeafOf(nt, ""); ok {
				if left--; left < 0 {
					cols[0].sparkIntsOver = true
					return
				}
				cols[k].sparkInts = []sparkIntLeaf{l}
			}
			continue
		}
		if ends == nil {
			ends = subtreeEnds(nodes)
		}
		if !sparkIntLeaves(&cols[k].sparkInts, nodes, types, ends, i, false, clip(n.name, 128), 0, &left) {
			cols[0].sparkIntsOver = true
			return
		}
	}
}

// sparkIntLeaves appends to out the INT32 and INT64 leaves under the node
// at i (a group or a repeated field), with their paths as Spark's
// converter reads the Parquet schema (sparkNested's): a struct's field
// .name, a list's element [] (a repeated field outside a list too), a
// map's .key and .value. element: the node is a list's element. False:
// past left leaves, or nested deeper than 64.
func sparkIntLeaves(out *[]sparkIntLeaf, nodes []schemaNode, types []nodeTypes, ends []int, i int, element bool, path string, depth int, left *int) bool {
	return eachNestedLeaf(nodes, types, ends, i, element, path, nil, depth, func(l int, path string, _ []unionStep) bool {
		leaf, ok := sparkIntLeafOf(types[l], path)
		if !ok {
			return true
		}
		if *left--; *left < 0 {
			return false
		}
		*out = append(*out, leaf)
		return true
	})
}

// eachNestedLeaf calls leaf with each leaf of the subtree at node i (a
// repeated one an element when element is set) as Spark's converter reads
// it: a list's element (path "[]"), a map's keys and values (".key",
// ".value"), a struct's fields (".name", clipped), with the steps to it;
// path and steps are the node's. It is false when leaf is, or past 64
// levels. sparkIntLeaves and unionLeaves walk by it.
func eachNestedLeaf(nodes []schemaNode, types []nodeTypes, ends []int, i int, element bool, path string, steps []unionStep, depth int, leaf func(i int, path string, steps []unionStep) bool) bool {
	if depth > 64 {
		return false
	}
	step := func(kind, name string) []unionStep {
		return append(slices.Clip(steps), unionStep{kind, name})
	}
	n, nt := nodes[i], types[i]
	if nt.repetition == 2 && !element {
		return eachNestedLeaf(nodes, types, ends, i, true, subPath(path, "[]"), step("[]", ""), depth+1, leaf)
	}
	if n.children == 0 {
		return leaf(i, path, steps)
	}
	kids := children(nodes, ends, i)
	switch {
	case (nt.converted == cvList || nt.logical == ltList) && len(kids) == 1 && types[kids[0]].repetition == 2:
		r := kids[0]
		el := r
		if rk := children(nodes, ends, r); len(rk) == 1 && nodes[r].name != "array" && nodes[r].name != n.name+"_tuple" {
			el = rk[0]
		}
		return eachNestedLeaf(nodes, types, ends, el, el == r, subPath(path, "[]"), step("[]", ""), depth+1, leaf)
	case (nt.converted == cvMap || nt.converted == cvMapKeyValue || nt.logical == ltMap) && len(kids) == 1 && types[kids[0]].repetition == 2:
		if kv := children(nodes, ends, kids[0]); len(kv) >= 1 && len(kv) <= 2 {
			for k, c := range kv {
				s := [...]string{".key", ".value"}[k]
				if !eachNestedLeaf(nodes, types, ends, c, false, subPath(path, s), step(s, ""), depth+1, leaf) {
					return false
				}
			}
			return true
		}
	}
	// A struct, or a list or map of a layout Spark's converter does not
	// read: its fields by name.
	for _, c := range kids {
		if !eachNestedLeaf(nodes, types, ends, c, false, subPath(path, "."+clip(nodes[c].name, 128)), step(".", nodes[c].name), depth+1, leaf) {
			return false
		}
	}
	return true
}

// sparkIntsApart names the first leaf of a Parquet table's files (names,
// in order) that two files give other Spark types of the same physical
// type (markSparkInts), or the first file with more leaves than compared.
func sparkIntsApart(names map[string][]fileColumn, order []string, objPath map[string]string) error {
	type first struct{ file, typ string }
	type leaf struct {
		column, path string // lower case
		physical     int32
	}
	seen := map[leaf]first{}
	// Per leaf (column and path, lower case): the Spark types of its INT32
	// leaves and of its long (INT64) and double leaves, each with the
	// first file of it, to compare across physical types.
	type path struct{ column, path string }
	int32s := map[path][]first{}
	wides := map[path][]first{}
	var paths []path
	add := func(to map[path][]first, p path, f, typ string) {
		if _, ok := int32s[p]; !ok {
			if _, ok := wides[p]; !ok {
				paths = append(paths, p)
			}
		}
		if !slices.ContainsFunc(to[p], func(w first) bool { return w.typ == typ }) {
			to[p] = append(to[p], first{f, typ})
		}
	}
	named := map[path]string{} // the leaf as a message names it
	for _, f := range order {
		cols := names[f]
		if len(order) > 1 && len(cols) > 0 && cols[0].sparkIntsOver {
			return fmt.Errorf("file %s has more than %d INT32, INT64 and DOUBLE leaves, or some nested deeper than 64, which lakewap does not compare across the table's files: Spark reads every file of the table by one file's types (a plain INT32 300 by an INT(8)'s as 44), where DuckDB reads each by its own (write fewer columns, or the table in one file)",
				objPath[f], maxSparkIntLeaves)
		}
		for _, c := range cols {
			for _, l := range c.sparkInts {
				what := fmt.Sprintf("column %q", clip(c.name, 128))
				if l.path != "" {
					what = fmt.Sprintf("column %q: leaf %q", clip(c.name, 128), clip(l.path, 256))
				}
				p := path{strings.ToLower(c.name), strings.ToLower(l.path)}
				if _, ok := named[p]; !ok {
					named[p] = what
				}
				switch {
				case l.physical == ptInt32 && !l.nulls:
					add(int32s, p, f, l.typ)
				case l.typ == "long" || l.typ == "double":
					add(wides, p, f, l.typ)
				}
				key := leaf{strings.ToLower(c.name), strings.ToLower(l.path), l.physical}
				was, ok := seen[key]
				if !ok {
					seen[key] = first{f, l.typ}
					continue
				}
				if was.typ == l.typ {
					continue
				}
				return fmt.Errorf("%s is %s to Spark in file %s and %s in file %s: Spark reads every file of the table by one file's type (a plain INT32 300 by an INT(8)'s as 44), where DuckDB reads each by its own and pyarrow and pandas fail: readers disagree on it (write the column in one type)",
					what, was.typ, objPath[was.file], l.typ, objPath[f])
			}
		}
	}
	for _, p := range paths {
		for _, n := range int32s[p] {
			for _, w := range wides[p] {
				if sparkWidensAlike(n.typ, w.typ) {
					continue
				}
				return fmt.Errorf("%s is %s to Spark in file %s (an INT32) and %s in file %s: Spark reads every file of the table by one file's schema (mergeSchema off: the first file by name), and an INT32 under another file's long or double by its raw integer (a DECIMAL(9,1) 4.0 as 40, a UINT_32 4294967295 as -1.0), where DuckDB reads each file by its own type and pandas in the first file's (4, 4294967295.0): readers disagree on it (write the column in one type)",
					named[p], n.typ, objPath[n.file], w.typ, objPath[w.file])
			}
		}
	}
	return nil
}

// sparkWidensAlike is whether Spark reads an INT32 leaf of Spark type
// typ under another file's wide type (long or double) as its own type
// reads it: its readers take the INT32's raw signed integer whatever its
// annotation (PySpark 4.3.0, either reader: a DECIMAL(9,1) 4.0 as 40 or
// 40.0, a DATE as its days, a UINT_32 4294967295 as -1.0 under a double),
// but for a UINT_32 under a long, which they read unsigned (review 62).
func sparkWidensAlike(typ, wide string) bool {
	switch {
	case typ == "byte" || typ == "short" || typ == "integer":
		return true
	case typ == "long": // a UINT_32
		return wide == "long"
	case strings.HasPrefix(typ, "decimal(") && strings.HasSuffix(typ, ",0)"):
		return true // its raw integer is its value
	}
	return false
}

// sparkTypeText is a Spark schema's type t (its JSON) as a message
// names it: a primitive's name, else its text.
func sparkTypeText(t json.RawMessage) string {
	var name string
	if json.Unmarshal(t, &name) == nil {
		return name
	}
	return strings.TrimSpace(string(t))
}

// subPath is path with next after it, path clipped first: a path is built
// for every node, and a long name above many nodes is not copied into
// each.
func subPath(path, next string) string { return clip(path, 256) + next }
