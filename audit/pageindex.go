package audit

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// The page index: readers skip pages by it. A ColumnIndex gives each data
// page of a column chunk its min, max, null count and whether it holds
// only NULLs; an OffsetIndex gives each page's place and first row.
// DuckDB 2.0 (not 1.5, the engine's) skips pages by the ColumnIndex for a
// filter on the column (WHERE id = 7 read 0 rows of a pyarrow file whose
// first page's bounds were forged, and 1 in a full scan), as Spark's
// parquet-mr does; those readers then read the pages of the other columns
// by their OffsetIndex. So readerIndexes checks both against the file:
// the OffsetIndex against the pages' headers (place, size, first row,
// counted from the values, or from the repetition levels of a repeated
// column), the ColumnIndex against the data DuckDB reads, page by page by
// file_row_number, a statement per column. A ColumnIndex of a type the
// audit does not compare (FLOAT16, INTERVAL) is refused; a plain INT96's
// is compared in microseconds, as claimInt96 compares row groups' claims
// (no reader at hand skips pages by INT96 bounds, nor writer writes them:
// TestInt96PageBoundsAreCompared, DESIGN); the bounds of a repeated column's leaf are not compared (no
// reader here pushes a filter into a list's elements), its OffsetIndex is.
//
// DuckDB 2.0 also skips a PLAIN page by the Statistics in its header,
// which pyarrow writes by default (a forged min: WHERE id = 7 read 0 rows,
// 1 in a full scan): headerClaims compares them with the data alike.

// Bounds of the page index's reading.
const pageIndexMaxBytes = 16 << 20 // a ColumnIndex or an OffsetIndex

// logicalType reads the LogicalType union in b (checked by structOf)
// into nt.
func logicalType(b []byte, nt *nodeTypes) {
	d := &compactReader{b: b}
	_ = d.fields(func(id int16, t byte) (bool, error) {
		if t != ctStruct {
			return false, nil
		}
		nt.logical = id
		nt.logicalMembers = min(nt.logicalMembers+1, 2)
		switch id {
		case 5: // DecimalType: scale, precision
			return true, d.fields(func(id int16, t byte) (bool, error) {
				if (id == 1 || id == 2) && t == ctI32 {
					v, err := d.i32()
					if id == 1 {
						nt.logicalScale = v
					} else {
						nt.logicalPrecision = v
					}
					return true, err
				}
				return false, nil
			})
		case 7, 8: // TimeType, TimestampType: isAdjustedToUTC, unit
			return true, d.fields(func(id int16, t byte) (bool, error) {
				if id == 1 && (t == ctTrue || t == ctFalse) {
					nt.utc = t == ctTrue
					return true, nil
				}
				if id == 2 && t == ctStruct {
					return true, d.fields(func(id int16, t byte) (bool, error) {
						if t == ctStruct {
							nt.unit = id
						}
						return false, nil
					})
				}
				return false, nil
			})
		case 10: // IntType: bitWidth, isSigned
			return true, d.fields(func(id int16, t byte) (bool, error) {
				if id == 2 && (t == ctTrue || t == ctFalse) {
					nt.unsigned = t == ctFalse
					return true, nil
				}
				if id == 1 && t == ctByte {
					v, err := d.byte()
					nt.intBits = int8(v)
					return true, err
				}
				return false, nil
			})
		}
		return false, nil
	})
}

// pageRows sets each data page's first row (in its row group) and checks
// that they add up to the row group's rows.
func pageRows(f *os.File, c chunkMeta, pages []pageInfo, zd **zstd.Decoder) error {
	var row int64
	for i := range pages {
		p := &pages[i]
		if !p.data() {
			continue
		}
		p.firstRow = row
		var n int64
		switch {
		case c.maxRep == 0:
			n = int64(p.h.numValues)
		case p.h.v2:
			n = int64(p.h.numRows)
		default:
			b, err := readBody(f, c, *p, zd)
			if err != nil {
				return err
			}
			rep, _, err := v1Levels(c, p.h, b)
			if err != nil {
				return err
			}
			z, first, err := rleZeros(rep, bits.Len(uint(c.maxRep)), int(p.h.numValues))
			if err != nil {
				return err
			}
			if !first {
				return unverifiable("a page at %d that begins inside a row", p.offset)
			}
			n = int64(z)
		}
		if n <= 0 {
			return unverifiable("a data page at %d of %d rows", p.offset, n)
		}
		row += n
	}
	if row != c.rows {
		return unverifiable("pages of %d rows in a row group of %d", row, c.rows)
	}
	return nil
}

// rleZeros counts the zeros among the first n levels of RLE/bit-packed
// hybrid b of bit width bw, and says whether the first is zero.
func rleZeros(b []byte, bw, n int) (int, bool, error) {
	zeros, got := 0, 0
	first := false
	per := (bw + 7) / 8
	for got < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false, unverifiable("repetition levels cut")
		}
		b = b[k:]
		if h&1 == 0 { // a run of one value
			cnt := h >> 1
			if cnt == 0 || len(b) < per {
				return 0, false, unverifiable("a repetition level run cut")
			}
			var v uint64
			for i := range per {
				v |= uint64(b[i]) << (8 * i)
			}
			b = b[per:]
			m := int(min(cnt, uint64(n-got)))
			if got == 0 {
				first = v == 0
			}
			if v == 0 {
				zeros += m
			}
			got += m
			continue
		}
		groups := h >> 1 // of 8 values, bit-packed
		if groups == 0 || groups > uint64(len(b)) || groups*uint64(bw) > uint64(len(b)) {
			return 0, false, unverifiable("bit-packed repetition levels cut")
		}
		vals := int(groups) * 8
		for i := 0; i < vals && got < n; i++ {
			var v uint
			for j := range bw {
				bit := i*bw + j
				v |= uint(b[bit/8]>>(bit%8)&1) << j
			}
			if got == 0 {
				first = v == 0
			}
			if v == 0 {
				zeros++
			}
			got++
		}
		b = b[int(groups)*bw:]
	}
	return zeros, first, nil
}

// readIndex reads the n bytes of a page index structure at off.
func readIndex(f *os.File, size, off, n int64) ([]byte, error) {
	if off < 4 || n <= 0 || n > pageIndexMaxBytes || off+n > size {
		return nil, unverifiable("%d bytes at %d", n, off)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

type pageLocation struct {
	offset   int64
	size     int32
	firstRow int64
}

// offsetIndex reads an OffsetIndex: its page locations.
func offsetIndex(b []byte) ([]pageLocation, error) {
	d := &compactReader{b: b}
	var locs []pageLocation
	seen := false
	err := d.fields(func(id int16, t byte) (bool, error) {
		if id != 1 || t != ctList {
			return false, nil
		}
		seen = true
		et, n, err := d.list()
		if err != nil || et != ctStruct {
			return true, errOr(err, unverifiable("page locations of type %d", et))
		}
		for range n {
			var l pageLocation
			var got [3]bool
			err := d.fields(func(id int16, t byte) (bool, error) {
				var err error
				switch {
				case id == 1 && t == ctI64:
					l.offset, err = d.i64()
				case id == 2 && t == ctI32:
					l.size, err = d.i32()
				case id == 3 && t == ctI64:
					l.firstRow, err = d.i64()
				default:
					return false, nil
				}
				got[id-1] = true
				return true, err
			})
			if err != nil {
				return true, err
			}
			if got != [3]bool{true, true, true} {
				return true, unverifiable("a page location without a field")
			}
			locs = append(locs, l)
		}
		return true, nil
	})
	if err == nil && !seen {
		err = unverifiable("no page locations")
	}
	return locs, err
}

func errOr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

type columnIndexClaims struct {
	nullPages  []bool
	mins, maxs [][]byte
	order      int32 // 0 UNORDERED, 1 ASCENDING, 2 DESCENDING
	nullCounts []int64
}

// columnIndex reads a ColumnIndex.
func columnIndex(b []byte) (columnIndexClaims, error) {
	d := &compactReader{b: b}
	var ci columnIndexClaims
	ci.order = -1
	var seen [4]bool
	binaries := func() ([][]byte, error) {
		et, n, err := d.list()
		if err != nil || et != ctBinary {
			return nil, errOr(err, unverifiable("bounds of type %d", et))
		}
		out := make([][]byte, 0, n)
		for range n {
			v, err := d.binary(len(d.b))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	err := d.fields(func(id int16, t byte) (bool, error) {
		var err error
		switch {
		case id == 1 && t == ctList:
			var et byte
			var n int
			if et, n, err = d.list(); err == nil && et != ctTrue && et != ctFalse {
				err = unverifiable("null_pages of type %d", et)
			}
			for k := 0; k < n && err == nil; k++ {
				var c byte
				c, err = d.byte()
				ci.nullPages = append(ci.nullPages, c == ctTrue) // as Thrift reads a bool of a list
			}
		case id == 2 && t == ctList:
			ci.mins, err = binaries()
		case id == 3 && t == ctList:
			ci.maxs, err = binaries()
		case id == 4 && t == ctI32:
			ci.order, err = d.i32()
		case id == 5 && t == ctList:
			var et byte
			var n int
			if et, n, err = d.list(); err == nil && et != ctI64 {
				err = unverifiable("null_counts of type %d", et)
			}
			ci.nullCounts = []int64{}
			for k := 0; k < n && err == nil; k++ {
				var v int64
				v, err = d.i64()
				ci.nullCounts = append(ci.nullCounts, v)
			}
		default:
			return false, nil
		}
		if id <= 4 {
			seen[id-1] = true
		}
		return true, err
	})
	if err != nil {
		return ci, err
	}
	if seen != [4]bool{true, true, true, true} || ci.order < 0 || ci.order > 2 {
		return ci, unverifiable("a column index without a required field")
	}
	return ci, nil
}

// A domain is how a column's bounds and its data compare: the bounds
// decoded from their plain encoding into integers, floats or bytes, and
// the data as DuckDB reads it made into the same (a date its days, a
// timestamp its units since the epoch, text its UTF-8 bytes), in the
// order the Parquet format gives the column's logical type.
type domain struct {
	kind byte // 'i' integer (big.Int), 'f' float, 'b' bytes
	// expr makes a value DuckDB reads into the domain's; it keeps DuckDB's
	// order, so that a page's min and max are taken before it.
	nanos   bool   // a time in nanoseconds, which DuckDB reads rounded to the microsecond
	sqlType string // of the bounds' literals and the data's expression
	expr    string // the data's, with %s for the column
	pre     string // a row's value before its page's min and max are taken, if not DuckDB's
	decode  func([]byte) (bound, error)
	scale   int32 // of a DECIMAL
}

type bound struct {
	i  *big.Int
	f  float64
	b  []byte
	ok bool // decoded
}

func (b bound) set() bool { return b.ok }

func chunkDomain(c chunkMeta) (domain, error) {
	d, err := chunkDomainOf(c)
	if dec := d.decode; err == nil && dec != nil {
		d.decode = func(v []byte) (bound, error) {
			b, err := dec(v)
			b.ok = err == nil
			return b, err
		}
	}
	return d, err
}

func chunkDomainOf(c chunkMeta) (domain, error) {
	t := c.types
	decimal := t.converted == 5 || t.logical == 5
	scale := t.scale
	if t.logical == 5 {
		scale = t.logicalScale
	}
	le := func(signed bool) func([]byte) (bound, error) {
		return func(v []byte) (bound, error) {
			switch {
			case len(v) == 4 && signed:
				return bound{i: big.NewInt(int64(int32(binary.LittleEndian.Uint32(v))))}, nil
			case len(v) == 4:
				return bound{i: new(big.Int).SetUint64(uint64(binary.LittleEndian.Uint32(v)))}, nil
			case len(v) == 8 && signed:
				return bound{i: big.NewInt(int64(binary.LittleEndian.Uint64(v)))}, nil
			case len(v) == 8:
				return bound{i: new(big.Int).SetUint64(binary.LittleEndian.Uint64(v))}, nil
			}
			return bound{}, unverifiable("a bound of %d bytes", len(v))
		}
	}
	bigEndian := func(v []byte) (bound, error) {
		if len(v) == 0 || len(v) > 32 {
			return bound{}, unverifiable("a decimal bound of %d bytes", len(v))
		}
		i := new(big.Int).SetBytes(v)
		if v[0]&0x80 != 0 {
			i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
		}
		return bound{i: i}, nil
	}
	raw := func(v []byte) (bound, error) { return bound{b: v}, nil }
	scaled := func(dec func([]byte) (bound, error), m int64) func([]byte) (bound, error) { // a unit's multiple
		return func(v []byte) (bound, error) {
			b, err := dec(v)
			if err == nil {
				b.i.Mul(b.i, big.NewInt(m))
			}
			return b, err
		}
	}
	ints := domain{kind: 'i', sqlType: "HUGEINT", expr: "CAST(%s AS HUGEINT)", decode: le(true)}
	switch c.physical {
	case 0: // BOOLEAN
		return domain{kind: 'i', sqlType: "HUGEINT", expr: "CAST(CAST(%s AS INTEGER) AS HUGEINT)", decode: func(v []byte) (bound, error) {
			if len(v) != 1 || v[0] > 1 {
				return bound{}, unverifiable("a boolean bound %x", v)
			}
			return bound{i: big.NewInt(int64(v[0]))}, nil
		}}, nil
	case 1, 2: // INT32, INT64
		switch {
		case decimal:
			if scale < 0 || scale > 38 {
				return domain{}, unverifiable("a decimal of scale %d", scale)
			}
			d := ints
			d.sqlType, d.expr, d.scale = fmt.Sprintf("DECIMAL(38, %d)", scale), fmt.Sprintf("CAST(%%s AS DECIMAL(38, %d))", scale), scale
			return d, nil
		case t.converted == 6 || t.logical == 6: // DATE
			ints.expr = "CAST(%s - DATE '1970-01-01' AS HUGEINT)"
			return ints, nil
		case t.converted == 9 || (t.logical == 8 && t.unit == 1): // TIMESTAMP_MILLIS
			ints.expr = "CAST(epoch_ms(%s) AS HUGEINT)"
			return ints, nil
		case t.converted == 10 || (t.logical == 8 && t.unit == 2):
			ints.expr = "CAST(epoch_us(%s) AS HUGEINT)"
			return ints, nil
		case t.logical == 8 && t.unit == 3 && t.utc:
			// DuckDB reads nanoseconds adjusted to UTC as a TIMESTAMP
			// WITH TIME ZONE, in microseconds truncated toward zero, and
			// their bounds so: compared so, the bounds truncated as the
			// values are, which keeps their order
			// (TestReview46TimestampsInNanosecondsWithAZonePass).
			ints.expr = "CAST(epoch_us(%s) AS HUGEINT)"
			dec := ints.decode
			ints.decode = func(v []byte) (bound, error) {
				b, err := dec(v)
				if err == nil {
					b.i.Quo(b.i, big.NewInt(1000))
				}
				return b, err
			}
			return ints, nil
		case t.logical == 8 && t.unit == 3:
			ints.expr = "CAST(epoch_ns(%s) AS HUGEINT)"
			return ints, nil
		case t.converted == 7 || t.converted == 8 || t.logical == 7: // TIME, in microseconds as DuckDB reads it
			ints.expr = "CAST(date_diff('microsecond', TIME '00:00:00', CAST(%s AS TIME)) AS HUGEINT)"
			switch {
			case t.converted == 7 || (t.logical == 7 && t.unit == 1):
				ints.decode = scaled(le(true), 1000)
			case t.logical == 7 && t.unit == 3:
				ints.nanos = true // read rounded to the microsecond
			}
			return ints, nil
		case t.logical == 8:
			return domain{}, unverifiable("a timestamp of unit %d", t.unit)
		case (t.converted >= 11 && t.converted <= 14) || (t.logical == 10 && t.unsigned):
			ints.decode = le(false)
			return ints, nil
		case t.logical != 0 && t.logical != 10 && t.logical != 11:
			return domain{}, unverifiable("an integer of logical type %d", t.logical)
		}
		return ints, nil
	case 3: // INT96, as claimInt96: in microseconds, as DuckDB reads it
		if t.converted != -1 || t.logical != 0 {
			return domain{}, unverifiable("an INT96 column of logical type %d, converted type %d", t.logical, t.converted)
		}
		ints.expr = "CAST(epoch_us(%s) AS HUGEINT)"
		ints.decode = func(v []byte) (bound, error) {
			i, err := int96Micros(v)
			if err != nil {
				return bound{}, unverifiable("an INT96 bound: %v", err)
			}
			return bound{i: i}, nil
		}
		return ints, nil
	case 4, 5: // FLOAT, DOUBLE
		// NaN stays: DuckDB orders it above every number, so a page holding
		// NaN under bounds that leave it out is refused, as claimsHold
		// refuses such a row group (readers skip it for x > c).
		return domain{kind: 'f', sqlType: "DOUBLE", expr: "CAST(%s AS DOUBLE)", decode: func(v []byte) (bound, error) {
			var f float64
			switch {
			case len(v) == 4 && c.physical == 4:
				f = float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
			case len(v) == 8 && c.physical == 5:
				f = math.Float64frombits(binary.LittleEndian.Uint64(v))
			default:
				return bound{}, unverifiable("a float bound of %d bytes", len(v))
			}
			if math.IsNaN(f) {
				return bound{}, unverifiable("a NaN bound")
			}
			return bound{f: f}, nil
		}}, nil
	case 6, 7: // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
		switch {
		case decimal:
			if scale < 0 || scale > 38 {
				return domain{}, unverifiable("a decimal of scale %d", scale)
			}
			return domain{kind: 'i', sqlType: fmt.Sprintf("DECIMAL(38, %d)", scale), expr: fmt.Sprintf("CAST(%%s AS DECIMAL(38, %d))", scale), decode: bigEndian, scale: scale}, nil
		case c.physical == 6 && (t.converted == 0 || t.converted == 4 || t.converted == 19 || t.logical == 1 || t.logical == 4 || t.logical == 12):
			// Text is ordered as VARCHAR (bytewise) before it is made bytes:
			// an ENUM DuckDB reads would order by its dictionary.
			return domain{kind: 'b', sqlType: "BLOB", pre: "CAST(%s AS VARCHAR)", expr: "encode(CAST(%s AS VARCHAR))", decode: raw}, nil
		case c.physical == 7 && t.logical == 14: // UUID
			return domain{kind: 'b', sqlType: "BLOB", expr: "from_hex(replace(CAST(%s AS VARCHAR), '-', ''))", decode: raw}, nil
		case t.converted == 21 || t.logical == 15: // INTERVAL, FLOAT16
			return domain{}, unverifiable("an interval or float16 column")
		case t.logical != 0 && t.logical != 13 && t.logical != 11: // not BSON, UNKNOWN
			return domain{}, unverifiable("a binary column of logical type %d", t.logical)
		}
		return domain{kind: 'b', sqlType: "BLOB", expr: "CAST(%s AS BLOB)", decode: raw}, nil
	}
	return domain{}, unverifiable("physical type %d", c.physical)
}

func (d domain) cmp(a, b bound) int {
	switch d.kind {
	case 'i':
		return a.i.Cmp(b.i)
	case 'f':
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	}
	return bytes.Compare(a.b, b.b)
}

func (d domain) literal(v bound) string {
	switch d.kind {
	case 'i':
		s := v.i.String()
		if d.scale > 0 {
			neg := strings.HasPrefix(s, "-")
			s = strings.TrimPrefix(s, "-")
			for len(s) <= int(d.scale) {
				s = "0" + s
			}
			s = s[:len(s)-int(d.scale)] + "." + s[len(s)-int(d.scale):]
			if neg {
				s = "-" + s
			}
		}
		return fmt.Sprintf("CAST('%s' AS %s)", s, d.sqlType)
	case 'f':
		return fmt.Sprintf("CAST('%s' AS DOUBLE)", strconv.FormatFloat(v.f, 'g', -1, 64))
	}
	return fmt.Sprintf("from_hex('%s')", hex.EncodeToString(v.b))
}

// render is a bound in a refusal.
func (d domain) render(v bound) string {
	switch d.kind {
	case 'i', 'f':
		return strings.SplitN(d.literal(v), "'", 3)[1]
	}
	return renderValue(6, v.b)
}

// pageClaim is what a ColumnIndex, or a page's header, says of one data
// page.
type pageClaim struct {
	source           string // "column index", "page header"
	chunk            int    // index in the file's chunks
	page             int    // among the chunk's data pages
	lo, hi           int64
	nullPage         bool
	min, max         bound
	lmin, lmax       bound // a page header's legacy min and max, beside its min_value and max_value
	nulls            int64 // -1: not given
	domain           domain
	rowGroup         int
	path, minS, maxS string
}

// checkPageIndex checks chunk c's OffsetIndex against its pages, and
// returns the claims of its ColumnIndex for the data to be compared with
// (none for a repeated column's leaf). rowBase is the row group's first
// row in the file.
func checkPageIndex(f *os.File, size int64, c chunkMeta, ci int, pages []pageInfo, rowBase int64, zd **zstd.Decoder) ([]pageClaim, error) {
	if err := pageRows(f, c, pages, zd); err != nil {
		return nil, err
	}
	var data []pageInfo
	for _, p := range pages {
		if p.data() {
			data = append(data, p)
		}
	}
	if c.offIdxOffset >= 0 {
		b, err := readIndex(f, size, c.offIdxOffset, c.offIdxLength)
		if err != nil {
			return nil, err
		}
		locs, err := offsetIndex(b)
		if err != nil {
			return nil, unverifiable("its offset index: %v", err)
		}
		if len(locs) != len(data) {
			return nil, fmt.Errorf("its offset index lists %d pages, the chunk has %d: a reader that skips pages by the page index (DuckDB 2.0, Spark) reads other rows than the audit read", len(locs), len(data))
		}
		for i, l := range locs {
			p := data[i]
			if l.offset != p.offset || int64(l.size) != p.end()-p.offset || l.firstRow != p.firstRow {
				return nil, fmt.Errorf("its offset index places page %d at %d (%d bytes, first row %d), the page is at %d (%d bytes, first row %d): a reader that skips pages by the page index (DuckDB 2.0, Spark) reads other rows than the audit read",
					i, l.offset, l.size, l.firstRow, p.offset, p.end()-p.offset, p.firstRow)
			}
		}
	}
	if c.colIdxOffset < 0 {
		return nil, nil
	}
	b, err := readIndex(f, size, c.colIdxOffset, c.colIdxLength)
	if err != nil {
		return nil, err
	}
	idx, err := columnIndex(b)
	if err != nil {
		return nil, unverifiable("its column index: %v", err)
	}
	n := len(data)
	if len(idx.nullPages) != n || len(idx.mins) != n || len(idx.maxs) != n || (idx.nullCounts != nil && len(idx.nullCounts) != n) {
		return nil, fmt.Errorf("its column index describes %d pages, the chunk has %d: a reader that skips pages by it (DuckDB 2.0, Spark) reads other rows than the audit read", len(idx.nullPages), n)
	}
	if c.maxRep > 0 {
		return nil, nil
	}
	dom, err := chunkDomain(c)
	if err != nil {
		return nil, err
	}
	var claims []pageClaim
	var prev *pageClaim
	for i, p := range data {
		hi := rowBase + c.rows
		if i+1 < n {
			hi = rowBase + data[i+1].firstRow
		}
		pc := pageClaim{source: "column index", chunk: ci, page: i, lo: rowBase + p.firstRow, hi: hi, nullPage: idx.nullPages[i], nulls: -1, domain: dom, rowGroup: c.rowGroup, path: c.path}
		if idx.nullCounts != nil {
			pc.nulls = idx.nullCounts[i]
		}
		if !pc.nullPage {
			if pc.min, pc.max, err = dom.bounds(idx.mins[i], idx.maxs[i]); err != nil {
				return nil, err
			}
			pc.minS, pc.maxS = dom.render(pc.min), dom.render(pc.max)
			if dom.cmp(pc.min, pc.max) > 0 {
				return nil, fmt.Errorf("its column index gives page %d a min %s above its max %s", i, pc.minS, pc.maxS)
			}
			// Readers search ordered bounds by bisection.
			if prev != nil && ((idx.order == 1 && (dom.cmp(prev.min, pc.min) > 0 || dom.cmp(prev.max, pc.max) > 0)) ||
				(idx.order == 2 && (dom.cmp(prev.min, pc.min) < 0 || dom.cmp(prev.max, pc.max) < 0))) {
				return nil, fmt.Errorf("its column index says its pages' bounds are ordered (boundary order %d), and pages %d and %d are not: a reader that bisects them (Spark) skips pages", idx.order, prev.page, i)
			}
			prev = &pc
		}
		claims = append(claims, pc)
	}
	return claims, nil
}

// columnIndexDisagreement compares the ColumnIndex claims of the Parquet
// file at path with its data, as DuckDB reads it: one statement, a union
// over the columns, each page's rows found by file_row_number. It returns
// the first page whose data a claim does not hold, described.
func (r *run) columnIndexDisagreement(ctx context.Context, path string, chunks []chunkMeta, claims []pageClaim) error {
	if len(claims) == 0 {
		return nil
	}
	// The claims come in spans, a column's from one source. Spans whose
	// pages cover the same rows (every column of a row group of one page,
	// a column's page index beside its page headers) are compared in one
	// statement: one scan placing each row in its page (pageBucket), one
	// grouping taking every column's figures per page, and each span's
	// claims compared with its column's. A statement per span parsed the
	// file's footer once per column: 7 s for a pyarrow file of 80 columns
	// and 128 row groups (review 8). Statements run one after the other
	// until one finds a page its claims do not hold.
	type span struct{ k, j int }
	var (
		order  []string
		groups = map[string][]span{}
	)
	for k := 0; k < len(claims); {
		j := k
		column, source := chunks[claims[k].chunk].column, claims[k].source
		for j < len(claims) && chunks[claims[j].chunk].column == column && claims[j].source == source {
			j++
		}
		var layout strings.Builder
		for i := k; i < j; i++ {
			fmt.Fprintf(&layout, "%d-%d,", claims[i].lo, claims[i].hi)
		}
		if _, ok := groups[layout.String()]; !ok {
			order = append(order, layout.String())
		}
		groups[layout.String()] = append(groups[layout.String()], span{k, j})
		k = j
	}
	var (
		i              int
		mn, mx         *string
		nulls, rowsGot int64
		err            error = sql.ErrNoRows
	)
	for _, layout := range order {
		for ss := groups[layout]; len(ss) > 0 && errors.Is(err, sql.ErrNoRows); {
			n := min(len(ss), maxSpansPerStatement)
			var cols, aggs, sels []string
			for c, sp := range ss[:n] {
				dom := claims[sp.k].domain
				null := "CAST(NULL AS " + dom.sqlType + ")"
				lit := func(b bound) string {
					if !b.set() {
						return null
					}
					return dom.literal(b)
				}
				var vals []string
				for i := sp.k; i < sp.j; i++ {
					cl := claims[i]
					vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s, %s, %s, %d, %t)", i, i-sp.k, lit(cl.min), lit(cl.max), lit(cl.lmin), lit(cl.lmax), cl.nulls, cl.nullPage))
				}
				cols = append(cols, fmt.Sprintf(cmp.Or(dom.pre, "%s"), quotePath(chunks[claims[sp.k].chunk].parts))+fmt.Sprintf(" AS c%d", c))
				aggs = append(aggs, fmt.Sprintf("min(c%[1]d) AS mn%[1]d, max(c%[1]d) AS mx%[1]d, count(*) - count(c%[1]d) AS nl%[1]d, count(c%[1]d) AS nn%[1]d", c))
				// Each page's min and max in DuckDB's type, made into the
				// domain's after (each domain's expression keeps the order).
				sels = append(sels, fmt.Sprintf(`SELECT p.i, CAST(a.mn AS VARCHAR), CAST(a.mx AS VARCHAR), a.nulls, a.nn
FROM (SELECT k, %s AS mn, %s AS mx, nl%d AS nulls, nn%d AS nn FROM pages) a
JOIN (VALUES %s) p(i, k, mn, mx, lmn, lmx, nulls, nullpage) ON a.k = p.k
WHERE a.mn < p.mn OR a.mx > p.mx OR a.mn < p.lmn OR a.mx > p.lmx OR (p.nulls >= 0 AND a.nulls <> p.nulls) OR (p.nullpage AND a.nn > 0)`,
					fmt.Sprintf(dom.expr, fmt.Sprintf("mn%d", c)), fmt.Sprintf(dom.expr, fmt.Sprintf("mx%d", c)), c, c, strings.Join(vals, ", ")))
			}
			first := ss[0]
			from, row := rowNumbered(path, chunks)
			q := fmt.Sprintf(`WITH pages AS MATERIALIZED (SELECT k, %s FROM (SELECT %s AS k, %s FROM %s) GROUP BY k)
SELECT * FROM (%s) ORDER BY 1 LIMIT 1`,
				strings.Join(aggs, ", "), pageBucket(claims[first.k:first.j], 0, row), strings.Join(cols, ", "),
				from, strings.Join(sels, "\nUNION ALL\n"))
			err = r.pool().QueryRowContext(ctx, q).Scan(&i, &mn, &mx, &nulls, &rowsGot)
			ss = ss[n:]
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return errUnverifiable{why: fmt.Sprintf("its data read page by page: %v", err), cause: err}
	}
	c := claims[i]
	claim := fmt.Sprintf("values from %s to %s", c.minS, c.maxS)
	switch {
	case c.nullPage:
		claim = "only NULLs"
	case c.minS == "":
		claim = "no bounds"
	}
	if c.nulls >= 0 {
		claim += fmt.Sprintf(", %d NULLs", c.nulls)
	}
	got := fmt.Sprintf("%d NULLs", nulls)
	if mn != nil && mx != nil {
		got = fmt.Sprintf("values from %s to %s, %d NULLs", *mn, *mx, nulls)
	}
	if strings.HasPrefix(c.source, "page header") {
		return fmt.Errorf("row group %d, column %q: the statistics in the header of its data page %d (rows %d to %d of the file) say it holds %s; it holds %s: a reader that skips pages by them (DuckDB 2.0) reads other rows than the audit read",
			c.rowGroup, c.path, c.page, c.lo, c.hi-1, claim, got)
	}
	return fmt.Errorf("row group %d, column %q: its column index says page %d (rows %d to %d of the file) holds %s; it holds %s: a reader that skips pages by it (DuckDB 2.0, Spark) reads other rows than the audit read",
		c.rowGroup, c.path, c.page, c.lo, c.hi-1, claim, got)
}

// quotePath is a leaf's path as a DuckDB expression: "a"."b".
func quotePath(parts []string) string {
	return strings.Join(each(parts, quoteIdent), ".")
}

// pageStats are the Statistics of a data page's header: the bounds (nil
// when not given), the legacy ones, the null count (-1 when not given).
type pageStats struct {
	min, max, legacyMin, legacyMax []byte
	nulls                          int64
}

func (d *compactReader) pageStatistics() (*pageStats, error) {
	st := &pageStats{nulls: -1}
	err := d.fields(func(id int16, t byte) (bool, error) {
		var err error
		switch {
		case id == 1 && t == ctBinary:
			st.legacyMax, err = d.binary(len(d.b))
		case id == 2 && t == ctBinary:
			st.legacyMin, err = d.binary(len(d.b))
		case id == 3 && t == ctI64:
			st.nulls, err = d.i64()
		case id == 5 && t == ctBinary:
			st.max, err = d.binary(len(d.b))
		case id == 6 && t == ctBinary:
			st.min, err = d.binary(len(d.b))
		default:
			return false, nil
		}
		return true, err
	})
	return st, err
}

// headerClaims are the claims of the statistics in chunk c's data page
// headers (none for a repeated leaf's pages): min_value and max_value,
// the legacy min and max where the column's order is the signed one the
// legacy fields were written in, the null count.
func headerClaims(f *os.File, c chunkMeta, ci int, pages []pageInfo, rowBase int64, zd **zstd.Decoder) ([]pageClaim, error) {
	if c.maxRep > 0 {
		return nil, nil
	}
	if err := pageRows(f, c, pages, zd); err != nil {
		return nil, err
	}
	var data []pageInfo
	for _, p := range pages {
		if p.data() {
			data = append(data, p)
		}
	}
	// The column's domain, or where it has none, one that counts its
	// NULLs only (bounds then cannot be checked).
	dom, domErr := chunkDomain(c)
	if domErr != nil {
		dom = domain{kind: 'i', sqlType: "HUGEINT", expr: "CAST(CASE WHEN %s IS NULL THEN NULL ELSE 0 END AS HUGEINT)"}
	}
	var claims []pageClaim
	for i, p := range data {
		st := p.h.stats
		if st == nil {
			continue
		}
		hi := rowBase + c.rows
		if i+1 < len(data) {
			hi = rowBase + data[i+1].firstRow
		}
		pc := pageClaim{source: "page header", chunk: ci, page: i, lo: rowBase + p.firstRow, hi: hi, nulls: st.nulls, rowGroup: c.rowGroup, path: c.path, domain: dom}
		primary := st.min != nil && st.max != nil
		legacy := st.legacyMin != nil && st.legacyMax != nil
		if (primary || legacy) && domErr != nil {
			return nil, domErr
		}
		var err error
		switch {
		case primary:
			if pc.min, pc.max, err = dom.bounds(st.min, st.max); err != nil {
				return nil, err
			}
			if legacy {
				if pc.lmin, pc.lmax, err = dom.bounds(st.legacyMin, st.legacyMax); err != nil {
					return nil, err
				}
			}
		case legacy:
			// In any column's order: DuckDB 2.0 skips a page of text by
			// them (TestReview11LegacyPageBoundsOfTextAreCompared), so
			// bounds an old writer ordered as signed bytes are refused.
			if pc.min, pc.max, err = dom.bounds(st.legacyMin, st.legacyMax); err != nil {
				return nil, err
			}
		}
		if !pc.min.set() && pc.nulls < 0 {
			continue
		}
		if pc.min.set() {
			pc.minS, pc.maxS = dom.render(pc.min), dom.render(pc.max)
		}
		if pc.lmin.set() {
			pc.minS += fmt.Sprintf(" (legacy min %s)", dom.render(pc.lmin))
			pc.maxS += fmt.Sprintf(" (legacy max %s)", dom.render(pc.lmax))
		}
		claims = append(claims, pc)
	}
	return claims, nil
}

// bounds decodes a min and a max claim; a time in nanoseconds, which
// DuckDB reads rounded to the microsecond, is compared in microseconds,
// the min rounded down and the max up (a wider claim refuses nothing a
// reader needs).
func (d domain) bounds(mn, mx []byte) (bound, bound, error) {
	lo, err := d.decode(mn)
	if err != nil {
		return lo, lo, err
	}
	hi, err := d.decode(mx)
	if err != nil {
		return lo, hi, err
	}
	if d.nanos {
		k := big.NewInt(1000)
		lo.i.Div(lo.i, k)
		hi.i.Div(hi.i, k)
		hi.i.Add(hi.i, big.NewInt(1))
	}
	return lo, hi, nil
}

// maxSpansPerStatement bounds the columns' claims one statement of
// columnIndexDisagreement compares (its text and its grouping's width).
const maxSpansPerStatement = 64

// pageBucket is an expression of a row's number in the file (column row:
// rowNumbered) that is the index (from base) of the claim in cs whose page
// holds the row, or -1: a balanced tree of CASEs over the pages' bounds
// (cs in file order), so each row is placed in a logarithmic number of
// comparisons.
func pageBucket(cs []pageClaim, base int, row string) string {
	row = quoteIdent(row)
	type seg struct {
		start int64
		k     int
	}
	var segs []seg
	next := int64(-1) << 62
	for i, c := range cs {
		if c.lo > next {
			segs = append(segs, seg{next, -1}) // a gap
		}
		segs = append(segs, seg{c.lo, base + i})
		next = c.hi
	}
	segs = append(segs, seg{next, -1})
	var tree func(lo, hi int) string
	tree = func(lo, hi int) string {
		if hi-lo == 1 {
			return strconv.Itoa(segs[lo].k)
		}
		mid := (lo + hi) / 2
		return fmt.Sprintf("CASE WHEN %s < %d THEN %s ELSE %s END", row, segs[mid].start, tree(lo, mid), tree(mid, hi))
	}
	return tree(0, len(segs))
}
