package audit

import (
	"errors"
	"fmt"
	"strings"
)

// The row-group statistics of a Parquet footer, for claimsHold: what each
// row group claims of each leaf column (min and max, the deprecated ones
// too, and the null count), with the leaves' types. decodeFooterClaims
// reads a footer decodeFooterSchema has read first, so the structure is
// known to be what parquet.thrift declares; this walk only picks fields
// out and skips the rest.

// leafColumn is a leaf of a Parquet schema and how its claims are ordered.
type leafColumn struct {
	path     []string // from the root's child to the leaf
	repeated bool     // itself or an ancestor is repeated (a list's or a map's)
	kind     claimKind
	physical int32
	text     bool  // a byte array DuckDB reads as VARCHAR
	scale    int32 // of a decimal
	unit     int   // of a time or timestamp: 1 millis, 2 micros, 3 nanos
	utc      bool  // a time or timestamp adjusted to UTC
	// fullWidth: an integer of its physical type's width (no 8 or 16
	// bit annotation), read by DuckDB as its plain value (claimsgo.go).
	fullWidth bool
}

// claimKind is how a leaf's min and max claims are read and ordered.
type claimKind int

const (
	claimUnchecked claimKind = iota // no order lakewap reads (INTERVAL, FLOAT16, ...)
	claimBool
	claimInt  // signed, INT32 or INT64
	claimUint // unsigned, INT32 or INT64
	claimFloat
	claimDouble
	claimBytes // byte-wise unsigned: strings, enums, JSON, binary
	claimUUID
	claimDecimal
	claimDate
	claimTimestamp
	claimTime
	claimInt96 // a time of a Julian day and nanoseconds, in DuckDB's microseconds
)

// chunkClaims are the statistics a row group's column chunk claims.
type chunkClaims struct {
	min, max, minValue, maxValue []byte // nil when absent
	nullCount                    int64
	hasNullCount                 bool
}

// rowGroupClaims is a row group's row count and its chunks' claims, in
// leaf order.
type rowGroupClaims struct {
	rows   int64
	chunks []chunkClaims
}

// schemaElem is what decodeFooterClaims keeps of a SchemaElement.
type schemaElem struct {
	name                      string
	physical, converted       int32
	repetition, children      int32
	scale, precision          int32
	logical                   int16 // the LogicalType union's field id, 0 for none
	logicalScale, logicalUnit int32
	logicalPrecision          int32
	intSigned                 bool
	intBits                   int8 // IntType's bitWidth
	utc                       bool // TimeType's and TimestampType's isAdjustedToUTC
}

// decodeFooterClaims is the leaves and the row groups' claims of the
// FileMetaData buf.
func decodeFooterClaims(buf []byte) ([]leafColumn, []rowGroupClaims, error) {
	d := &compactReader{b: buf}
	var elems []schemaElem
	var groups []rowGroupClaims
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch {
		case id == 2 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				e, err := d.claimSchemaElement()
				if err != nil {
					return true, err
				}
				elems = append(elems, e)
			}
			return true, nil
		case id == 4 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				g, err := d.rowGroupClaims()
				if err != nil {
					return true, err
				}
				groups = append(groups, g)
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	leaves, err := claimLeaves(elems)
	if err != nil {
		return nil, nil, err
	}
	for i, g := range groups {
		if len(g.chunks) != len(leaves) {
			return nil, nil, fmt.Errorf("row group %d has %d column chunks for %d leaf columns", i, len(g.chunks), len(leaves))
		}
	}
	return leaves, groups, nil
}

func (d *compactReader) claimSchemaElement() (schemaElem, error) {
	e := schemaElem{physical: -1, converted: -1, repetition: -1}
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch {
		case typ == ctI32 && (id == 1 || id == 3 || id == 5 || id == 6 || id == 7 || id == 8):
			v, err := d.i32()
			switch id {
			case 1:
				e.physical = v
			case 3:
				e.repetition = v
			case 5:
				e.children = v
			case 6:
				e.converted = v
			case 7:
				e.scale = v
			case 8:
				e.precision = v
			}
			return true, err
		case typ == ctBinary && id == 4:
			b, err := d.binary(footerMaxName)
			e.name = string(b)
			return true, err
		case typ == ctStruct && id == 10:
			return true, d.logicalType(&e)
		}
		return false, nil
	})
	return e, err
}

// logicalType reads a LogicalType union into e: which member is set and,
// for a decimal, time, timestamp or integer, its parameters.
func (d *compactReader) logicalType(e *schemaElem) error {
	return d.fields(func(id int16, typ byte) (bool, error) {
		if typ != ctStruct {
			return false, nil
		}
		e.logical = id
		return true, d.fields(func(f int16, typ byte) (bool, error) {
			switch {
			case id == 5 && (f == 1 || f == 2) && typ == ctI32: // DecimalType.scale, precision
				v, err := d.i32()
				if f == 1 {
					e.logicalScale = v
				} else {
					e.logicalPrecision = v
				}
				return true, err
			case (id == 7 || id == 8) && f == 1: // isAdjustedToUTC, a bool
				e.utc = typ == ctTrue
				return false, nil
			case (id == 7 || id == 8) && f == 2 && typ == ctStruct: // TimeUnit
				return true, d.fields(func(u int16, typ byte) (bool, error) {
					e.logicalUnit = int32(u)
					return false, nil
				})
			case id == 10 && f == 1 && typ == ctByte: // IntType.bitWidth
				v, err := d.byte()
				e.intBits = int8(v)
				return true, err
			case id == 10 && f == 2: // IntType.isSigned
				e.intSigned = typ == ctTrue
				return false, nil
			}
			return false, nil
		})
	})
}

func (d *compactReader) rowGroupClaims() (rowGroupClaims, error) {
	var g rowGroupClaims
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch {
		case id == 1 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				var c chunkClaims
				err := d.fields(func(id int16, typ byte) (bool, error) {
					if id != 3 || typ != ctStruct { // ColumnChunk.meta_data
						return false, nil
					}
					return true, d.fields(func(id int16, typ byte) (bool, error) {
						if id != 12 || typ != ctStruct { // ColumnMetaData.statistics
							return false, nil
						}
						return true, d.statistics(&c)
					})
				})
				if err != nil {
					return true, err
				}
				g.chunks = append(g.chunks, c)
			}
			return true, nil
		case id == 3 && typ == ctI64:
			v, err := d.i64()
			g.rows = v
			return true, err
		}
		return false, nil
	})
	return g, err
}

func (d *compactReader) statistics(c *chunkClaims) error {
	return d.fields(func(id int16, typ byte) (bool, error) {
		switch {
		case typ == ctBinary && (id == 1 || id == 2 || id == 5 || id == 6):
			b, err := d.binary(len(d.b))
			switch id {
			case 1:
				c.max = b
			case 2:
				c.min = b
			case 5:
				c.maxValue = b
			case 6:
				c.minValue = b
			}
			return true, err
		case typ == ctI64 && id == 3:
			v, err := d.i64()
			c.nullCount, c.hasNullCount = v, true
			return true, err
		}
		return false, nil
	})
}

// claimLeaves walks the schema tree (depth first, the root first) to its
// leaves, in the order of the column chunks.
func claimLeaves(elems []schemaElem) ([]leafColumn, error) {
	if len(elems) == 0 {
		return nil, errors.New("no schema")
	}
	var leaves []leafColumn
	i := 1
	var walk func(path []string, repeated bool, depth int) error
	walk = func(path []string, repeated bool, depth int) error {
		if i >= len(elems) || depth > footerMaxDepth {
			return errors.New("schema tree does not add up")
		}
		e := elems[i]
		i++
		p := append(append([]string(nil), path...), e.name)
		rep := repeated || e.repetition == 2
		if e.children == 0 {
			leaves = append(leaves, leafOf(e, p, rep))
			return nil
		}
		for range e.children {
			if err := walk(p, rep, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for range elems[0].children {
		if err := walk(nil, false, 1); err != nil {
			return nil, err
		}
	}
	if i != len(elems) {
		return nil, errors.New("schema tree does not add up")
	}
	return leaves, nil
}

// Parquet's physical types, converted types and LogicalType members
// (parquet.thrift) that decide a leaf's order.
const (
	ptBoolean, ptInt32, ptInt64, ptInt96, ptFloat, ptDouble, ptByteArray, ptFixed = 0, 1, 2, 3, 4, 5, 6, 7

	cvUTF8, cvEnum, cvDecimal, cvDate, cvTimeMillis, cvTimeMicros, cvTimestampMillis, cvTimestampMicros = 0, 4, 5, 6, 7, 8, 9, 10
	cvUint8, cvUint64, cvInt8, cvInt64, cvJSON, cvBSON, cvInterval                                      = 11, 14, 15, 18, 19, 20, 21
	cvUint32, cvInt32                                                                                   = 13, 17

	ltString, ltEnum, ltDecimal, ltDate, ltTime, ltTimestamp, ltInteger, ltJSON, ltBSON, ltUUID = 1, 4, 5, 6, 7, 8, 10, 12, 13, 14
	ltUnknown                                                                                   = 11 // NULLs only
)

// leafOf is the leaf e at path and the order of its claims. A leaf whose
// type lakewap does not order (INTERVAL, FLOAT16, VARIANT, GEOMETRY,
// GEOGRAPHY, a decimal wider than DuckDB's 38 digits, an INT96 of a
// logical or converted type, a type it does not know) is claimUnchecked:
// claimsHold refuses a min or max claimed for it (readers that know the
// type may skip by it). A plain INT96 is claimInt96: its claims are read
// as DuckDB 1.5.6 reads them and skips row groups by them.
func leafOf(e schemaElem, path []string, repeated bool) leafColumn {
	l := leafColumn{path: path, repeated: repeated, physical: e.physical}
	lt, cv := e.logical, e.converted
	switch {
	case lt == ltDecimal || (lt == 0 && cv == cvDecimal):
		l.kind, l.scale = claimDecimal, e.scale
		if lt == ltDecimal {
			l.scale = e.logicalScale
		}
		precision := e.precision
		if lt == ltDecimal {
			precision = e.logicalPrecision
		}
		// DuckDB reads a decimal of more than 38 digits as a DOUBLE.
		if precision < 1 || precision > 38 || l.scale < 0 || l.scale > precision ||
			e.physical != ptInt32 && e.physical != ptInt64 && e.physical != ptFixed && e.physical != ptByteArray {
			l.kind = claimUnchecked
		}
		return l
	}
	switch e.physical {
	case ptBoolean:
		if lt == 0 && cv == -1 {
			l.kind = claimBool
		}
	case ptInt32, ptInt64:
		switch {
		case lt == ltDate || (lt == 0 && cv == cvDate):
			if e.physical == ptInt32 {
				l.kind = claimDate
			}
		case lt == ltTimestamp, lt == 0 && (cv == cvTimestampMillis || cv == cvTimestampMicros):
			l.kind, l.unit, l.utc = claimTimestamp, int(e.logicalUnit), lt == ltTimestamp && e.utc
			if lt == 0 {
				l.unit = int(cv - cvTimestampMillis + 1)
			}
		case lt == ltTime, lt == 0 && (cv == cvTimeMillis || cv == cvTimeMicros):
			l.kind, l.unit = claimTime, int(e.logicalUnit)
			if lt == 0 {
				l.unit = int(cv - cvTimeMillis + 1)
			}
		case lt == ltInteger && !e.intSigned, lt == 0 && cv >= cvUint8 && cv <= cvUint64:
			l.kind = claimUint
		case lt == ltInteger, lt == 0 && (cv == -1 || cv >= cvInt8 && cv <= cvInt64):
			l.kind = claimInt
		}
		if l.kind == claimInt || l.kind == claimUint {
			bits := map[int32]int8{ptInt32: 32, ptInt64: 64}[e.physical]
			full := map[int32]int8{cvUint32: 32, cvUint64: 64, cvInt32: 32, cvInt64: 64}
			l.fullWidth = (lt == 0 || e.intBits == bits) && (cv == -1 || full[cv] == bits)
		}
	case ptInt96:
		if lt == 0 && cv == -1 {
			l.kind = claimInt96
		}
	case ptFloat:
		if lt == 0 && cv == -1 {
			l.kind = claimFloat
		}
	case ptDouble:
		if lt == 0 && cv == -1 {
			l.kind = claimDouble
		}
	case ptByteArray:
		switch lt {
		case 0, ltString, ltEnum, ltJSON, ltBSON:
			if cv == -1 || cv == cvUTF8 || cv == cvEnum || cv == cvJSON || cv == cvBSON {
				l.kind = claimBytes
				l.text = lt == ltString || lt == ltEnum || lt == ltJSON || cv == cvUTF8 || cv == cvEnum || cv == cvJSON
			}
		}
	case ptFixed:
		switch {
		case lt == ltUUID:
			l.kind = claimUUID
		case lt == 0 && cv == -1:
			l.kind = claimBytes
		}
	}
	if l.kind == claimTimestamp || l.kind == claimTime {
		if l.unit < 1 || l.unit > 3 {
			l.kind = claimUnchecked
		}
	}
	return l
}

// readUnit is the unit in which DuckDB reads timestamp l: its own, but
// microseconds, truncated toward zero, for nanoseconds adjusted to UTC,
// which it reads as a TIMESTAMP WITH TIME ZONE
// (TestReview46TimestampsInNanosecondsWithAZonePass).
func (l leafColumn) readUnit() int {
	if l.unit == 3 && l.utc {
		return 2
	}
	return l.unit
}

// name is the leaf's dotted path, for messages.
func (l leafColumn) name() string { return strings.Join(l.path, ".") }
