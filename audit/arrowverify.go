package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// pyarrow runs FlatBuffers' verifier over an ARROW:schema message before
// it reads it, and then Arrow's own checks of what it reads, and fails
// the read of a Parquet file whose message does not pass them. The Go
// decoder (arrowschema.go) reads only the fields it needs, so a message
// with a misaligned offset, a string without its NUL, a broken table Go
// never looks at (a field's name, its dictionary, the message's body
// length), a field without its type or an Int of 7 bits passed, and
// pandas failed on the file DuckDB read: of 7,089 mutations of pyarrow's
// schemas Go read, pyarrow 26.0.1 failed on 3,430
// (TestReview33ArrowSchemaPyarrowFailsOnIsRefused). verifyArrowMessage
// walks every field of every table as the verifier does (Message.fbs,
// Schema.fbs), with the checks of Arrow's reading that cost nothing;
// after it 3 of 5,472 were left (an arrow.uuid over another type than
// 16 bytes: extension types check their storage as they are made).

// fbKind is how a field of a table is stored.
type fbKind uint8

const (
	fbScalar  fbKind = iota // size bytes in the table, aligned to size
	fbString                // an offset to a string
	fbTable                 // an offset to a table of spec
	fbTables                // an offset to a vector of offsets to tables of spec
	fbScalars               // an offset to a vector of scalars
	fbUnion                 // an offset to a table of the spec its type field (the one before) names
)

type fbField struct {
	kind     fbKind
	size     int     // fbScalar's
	spec     *fbSpec // fbTable's, fbTables'
	required bool    // Arrow fails without it
}

type fbSpec struct {
	name   string
	fields []fbField // by id
}

func fbScalarOf(size int) fbField { return fbField{kind: fbScalar, size: size} }

var (
	fbKeyValue   = &fbSpec{name: "KeyValue", fields: []fbField{{kind: fbString, required: true}, {kind: fbString, required: true}}}
	fbInt        = &fbSpec{name: "Int", fields: []fbField{fbScalarOf(4), fbScalarOf(1)}}
	fbDict       = &fbSpec{name: "DictionaryEncoding", fields: []fbField{fbScalarOf(8), {kind: fbTable, spec: fbInt, required: true}, fbScalarOf(1), fbScalarOf(2)}}
	fbArrowField = &fbSpec{name: "Field"} // fields set in init: it holds itself
	fbDecimal    = &fbSpec{name: "Decimal", fields: []fbField{fbScalarOf(4), fbScalarOf(4), fbScalarOf(4)}}
	fbTime       = &fbSpec{name: "Time", fields: []fbField{fbScalarOf(2), fbScalarOf(4)}}
	fbSchema     = &fbSpec{name: "Schema", fields: []fbField{fbScalarOf(2), {kind: fbTables, spec: fbArrowField, required: true},
		{kind: fbTables, spec: fbKeyValue}, {kind: fbScalars, size: 8}}}
	fbMessage = &fbSpec{name: "Message", fields: []fbField{fbScalarOf(2), fbScalarOf(1), {kind: fbUnion}, fbScalarOf(8), {kind: fbTables, spec: fbKeyValue}}}
	// fbTypes are the Type union's members' tables, by member (1 Null ...
	// 26 LargeListView).
	fbTypes = func() map[uint8]*fbSpec {
		empty := &fbSpec{name: "Type"}
		unit := &fbSpec{name: "Type", fields: []fbField{fbScalarOf(2)}}
		i32 := &fbSpec{name: "Type", fields: []fbField{fbScalarOf(4)}}
		m := map[uint8]*fbSpec{
			2: fbInt, 3: unit, 7: fbDecimal,
			8: unit, 9: fbTime,
			10: {name: "Timestamp", fields: []fbField{fbScalarOf(2), {kind: fbString}}}, 11: unit,
			14: {name: "Union", fields: []fbField{fbScalarOf(2), {kind: fbScalars, size: 4}}},
			15: i32, 16: i32, 17: {name: "Map", fields: []fbField{fbScalarOf(1)}}, 18: unit,
		}
		for t := uint8(1); t <= 26; t++ {
			if m[t] == nil {
				m[t] = empty
			}
		}
		return m
	}()
)

func init() {
	fbArrowField.fields = []fbField{{kind: fbString}, fbScalarOf(1), fbScalarOf(1), {kind: fbUnion, required: true},
		{kind: fbTable, spec: fbDict}, {kind: fbTables, spec: fbArrowField}, {kind: fbTables, spec: fbKeyValue}}
}

var errFlatVerify = errors.New("refused by FlatBuffers' verifier, which pyarrow runs")

// fbVerifier walks b as FlatBuffers' verifier does.
type fbVerifier struct {
	b             []byte
	tables, limit int
}

// at says whether n bytes at p lie in b, p a multiple of align.
func (v *fbVerifier) at(p, n, align int) bool {
	return p >= 0 && p <= len(v.b)-n && p%align == 0
}

// offset follows the offset at p, as VerifyOffset does.
func (v *fbVerifier) offset(p int) (int, error) {
	if !v.at(p, 4, 4) {
		return 0, errFlatVerify
	}
	o := binary.LittleEndian.Uint32(v.b[p:])
	if o == 0 || o >= 1<<31 || p+int(o) >= len(v.b) {
		return 0, errFlatVerify
	}
	return p + int(o), nil
}

// vector is the length of the vector (or string) at p of elements of
// size bytes, all in b.
func (v *fbVerifier) vector(p, size int) (int, error) {
	if !v.at(p, 4, 4) {
		return 0, errFlatVerify
	}
	n := int64(binary.LittleEndian.Uint32(v.b[p:]))
	if 4+n*int64(size) > int64(len(v.b)-p) {
		return 0, errFlatVerify
	}
	return int(n), nil
}

// verifyArrowMessage verifies the Message at the root of b, at most limit
// tables visited.
func verifyArrowMessage(b []byte, limit int) error {
	v := &fbVerifier{b: b, limit: limit}
	root, err := v.offset(0)
	if err != nil {
		return fmt.Errorf("root: %w", err)
	}
	return v.table(root, fbMessage, 0)
}

// table verifies the table at pos of spec, depth tables deep.
func (v *fbVerifier) table(pos int, spec *fbSpec, depth int) error {
	if v.tables++; v.tables > v.limit {
		return fmt.Errorf("more than %d tables", v.limit)
	}
	if depth > 2*arrowMaxDepth+4 {
		return fmt.Errorf("tables nested deeper than %d", 2*arrowMaxDepth+4)
	}
	if !v.at(pos, 4, 4) {
		return fmt.Errorf("%s: %w", spec.name, errFlatVerify)
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(v.b[pos:])))
	if !v.at(vt, 4, 2) {
		return fmt.Errorf("%s's vtable: %w", spec.name, errFlatVerify)
	}
	vtLen := int(binary.LittleEndian.Uint16(v.b[vt:]))
	if vtLen%2 != 0 || !v.at(vt, vtLen, 2) {
		return fmt.Errorf("%s's vtable: %w", spec.name, errFlatVerify)
	}
	var last uint8 // the scalar before a union: its type
	children := 0  // of a Field
	for id, f := range spec.fields {
		off := 0
		if 4+2*id+2 <= vtLen {
			off = int(binary.LittleEndian.Uint16(v.b[vt+4+2*id:]))
		}
		if off == 0 {
			if f.required {
				return fmt.Errorf("%s: field %d missing, which Arrow requires", spec.name, id)
			}
			last = 0
			continue
		}
		p := pos + off
		if f.kind == fbScalar {
			if !v.at(p, f.size, f.size) {
				return fmt.Errorf("%s: field %d: %w", spec.name, id, errFlatVerify)
			}
			last = v.b[p]
			continue
		}
		q, err := v.offset(p)
		if err != nil {
			return fmt.Errorf("%s: field %d: %w", spec.name, id, err)
		}
		switch f.kind {
		case fbString:
			n, err := v.vector(q, 1)
			if err != nil || q+4+n >= len(v.b) || v.b[q+4+n] != 0 {
				return fmt.Errorf("%s: field %d: a string %w", spec.name, id, errFlatVerify)
			}
		case fbScalars:
			if _, err := v.vector(q, f.size); err != nil {
				return fmt.Errorf("%s: field %d: %w", spec.name, id, err)
			}
		case fbTable:
			if err := v.table(q, f.spec, depth+1); err != nil {
				return err
			}
		case fbTables:
			n, err := v.vector(q, 4)
			if err != nil {
				return fmt.Errorf("%s: field %d: %w", spec.name, id, err)
			}
			if spec == fbArrowField && id == 5 {
				children = n
			}
			if int64(v.tables)+int64(n) > int64(v.limit) {
				return fmt.Errorf("more than %d tables", v.limit)
			}
			for i := range n {
				e := q + 4 + 4*i
				t := e + int(binary.LittleEndian.Uint32(v.b[e:]))
				if err := v.table(t, f.spec, depth+1); err != nil {
					return err
				}
			}
		case fbUnion:
			var member *fbSpec
			switch spec {
			case fbMessage:
				if last == 1 {
					member = fbSchema
				}
			case fbArrowField:
				// Arrow: "Type metadata cannot be none", "Unrecognized type".
				if member = fbTypes[last]; member == nil {
					return fmt.Errorf("a field of type %d, which Arrow does not read", last)
				}
			}
			if member == nil {
				continue // the decoder refuses it
			}
			if err := v.table(q, member, depth+1); err != nil {
				return err
			}
		}
	}
	switch spec {
	case fbInt:
		return v.intWidth(pos)
	case fbDecimal, fbTime:
		return v.widths(pos, spec)
	case fbArrowField:
		// Arrow: "List must have exactly 1 child field", and so on.
		typ := v.b[pos+v.fieldAt(pos, 2)]
		if want, ok := map[uint8]int{12: 1, 16: 1, 17: 1, 21: 1, 22: 2, 25: 1, 26: 1}[typ]; ok && v.fieldAt(pos, 2) != 0 && children != want {
			return fmt.Errorf("a field of type %d with %d children, which Arrow does not read", typ, children)
		}
	}
	return nil
}

// fieldAt is the offset in the table at pos of its field id, 0 absent.
func (v *fbVerifier) fieldAt(pos, id int) int {
	vt := pos - int(int32(binary.LittleEndian.Uint32(v.b[pos:])))
	vtLen := int(binary.LittleEndian.Uint16(v.b[vt:]))
	if 4+2*id+2 > vtLen {
		return 0
	}
	return int(binary.LittleEndian.Uint16(v.b[vt+4+2*id:]))
}

// i32At is the int32 field id of the table at pos, def when absent.
func (v *fbVerifier) i32At(pos, id int, def int32) int32 {
	if off := v.fieldAt(pos, id); off != 0 {
		return int32(binary.LittleEndian.Uint32(v.b[pos+off:]))
	}
	return def
}

// widths: Arrow reads a Decimal of 32, 64, 128 or 256 bits (128 by
// default) and a precision from 1 to 9, 18, 38 or 76 by them, and a Time
// of 32 bits in seconds or milliseconds (the default; a unit Arrow does
// not know is seconds to it), 64 in micro- or nanoseconds.
func (v *fbVerifier) widths(pos int, spec *fbSpec) error {
	if spec == fbDecimal {
		bits, precision := v.i32At(pos, 2, 128), v.i32At(pos, 0, 0)
		most, ok := map[int32]int32{32: 9, 64: 18, 128: 38, 256: 76}[bits]
		if !ok || precision < 1 || precision > most {
			return fmt.Errorf("a Decimal of %d bits and precision %d, which Arrow does not read", bits, precision)
		}
		return nil
	}
	unit := int32(1) // MILLISECOND
	if off := v.fieldAt(pos, 0); off != 0 {
		unit = int32(int16(binary.LittleEndian.Uint16(v.b[pos+off:])))
	}
	bits, want := v.i32At(pos, 1, 32), int32(32) // a unit Arrow does not know reads as seconds
	if unit == 2 || unit == 3 {
		want = 64
	}
	if bits != want {
		return fmt.Errorf("a Time in unit %d of %d bits, which Arrow does not read", unit, bits)
	}
	return nil
}

// intWidth: Arrow reads an Int of 8, 16, 32 or 64 bits only.
func (v *fbVerifier) intWidth(pos int) error {
	vt := pos - int(int32(binary.LittleEndian.Uint32(v.b[pos:])))
	vtLen := int(binary.LittleEndian.Uint16(v.b[vt:]))
	bits := 0
	if vtLen >= 6 {
		if off := int(binary.LittleEndian.Uint16(v.b[vt+4:])); off != 0 {
			bits = int(int32(binary.LittleEndian.Uint32(v.b[pos+off:])))
		}
	}
	switch bits {
	case 8, 16, 32, 64:
		return nil
	}
	return fmt.Errorf("an Int of %d bits, which Arrow does not read", bits)
}
