package audit

import (
	"encoding/binary"
	"math/bits"
	"os/exec"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// handLevels is levels (each at most max) in the RLE/bit-packed hybrid
// as a V1 data page holds them: its length, then one bit-packed run.
func handLevels(levels []int, max int) []byte {
	width := bits.Len(uint(max))
	groups := (len(levels) + 7) / 8
	run := binary.AppendUvarint(nil, uint64(groups<<1|1))
	packed := make([]byte, groups*width)
	for i, l := range levels {
		for b := 0; b < width; b++ {
			if l>>b&1 != 0 {
				bit := i*width + b
				packed[bit/8] |= 1 << (bit % 8)
			}
		}
	}
	run = append(run, packed...)
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(run))), run...)
}

// handNestedParquet is a Parquet file of one leaf (INT32, at path) under
// the schema elements (the root's first, each a Thrift SchemaElement),
// one row group of rows rows, uncompressed: one V1 data page of the
// repetition and definition levels (of maxima maxRep and maxDef, none
// where 0) and values, PLAIN.
func handNestedParquet(elems [][]byte, path []string, rows int64, maxRep, maxDef int, reps, defs []int, values []int32) []byte {
	var body []byte
	if maxRep > 0 {
		body = append(body, handLevels(reps, maxRep)...)
	}
	if maxDef > 0 {
		body = append(body, handLevels(defs, maxDef)...)
	}
	for _, v := range values {
		body = append(body, le32(v)...)
	}
	n := int32(len(defs))
	if maxDef == 0 {
		n = int32(len(values))
	}
	header := tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))),
		tst(5, ti32(1, n), ti32(2, 0), ti32(3, 3), ti32(4, 3)))
	chunk := append(header, body...)
	var names [][]byte
	for _, p := range path {
		names = append(names, tElemStr(p))
	}
	meta := []tf{ti32(1, ptInt32), tlist(2, 5, tElemI32(0), tElemI32(3)), tlist(3, 8, names...), ti32(4, 0),
		ti64(5, int64(n)), ti64(6, int64(len(chunk))), ti64(7, int64(len(chunk))), ti64(9, 4)}
	md := tstruct(
		ti32(1, 1),
		tlist(2, 12, elems...),
		ti64(3, rows),
		tlist(4, 12, tstruct(tlist(1, 12, tstruct(ti64(2, 4), tst(3, meta...))), ti64(2, int64(len(chunk))), ti64(3, rows))),
	)
	f := append(append([]byte("PAR1"), chunk...), md...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(md)))
	return append(f, "PAR1"...)
}

// handGroup and handLeaf are schema elements: a group of children
// (repetition 0 required, 1 optional, 2 repeated; converted type, none
// where -1) and an INT32 leaf.
func handGroup(name string, repetition int32, children int32, converted int32) []byte {
	fs := []tf{ti32(3, repetition), tbin(4, []byte(name)), ti32(5, children)}
	if converted >= 0 {
		fs = append(fs, ti32(6, converted))
	}
	return tstruct(fs...)
}

func handLeaf(name string, repetition int32) []byte {
	return tstruct(ti32(1, ptInt32), ti32(3, repetition), tbin(4, []byte(name)))
}

// handRoot is the root element of children.
func handRoot(children int32) []byte {
	return tstruct(tbin(4, []byte("schema")), ti32(5, children))
}

// review39Lists are hand-made Parquet files of one list column a of the
// rows [1, 2] and [3] (values of an INT32 leaf), in the layouts the
// Parquet format's backward-compatibility rules read, and whether DuckDB
// reads them otherwise than pyarrow and Spark: as INTEGER[] where they
// read a list of a struct of the one field x (the rule that a repeated
// group of one field named array or <list>_tuple, or a repeated group
// outside a LIST, is the element, a struct; DuckDB 1.5 takes its field).
var review39Lists = []struct {
	name    string
	file    func() []byte
	refused bool
}{
	{"two_level_primitive", func() []byte { // optional group a (LIST) { repeated int32 element; }
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 1, 1, 3), handLeaf("element", 2)}, []string{"a", "element"}, 2, 1, 2, []int{0, 1, 0}, []int{2, 2, 2}, []int32{1, 2, 3})
	}, false},
	{"repeated_primitive", func() []byte { // repeated int32 a;
		return handNestedParquet([][]byte{handRoot(1), handLeaf("a", 2)}, []string{"a"}, 2, 1, 1, []int{0, 1, 0}, []int{1, 1, 1}, []int32{1, 2, 3})
	}, false},
	{"three_level", func() []byte { // optional group a (LIST) { repeated group list { optional int32 element; } }
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 1, 1, 3), handGroup("list", 2, 1, -1), handLeaf("element", 1)}, []string{"a", "list", "element"}, 2, 1, 3, []int{0, 1, 0}, []int{3, 3, 3}, []int32{1, 2, 3})
	}, false},
	{"three_level_named_element", func() []byte { // Spark's writeLegacyFormat names them bag and array; any name but array and a_tuple is this
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 1, 1, 3), handGroup("bag", 2, 1, -1), handLeaf("x", 1)}, []string{"a", "bag", "x"}, 2, 1, 3, []int{0, 1, 0}, []int{3, 3, 3}, []int32{1, 2, 3})
	}, false},
	{"two_level_array", func() []byte { // optional group a (LIST) { repeated group array { optional int32 x; } } (parquet-avro's old lists)
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 1, 1, 3), handGroup("array", 2, 1, -1), handLeaf("x", 1)}, []string{"a", "array", "x"}, 2, 1, 3, []int{0, 1, 0}, []int{3, 3, 3}, []int32{1, 2, 3})
	}, true},
	{"two_level_tuple", func() []byte { // optional group a (LIST) { repeated group a_tuple { optional int32 x; } } (parquet-thrift's)
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 1, 1, 3), handGroup("a_tuple", 2, 1, -1), handLeaf("x", 1)}, []string{"a", "a_tuple", "x"}, 2, 1, 3, []int{0, 1, 0}, []int{3, 3, 3}, []int32{1, 2, 3})
	}, true},
	{"repeated_group", func() []byte { // repeated group a { optional int32 x; } (parquet-protobuf's repeated messages)
		return handNestedParquet([][]byte{handRoot(1), handGroup("a", 2, 1, -1), handLeaf("x", 1)}, []string{"a", "x"}, 2, 1, 2, []int{0, 1, 0}, []int{2, 2, 2}, []int32{1, 2, 3})
	}, true},
}

// TestReview39LegacyListsDuckDBReadsOtherwiseAreRefused: the Parquet
// format reads a repeated group of one field named array or <list>_tuple
// in a LIST, and a repeated group outside one, as a list of structs:
// pyarrow 26.0.1 reads two_level_array as list<array: struct<x: int32>>,
// [{'x': 1}, {'x': 2}], PySpark 4.3.0 as array<struct<x:int>>,
// [{1}, {2}]; DuckDB 1.5 as INTEGER[], [1, 2]. A schema check of
// a INTEGER[] passed, and an accepted_values of [1, 2] and [3], where
// pyarrow's and Spark's users read structs. Now the file is refused
// naming it and the column; the layouts all read alike (2-level lists of
// a primitive, a bare repeated primitive, 3-level lists of any names)
// pass the schema check, and every file a not_null, which reads the lists
// alike (an accepted_values over any list is refused by pandas'
// rendering: TestReview39AcceptedValuesOverNestedColumnsAreRefused).
func TestReview39LegacyListsDuckDBReadsOtherwiseAreRefused(t *testing.T) {
	schema := Check{Kind: KindSchema, Schema: []ColumnType{{Name: "a", Type: "INTEGER[]"}}}
	values := Check{Kind: KindAcceptedValues, Column: "a", Values: []string{"[1, 2]", "[3]"}}
	notNull := Check{Kind: KindNotNull, Column: "a"}
	for _, c := range review39Lists {
		t.Run(c.name, func(t *testing.T) {
			if python, err := testPython(); err == nil && !testing.Short() {
				f := writeTemp(t, c.file())
				out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).to_pylist())", f).CombinedOutput()
				if err != nil {
					t.Fatalf("pyarrow: %v: %s", err, out)
				}
				structs := strings.Contains(string(out), "'x'")
				want := map[bool]string{false: "[{'a': [1, 2]}, {'a': [3]}]", true: "[{'a': [{'x': 1}, {'x': 2}]}, {'a': [{'x': 3}]}]"}[c.refused]
				if got := strings.TrimSpace(string(out)); got != want || structs != c.refused {
					t.Fatalf("pyarrow reads %s, want %s", got, want)
				}
			}
			for _, check := range []Check{schema, values, notNull} {
				src := oneFileBatch(t, c.file())
				rep, res := review39Audit(t, src, check)
				refused := c.refused && check.Kind != KindNotNull
				if !c.refused && check.Kind == KindAcceptedValues {
					// pandas renders any list otherwise ([1 2]):
					// pandasNestedValues, of the view's type.
					if rep.Passed || !strings.Contains(res.Message, "pandas renders otherwise than DuckDB") {
						t.Fatalf("%s: %s %q (%s): want it refused as pandas renders lists otherwise", check.Kind, res.Status, res.Message, res.Observed)
					}
					continue
				}
				if !refused {
					if !rep.Passed {
						t.Fatalf("%s: %s %q (%s): want it passed", check.Kind, res.Status, res.Message, res.Observed)
					}
					continue
				}
				if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "part-0.parquet") || !strings.Contains(res.Message, `column "a"`) {
					t.Fatalf("%s: %s %q (%s); pyarrow and Spark read structs: want it refused naming the file and the column", check.Kind, res.Status, res.Message, res.Observed)
				}
				t.Logf("%s refused: %s", check.Kind, res.Message)
			}
		})
	}
}
