package audit

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// arrowSeeds are ARROW:schema values pyarrow 26.0.1 wrote: a pandas
// frame of ordinary dtypes, a pyarrow table of every type Parquet takes,
// and the test's own.
func arrowSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range []string{"testdata/arrow_schema_pandas.b64", "testdata/arrow_schema_pyarrow.b64"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{arrowDurationA, arrowDurationSwapped, arrowDurationB, arrowPeriodA, arrowPandasFloat64A, arrowTokyoA, arrowDictionaryA} {
		out = append(out, []byte(s))
	}
	return out
}

// TestArrowSchemaDecodesWhatPyarrowWrites: Go reads the schemas pyarrow
// wrote as pyarrow's schema printed them (field count, types by member,
// units, extension names, the pandas metadata).
func TestArrowSchemaDecodesWhatPyarrowWrites(t *testing.T) {
	seeds := arrowSeeds(t)
	pandas, err := decodeArrowSchema(seeds[0])
	if err != nil {
		t.Fatal(err)
	}
	// i, i_na, f, b, s, ts, ts_tokyo, cat, dt, dec, by, td
	if len(pandas.fields) != 12 || len(pandas.pandas) != 1 {
		t.Fatalf("%d fields, %d pandas metadata; want 12 and 1", len(pandas.fields), len(pandas.pandas))
	}
	if f := pandas.fields[11]; f.typ != arrowDuration || f.unit != 2 {
		t.Errorf("td: type %d unit %d; want duration[us] (18, 2)", f.typ, f.unit)
	}
	if f := pandas.fields[6]; f.typ != arrowTimestamp || f.unit != 2 {
		t.Errorf("ts_tokyo: type %d unit %d; want timestamp[us] (10, 2)", f.typ, f.unit)
	}
	all, err := decodeArrowSchema(seeds[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(all.fields) != 33 {
		t.Fatalf("%d fields; want 33", len(all.fields))
	}
	want := map[int]arrowField{0: {typ: arrowDuration, unit: 0}, 3: {typ: arrowDuration, unit: 3}, 25: {typ: 15, extension: "arrow.uuid"}, 26: {typ: 5, extension: "arrow.json"}}
	for i, w := range want {
		if f := all.fields[i]; f.typ != w.typ || f.unit != w.unit || f.extension != w.extension {
			t.Errorf("field %d: %+v; want %+v", i, f, w)
		}
	}
	if st := all.fields[31]; st.typ != 13 || len(st.children) != 1 {
		t.Errorf("st: %+v; want a struct of one field", st)
	}
	period, err := decodeArrowSchema([]byte(arrowPeriodA))
	if err != nil || len(period.fields) != 1 || period.fields[0].extension != "pandas.period" {
		t.Errorf("%+v, %v; want one field of extension pandas.period", period, err)
	}
}

// TestArrowSchemaHostileBytesAreNotRead: a value pyarrow would fail on,
// or one Go cannot take as certain, is an error, never a panic.
func TestArrowSchemaHostileBytesAreNotRead(t *testing.T) {
	good, _ := base64.StdEncoding.DecodeString(arrowDurationA)
	cases := map[string][]byte{
		"not base64":      []byte("!!!!"),
		"unpadded":        []byte("/////w"),
		"line break":      []byte(arrowDurationA[:8] + "\n" + arrowDurationA[8:]),
		"empty":           nil,
		"length past end": []byte(base64.StdEncoding.EncodeToString([]byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 1, 2})),
		"truncated":       []byte(base64.StdEncoding.EncodeToString(good[:60])),
		"shared children": []byte(base64.StdEncoding.EncodeToString(arrowSharedChildren(22))),
		"too deep":        []byte(base64.StdEncoding.EncodeToString(arrowSharedChildren(40))),
	}
	for name, v := range cases {
		if s, err := decodeArrowSchema(v); err == nil {
			t.Errorf("%s: read %+v; want an error", name, s)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// The same shape, 6 levels: read (2 fields of 2 children... 126 in all).
	if s, err := decodeArrowSchema([]byte(base64.StdEncoding.EncodeToString(arrowSharedChildren(6)))); err != nil || len(s.fields) != 2 || len(s.fields[0].children) != 2 {
		t.Errorf("6 levels: %+v, %v; want 2 fields of 2 children", s, err)
	}
}

// arrowSharedChildren is an IPC message whose Schema has a field with two
// children, both the same field, which has two children, both the same
// next one, levels deep: 2^levels fields to a reader that follows every
// offset (FlatBuffers' offsets point forward only, so no cycle). Every
// field's type is one Null table at the end.
func arrowSharedChildren(levels int) []byte {
	var b []byte
	u16 := func(v ...int) {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
		}
	}
	u32 := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	var typeSlots []int // the fields' type offsets, set once the Null table is placed
	u32(0)              // root offset, set below
	msgVT := len(b)
	u16(10, 12, 4, 6, 8) // Message: version, header_type, header
	u16(0)
	fieldVT := len(b)
	u16(16, 16, 0, 0, 4, 8, 0, 12) // Field: type_type, type, children
	leafVT := len(b)
	u16(12, 12, 0, 0, 4, 8) // Field: type_type, type
	nullVT := len(b)
	u16(4, 4) // Null: no fields
	schemaVT := len(b)
	u16(8, 8, 0, 4) // Schema: fields only
	msg := len(b)
	binary.LittleEndian.PutUint32(b, uint32(msg))
	u32(msg - msgVT)
	u16(4)              // version V5
	b = append(b, 1, 0) // header_type Schema
	u32(4)              // header: the Schema right after
	schema := len(b)
	u32(schema - schemaVT)
	u32(4) // fields: the vector right after
	vector := func() {
		u32(2)
		u32(8) // both elements: the table after the vector
		u32(4)
	}
	vector()
	for i := 0; i < levels; i++ {
		table := len(b)
		vt := fieldVT
		if i == levels-1 {
			vt = leafVT
		}
		u32(table - vt)
		b = append(b, 1, 0, 0, 0) // type_type Null
		typeSlots = append(typeSlots, len(b))
		u32(0)
		if i == levels-1 {
			break
		}
		u32(4)
		vector()
	}
	null := len(b)
	u32(null - nullVT)
	for _, s := range typeSlots {
		binary.LittleEndian.PutUint32(b[s:], uint32(null-s))
	}
	return append(binary.LittleEndian.AppendUint32([]byte{0xff, 0xff, 0xff, 0xff}, uint32(len(b))), b...)
}

// FuzzArrowSchema: any bytes either decode or fail, within bounds. Run it
// with -fuzzminimizetime 2s: the default minute spent minimizing each new
// input grown from a 3 KB seed stops the exec counter for that long.
func FuzzArrowSchema(f *testing.F) {
	for _, s := range arrowSeeds(f) {
		raw, err := base64.StdEncoding.DecodeString(string(s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeArrowMessage(raw)
		if err != nil {
			return
		}
		n := 0
		var count func(fs []arrowField, depth int)
		count = func(fs []arrowField, depth int) {
			if depth > arrowMaxDepth+1 {
				t.Fatalf("fields nested %d deep", depth)
			}
			for _, f := range fs {
				n++
				count(f.children, depth+1)
			}
		}
		count(s.fields, 0)
		if n > arrowTableLimit(len(raw)) {
			t.Fatalf("%d fields", n)
		}
		for _, f := range s.fields {
			_ = arrowRestore(f, "", false, 0)
		}
	})
}

// BenchmarkArrowSchemaDecode: the ARROW:schema of a pandas frame of 12
// columns, decoded and judged, as a first audit does once per file.
func BenchmarkArrowSchemaDecode(b *testing.B) {
	v := arrowSeeds(b)[0]
	cols := make([]fileColumn, 12)
	b.ReportAllocs()
	for b.Loop() {
		for i := range cols {
			cols[i].arrow = ""
		}
		markArrow(cols, [][]byte{v}, nil)
	}
}

// TestArrowSchemaOfAFooterDuckDBReads: a file whose footer the Go reader
// gives to DuckDB (over 4 MiB of key-value metadata) has its ARROW:schema
// read with parquet_kv_metadata: its duration, and its schema's pandas
// metadata, are marked as in a footer Go reads.
func TestArrowSchemaOfAFooterDuckDBReads(t *testing.T) {
	e := footerEngine(t)
	dir := e.dir // the one directory the engine's DuckDB reads
	for name, schema := range map[string]string{"duration": arrowDurationA, "pandas": arrowPandasFloat64A, "unreadable": "bm90dmFsaWQ="} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, name+".parquet")
			copySQL(t, fmt.Sprintf("COPY (SELECT 1::BIGINT AS a) TO %s (FORMAT parquet, KV_METADATA {pad: repeat('x', 5000000), 'ARROW:schema': %s})", quoteLiteral(f), quoteLiteral(schema)))
			if _, err := readFooter(f); !errors.Is(err, errFooter) {
				t.Fatalf("read in Go (%v), want DuckDB to read it", err)
			}
			cols, err := (&run{e: e}).parquetColumns(context.Background(), []string{f})
			if err != nil {
				t.Fatal(err)
			}
			c := cols[f]
			if len(c) != 1 || c[0].arrow+c[0].pandas+c[0].arrowFile == "" {
				t.Fatalf("%+v: want column a marked", c)
			}
			t.Logf("%s%s%s", c[0].arrow, c[0].pandas, c[0].arrowFile)
		})
	}
}
