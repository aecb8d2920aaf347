package audit

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A Parquet file's key-value metadata "ARROW:schema" is read by pyarrow
// (and so pandas.read_parquet) and by no other reader of main: it is the
// base64 of an Arrow IPC Schema message, and pyarrow 26.0.1 restores from
// it, field by position (its name is not looked at; a schema of another
// field count is ignored), a duration over an INT64 field (1000000 reads
// "0 days 00:00:01"), an extension type whose storage is the field's
// (pandas.period: a Period), a time zone over a timestamp adjusted to
// UTC, a dictionary (a categorical), large strings; and the schema's own
// "pandas" metadata is taken over the file's key. A schema it cannot
// decode fails the read. DuckDB 1.5.6 reads none of it
// (TestArrowSchemaOfAParquetFileIsReadAsPyarrowReadsIt). The writer
// controls it, so a check passed on DuckDB's reading of a column pandas
// reads otherwise.

// arrowField is a field of an Arrow schema, as much of it as pyarrow's
// restoring of Parquet types looks at.
type arrowField struct {
	typ       uint8  // the Type union's member: 10 Timestamp, 18 Duration...
	unit      int16  // Timestamp's and Duration's TimeUnit: 0 s, 1 ms, 2 us, 3 ns
	extension string // its metadata's ARROW:extension:name
	children  []arrowField
}

// arrowSchema is an ARROW:schema value as Go reads it: its top-level
// fields and the values of its metadata's key "pandas".
type arrowSchema struct {
	fields []arrowField
	pandas [][]byte
}

// Bounds of the reading of a schema, besides the footer's own (a value is
// at most footerMaxBytes when Go reads the footer; parquet_kv_metadata's
// are as long as DuckDB reads them).
const (
	arrowMaxDepth = footerMaxDepth // nested fields
	// The tables visited (fields, key-values, types): one per
	// arrowBytesPerTable bytes of the message, at least arrowMinTables and
	// at most arrowMaxTables, the tables pyarrow's FlatBuffers verifier
	// visits. pyarrow writes a field in 44 bytes or more (a boolean of a
	// one-letter name, its type a table too), and pandas a frame of 12,000
	// columns, which a bound of 10,000 refused
	// (TestReview33WideArrowSchemaIsNotRefused); a hostile message visits
	// at most a table per 16 bytes of its own, each an arrowField.
	arrowMinTables     = footerMaxElements
	arrowMaxTables     = 1_000_000
	arrowBytesPerTable = 16
)

// arrowTableLimit is the tables a message of n bytes may visit.
func arrowTableLimit(n int) int {
	return min(arrowMaxTables, max(arrowMinTables, n/arrowBytesPerTable))
}

// Arrow's Type union members read here.
const (
	arrowUtf8            = 5
	arrowTimestamp       = 10
	arrowFixedSizeBinary = 15
	arrowDuration        = 18
	arrowLargeUtf8       = 20
	arrowUtf8View        = 24
)

var errArrowSchema = errors.New("not an Arrow schema lakewap reads")

// decodeArrowSchema reads an ARROW:schema value: base64 (as Arrow decodes
// it: padded, no line breaks) of an encapsulated IPC message (the
// continuation marker 0xFFFFFFFF and a length, or an older length alone)
// whose header is a Schema.
func decodeArrowSchema(value []byte) (arrowSchema, error) {
	if len(value)%4 != 0 || strings.ContainsAny(string(value), "\r\n") {
		return arrowSchema{}, fmt.Errorf("%w: its base64 is not padded to 4 bytes, or has line breaks", errArrowSchema)
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(value)))
	n, err := base64.StdEncoding.Strict().Decode(raw, value)
	if err != nil {
		return arrowSchema{}, fmt.Errorf("%w: base64: %v", errArrowSchema, err)
	}
	return decodeArrowMessage(raw[:n])
}

// decodeArrowMessage reads an encapsulated IPC message holding a Schema.
func decodeArrowMessage(raw []byte) (arrowSchema, error) {
	if len(raw) >= 4 && binary.LittleEndian.Uint32(raw) == 0xFFFFFFFF {
		raw = raw[4:]
	}
	if len(raw) < 4 {
		return arrowSchema{}, fmt.Errorf("%w: no message length", errArrowSchema)
	}
	size := int64(int32(binary.LittleEndian.Uint32(raw)))
	if size <= 0 || size > int64(len(raw)-4) {
		return arrowSchema{}, fmt.Errorf("%w: a message of %d bytes in %d", errArrowSchema, size, len(raw)-4)
	}
	if err := verifyArrowMessage(raw[4:4+size], arrowTableLimit(int(size))); err != nil {
		return arrowSchema{}, fmt.Errorf("%w: %v", errArrowSchema, err)
	}
	fb := &flatReader{b: raw[4 : 4+size], limit: arrowTableLimit(int(size))}
	s, err := fb.message()
	if err != nil {
		return arrowSchema{}, fmt.Errorf("%w: %v", errArrowSchema, err)
	}
	return s, nil
}

// flatReader reads the FlatBuffers tables of Arrow's Message.fbs and
// Schema.fbs from b, never past it, and at most limit of them
// (arrowTableLimit: a hostile buffer can point many offsets at one table).
type flatReader struct {
	b             []byte
	tables, limit int
}

// flatTable is a table at pos whose vtable, of vtLen bytes, is at vt.
type flatTable struct {
	r              *flatReader
	pos, vt, vtLen int
	size           int // the table's inline bytes, as its vtable says
	name           string
}

var errFlatBounds = errors.New("an offset out of the buffer")

func (r *flatReader) u32(p int) (uint32, error) {
	if p < 0 || p > len(r.b)-4 {
		return 0, errFlatBounds
	}
	return binary.LittleEndian.Uint32(r.b[p:]), nil
}

func (r *flatReader) u16(p int) (int, error) {
	if p < 0 || p > len(r.b)-2 {
		return 0, errFlatBounds
	}
	return int(binary.LittleEndian.Uint16(r.b[p:])), nil
}

// table reads the table at pos: its vtable must lie in the buffer and
// name no field outside the table.
func (r *flatReader) table(pos int, name string) (flatTable, error) {
	r.tables++
	if r.tables > r.limit {
		return flatTable{}, fmt.Errorf("more than %d tables", r.limit)
	}
	so, err := r.u32(pos)
	if err != nil {
		return flatTable{}, fmt.Errorf("%s: %w", name, err)
	}
	vt := pos - int(int32(so))
	vtLen, err := r.u16(vt)
	if err != nil {
		return flatTable{}, fmt.Errorf("%s's vtable: %w", name, err)
	}
	size, err := r.u16(vt + 2)
	if err != nil {
		return flatTable{}, fmt.Errorf("%s's vtable: %w", name, err)
	}
	if vtLen < 4 || vtLen%2 != 0 || vt+vtLen > len(r.b) || size < 4 || pos+size > len(r.b) {
		return flatTable{}, fmt.Errorf("%s: a vtable of %d bytes for a table of %d", name, vtLen, size)
	}
	return flatTable{r: r, pos: pos, vt: vt, vtLen: vtLen, size: size, name: name}, nil
}

// field is the position of field id of size bytes, or -1 when absent.
func (t flatTable) field(id, size int) (int, error) {
	at := 4 + 2*id
	if at+2 > t.vtLen {
		return -1, nil
	}
	off, err := t.r.u16(t.vt + at)
	if err != nil || off == 0 {
		return -1, err
	}
	if off+size > t.size {
		return -1, fmt.Errorf("%s: field %d past its table", t.name, id)
	}
	return t.pos + off, nil
}

func (t flatTable) u8(id int, def uint8) (uint8, error) {
	p, err := t.field(id, 1)
	if p < 0 {
		return def, err
	}
	return t.r.b[p], nil
}

func (t flatTable) i16(id int, def int16) (int16, error) {
	p, err := t.field(id, 2)
	if p < 0 {
		return def, err
	}
	v, err := t.r.u16(p)
	return int16(v), err
}

// ref follows the offset of field id: the position it points at, or -1.
func (t flatTable) ref(id int) (int, error) {
	p, err := t.field(id, 4)
	if p < 0 {
		return -1, err
	}
	return t.r.deref(p)
}

// deref follows the unsigned offset at p.
func (r *flatReader) deref(p int) (int, error) {
	off, err := r.u32(p)
	if err != nil {
		return -1, err
	}
	q := p + int(off)
	if off == 0 || q >= len(r.b) || q < p {
		return -1, errFlatBounds
	}
	return q, nil
}

// str is the string of field id ("" when absent).
func (t flatTable) str(id int) (string, error) {
	p, err := t.ref(id)
	if p < 0 {
		return "", err
	}
	n, err := t.r.u32(p)
	if err != nil {
		return "", err
	}
	if int64(n) > int64(len(t.r.b)-p-4) {
		return "", fmt.Errorf("%s: a string of %d bytes past the buffer", t.name, n)
	}
	return string(t.r.b[p+4 : p+4+int(n)]), nil
}

// tables are the tables a vector of offsets in field id points at.
func (t flatTable) tables(id int, name string) ([]flatTable, error) {
	p, err := t.ref(id)
	if p < 0 {
		return nil, err
	}
	n, err := t.r.u32(p)
	if err != nil {
		return nil, err
	}
	if int64(n)*4 > int64(len(t.r.b)-p-4) {
		return nil, fmt.Errorf("%s: a vector of %d offsets past the buffer", t.name, n)
	}
	// Counted before anything is allocated: a hostile buffer can point
	// many tables at one long vector.
	if int64(t.r.tables)+int64(n) > int64(t.r.limit) {
		return nil, fmt.Errorf("more than %d tables", t.r.limit)
	}
	out := make([]flatTable, 0, n)
	for i := 0; i < int(n); i++ {
		q, err := t.r.deref(p + 4 + 4*i)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		e, err := t.r.table(q, name)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// message reads the root Message (Message.fbs: version 0, header_type 1,
// header 2), whose header must be a Schema of metadata version V4 or V5,
// as pyarrow reads one.
func (r *flatReader) message() (arrowSchema, error) {
	root, err := r.deref(0)
	if err != nil {
		return arrowSchema{}, fmt.Errorf("root: %w", err)
	}
	m, err := r.table(root, "Message")
	if err != nil {
		return arrowSchema{}, err
	}
	version, err := m.i16(0, 0)
	if err != nil {
		return arrowSchema{}, err
	}
	if version != 3 && version != 4 {
		return arrowSchema{}, fmt.Errorf("metadata version %d, not V4 or V5", version)
	}
	ht, err := m.u8(1, 0)
	if err != nil {
		return arrowSchema{}, err
	}
	if ht != 1 {
		return arrowSchema{}, fmt.Errorf("a message of header type %d, not a Schema", ht)
	}
	p, err := m.ref(2)
	if err != nil || p < 0 {
		return arrowSchema{}, fmt.Errorf("a message without its Schema (%v)", err)
	}
	s, err := r.table(p, "Schema")
	if err != nil {
		return arrowSchema{}, err
	}
	var out arrowSchema
	// Schema.fbs: endianness 0, fields 1, custom_metadata 2.
	fields, err := s.tables(1, "Field")
	if err != nil {
		return arrowSchema{}, err
	}
	for _, f := range fields {
		af, err := r.field(f, 1)
		if err != nil {
			return arrowSchema{}, err
		}
		out.fields = append(out.fields, af)
	}
	meta, err := r.keyValues(s, 2)
	if err != nil {
		return arrowSchema{}, err
	}
	for _, kv := range meta {
		if kv[0] == "pandas" {
			out.pandas = append(out.pandas, []byte(kv[1]))
		}
	}
	return out, nil
}

// field reads a Field (name 0, nullable 1, type_type 2, type 3,
// dictionary 4, children 5, custom_metadata 6) at depth.
func (r *flatReader) field(f flatTable, depth int) (arrowField, error) {
	if depth > arrowMaxDepth {
		return arrowField{}, fmt.Errorf("fields nested deeper than %d", arrowMaxDepth)
	}
	var af arrowField
	var err error
	if af.typ, err = f.u8(2, 0); err != nil {
		return arrowField{}, err
	}
	if af.typ == arrowTimestamp || af.typ == arrowDuration {
		p, err := f.ref(3)
		if err != nil {
			return arrowField{}, err
		}
		def := int16(1) // Duration's unit defaults to MILLISECOND, Timestamp's to SECOND
		if af.typ == arrowTimestamp {
			def = 0
		}
		af.unit = def
		if p >= 0 {
			tt, err := r.table(p, "Type")
			if err != nil {
				return arrowField{}, err
			}
			if af.unit, err = tt.i16(0, def); err != nil {
				return arrowField{}, err
			}
		}
	}
	children, err := f.tables(5, "Field")
	if err != nil {
		return arrowField{}, err
	}
	for _, c := range children {
		ac, err := r.field(c, depth+1)
		if err != nil {
			return arrowField{}, err
		}
		af.children = append(af.children, ac)
	}
	meta, err := r.keyValues(f, 6)
	if err != nil {
		return arrowField{}, err
	}
	// The first of the key, as Arrow's IPC reader takes it
	// (KeyValueMetadata::FindKey): a later one named arrow.json after a
	// pandas.period (TestReview33ArrowSchemaAsPyarrowReadsIt).
	for _, kv := range meta {
		if kv[0] == "ARROW:extension:name" {
			af.extension = kv[1]
			break
		}
	}
	return af, nil
}

// keyValues reads a vector of KeyValue (key 0, value 1) in field id of t.
func (r *flatReader) keyValues(t flatTable, id int) ([][2]string, error) {
	kvs, err := t.tables(id, "KeyValue")
	if err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(kvs))
	for _, kv := range kvs {
		k, err := kv.str(0)
		if err != nil {
			return nil, err
		}
		v, err := kv.str(1)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// arrowUnits are TimeUnit's names as Arrow prints them.
var arrowUnits = map[int16]string{0: "s", 1: "ms", 2: "us", 3: "ns"}

// arrowRestore is what pyarrow reads a top-level field as by its origin
// field f in ARROW:schema, where DuckDB reads it otherwise, or "". kind is
// the field's pandasKind ("" when not known), uuid whether its Parquet
// logical type is UUID. Refused: a duration over an INT64 field (over
// another type pyarrow keeps the Parquet type, but no writer of its own
// does that), any extension type (pyarrow restores those registered in
// the reading process, pandas.period and pandas.interval among them) but
// arrow.json over a string type and arrow.uuid over a fixed-size binary
// and a Parquet UUID, which DuckDB reads alike (over another type pyarrow
// 26 fails the read, one without the extension registered restores the
// type under it), and either nested at any depth (a duration in a struct
// is restored too). A zone over a timestamp adjusted to UTC, a dictionary,
// large strings, a timestamp's unit, date64 read as DuckDB reads them.
func arrowRestore(f arrowField, kind string, uuid bool, depth int) string {
	switch {
	case f.extension == "arrow.json" && slices.Contains([]uint8{arrowUtf8, arrowLargeUtf8, arrowUtf8View}, f.typ),
		f.extension == "arrow.uuid" && f.typ == arrowFixedSizeBinary && uuid && depth == 0:
	case f.extension != "":
		return fmt.Sprintf("the extension type %q", f.extension)
	case f.typ == arrowDuration && (kind == "" || kind == "int" || depth > 0):
		unit := cmp.Or(arrowUnits[f.unit], fmt.Sprint(f.unit))
		return fmt.Sprintf("duration[%s] (pandas' timedelta64[%s])", unit, unit)
	}
	for _, c := range f.children {
		if why := arrowRestore(c, "", false, depth+1); why != "" {
			return "a nested " + why
		}
	}
	return ""
}

// markArrow notes on cols (a file's top-level columns, in order) what
// pyarrow reads each as otherwise than DuckDB by the file's ARROW:schema
// values (arrowRestore), and returns the "pandas" metadata those hold,
// which pyarrow takes over the file's (markPandas judges it). top are the
// footer's top-level fields (topLevelFields), nil when not known (a
// footer DuckDB read). Why a value is not read (pyarrow fails on it, or
// Go cannot take it as certain) goes on the first column, for the file.
func markArrow(cols []fileColumn, values [][]byte, top []topField) [][]byte {
	var pandas [][]byte
	for _, v := range values {
		s, err := decodeArrowSchema(v)
		if err != nil {
			if len(cols) > 0 && cols[0].arrowFile == "" {
				cols[0].arrowFile = err.Error()
			}
			continue
		}
		pandas = append(pandas, s.pandas...)
		if len(s.fields) != len(cols) {
			continue // pyarrow ignores a schema of another field count
		}
		for i, f := range s.fields {
			kind, uuid := "", false
			if len(top) == len(cols) {
				kind = pandasKind(top[i].types, top[i].group)
				uuid = top[i].types.logical == 14
			}
			if why := arrowRestore(f, kind, uuid, 0); why != "" && cols[i].arrow == "" {
				cols[i].arrow = why + ", where DuckDB reads " + parquetReading(top, i)
			}
		}
	}
	return pandas
}

// parquetPhysical are Parquet's physical types by number.
var parquetPhysical = []string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}

// parquetReading is how DuckDB reads top-level field i, for a message.
func parquetReading(top []topField, i int) string {
	switch {
	case i >= len(top):
		return "the values of its Parquet type"
	case top[i].group:
		return "its Parquet group's values"
	case top[i].types.physical >= 0 && int(top[i].types.physical) < len(parquetPhysical):
		return "its Parquet " + parquetPhysical[top[i].types.physical] + " values"
	}
	return "the values of its Parquet type"
}

// topField is a top-level field of a footer's schema: its types, and
// whether it is a group.
type topField struct {
	types nodeTypes
	group bool
}

// withEmbedded are a file's "pandas" metadata values and those its
// ARROW:schema holds (markArrow) that differ from them: pyarrow writes the
// same in both, judged once.
func withEmbedded(file, embedded [][]byte) [][]byte {
	out := slices.Clip(file)
	for _, m := range embedded {
		if !slices.ContainsFunc(out, func(k []byte) bool { return bytes.Equal(k, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// topLevelFields are a footer's top-level fields, in order, or nil.
func topLevelFields(nodes []schemaNode, types []nodeTypes) []topField {
	var out []topField
	for _, i := range topLevel(nodes, types) {
		out = append(out, topField{types: types[i], group: nodes[i].children > 0})
	}
	return out
}

// topLevel are the indexes in a footer's schema of its top-level fields,
// in order, or nil when types does not go with nodes.
func topLevel(nodes []schemaNode, types []nodeTypes) []int {
	if len(nodes) == 0 || len(types) != len(nodes) {
		return nil
	}
	var out []int
	var next func(i int) int // the index after the subtree at i
	next = func(i int) int {
		j := i + 1
		for c := int64(0); c < nodes[i].children && j < len(nodes); c++ {
			j = next(j)
		}
		return j
	}
	for i, c := 1, int64(0); c < nodes[0].children && i < len(nodes); c++ {
		out = append(out, i)
		i = next(i)
	}
	return out
}

// arrowRestored names the first Parquet file one of whose columns a check
// reads (reads) pyarrow reads otherwise than DuckDB by its ARROW:schema
// (markArrow), or whose ARROW:schema pyarrow fails on.
func arrowRestored(names map[string][]fileColumn, order []string, objPath map[string]string, reads func(col string) bool) error {
	for _, f := range order {
		for _, c := range names[f] {
			if c.arrowFile != "" {
				return fmt.Errorf("file %s: the ARROW:schema key-value metadata of its footer is %s, which pyarrow and pandas.read_parquet decode to read the file (failing where it is not a schema), and DuckDB, Spark and Delta readers ignore: readers disagree on it (write the file without that metadata, or with pyarrow's own)",
					objPath[f], c.arrowFile)
			}
			if c.arrow != "" && reads(c.name) {
				return fmt.Errorf("file %s: pyarrow and pandas.read_parquet read field %q as %s (Spark and Delta readers as DuckDB), by the ARROW:schema key-value metadata of its footer: readers disagree on it, and a check reads it (write the file without that metadata, or the column as its Parquet type)",
					objPath[f], c.name, c.arrow)
			}
		}
	}
	return nil
}

// columnsRead tells whether a check of checks reads column col of table:
// one naming it (column, columns), or any column for a check that may
// read every one (a where condition, SQL, a schema's types).
func columnsRead(checks []Check, table string) func(col string) bool {
	named := map[string]bool{}
	all := false
	for _, c := range checks {
		switch c.Kind {
		case KindSQL, KindCrossTable:
			all = true // its SQL may read any table
			continue
		}
		if !strings.EqualFold(c.Table, table) {
			continue
		}
		switch {
		case strings.TrimSpace(c.Where) != "", c.Kind == KindSchema, c.Kind == KindSchemaDrift:
			all = true
		}
		for _, col := range c.columns() {
			named[strings.ToLower(col)] = true
		}
	}
	return func(col string) bool { return all || named[strings.ToLower(col)] }
}
