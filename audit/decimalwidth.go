package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// DuckDB 1.5 reads a Parquet DECIMAL of precision p into an integer of
// p's width (16 bits up to 4 digits, 32 up to 9, 64 up to 18, 128 up to
// 38), whatever the width its values are stored in, and a value beyond
// the precision wraps around there; pyarrow (parquet-cpp) and Spark
// (parquet-mr) read each value as it is stored. pyarrow 26.0.1 writes
// DECIMAL(4,2) 1000.00 over INT32 (store_decimal_as_integer) without
// complaint: DuckDB read -310.72 (100000 in 16 bits), pandas and PySpark
// 4.3.0 1000.00, and a range of at most 100 passed; a DECIMAL(4,2) over
// INT64 10000000.00 read -138.24, a DECIMAL(18,2) over a 16-byte
// FIXED_LEN_BYTE_ARRAY 100000000000000000.00 read -84467440737095516.16
// (and so to PySpark; TestReview36DecimalBeyondItsPrecisionIsRefused).
// PySpark reads any value of at most 18 digits stored in 9 to 15 bytes
// with its first bytes shifted out (1.50 read -1.06), which such a leaf
// is refused for whatever its values. No writer stores a
// value beyond its precision (the format defines the precision as the
// digits the values hold), so a file whose leaf DuckDB reads so narrower
// holding one is refused; the leaves DuckDB reads at the width they are
// stored in (INT32 of 5 to 9 digits, INT64 of 10 to 18) read alike and
// are not read.

// DuckDB 1.5.6 reads a DECIMAL of more than 38 digits as a DOUBLE: its
// values rounded to 53 bits, and, stored in a length not a multiple of 8
// bytes, multiplied by a power of two (its last bytes taken for the high
// bytes of 8: pyarrow's decimal256(40, 2) in 17 bytes, 0.01, read
// 720575940379279.4, 0.01 * 2^56). pyarrow and pandas read such a decimal
// as written, Spark not at all (its decimals are of at most 38 digits). A
// range check of amount >= 1 passed over 0.01
// (TestReview46DecimalsOfMoreThan38DigitsAreRefused). A file whose column
// a check reads (columnsRead, but a not_null, which reads its NULLs alike)
// holds such a leaf is refused, by its footer alone.

// markWideDecimals notes on cols (a file's, schemaColumns of nodes) the
// first leaf under each top-level column of a DECIMAL of more than 38
// digits.
func markWideDecimals(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	eachColumnNode(cols, nodes, types, func(col *fileColumn, i, _ int, path []string) {
		t := types[i]
		if p, scale := max(t.precision, t.logicalPrecision), max(t.scale, t.logicalScale); col.wideDecimal == "" && nodes[i].children == 0 &&
			(t.converted == cvDecimal || t.logical == ltDecimal) && p > 38 {
			col.wideDecimal = fmt.Sprintf("%s, a DECIMAL(%d, %d) of physical type %d", strings.Join(path, "."), p, scale, t.physical)
			if t.physical == ptFixed {
				col.wideDecimal += fmt.Sprintf(" in %d bytes", t.typeLength)
			}
		}
	})
}

// wideDecimals names the first Parquet file of files with a column a check
// reads holding a DECIMAL of more than 38 digits (markWideDecimals).
func wideDecimals(cols map[string][]fileColumn, files []string, objPath map[string]string, checks []Check, table string) error {
	return markedColumn(cols, files, objPath, checks, table, func(c fileColumn) string { return c.wideDecimal }, func(file, col, mark string) error {
		return fmt.Errorf("file %s: column %q holds %s, of more than 38 digits, which DuckDB reads as a DOUBLE (rounded, and stored in a length not a multiple of 8 bytes, multiplied by a power of two), pyarrow and pandas as written, and Spark not at all: readers disagree on its values, and a check reads it (write it as a DECIMAL of at most 38 digits)",
			file, col, mark)
	})
}

// duckDecimalBytes is the width in bytes of the integer DuckDB reads a
// DECIMAL of precision p into, 0 past 38 digits (a DOUBLE).
func duckDecimalBytes(p int32) int {
	switch {
	case p < 1 || p > 38:
		return 0
	case p <= 4:
		return 2
	case p <= 9:
		return 4
	case p <= 18:
		return 8
	}
	return 16
}

// decimalNarrowed is the precision and scale of chunk c's DECIMAL if
// DuckDB reads its values into a narrower integer than they are stored
// in (a byte array's values may be of any length).
func decimalNarrowed(c chunkMeta) (precision, scale int32, ok bool) {
	t := c.types
	if t.converted != cvDecimal {
		return 0, 0, false // typesDisagree refused a logical DECIMAL without it
	}
	duck := duckDecimalBytes(t.precision)
	stored := map[int32]int{ptInt32: 4, ptInt64: 8, ptFixed: int(c.typeLength), ptByteArray: 1 << 30}[c.physical]
	if duck == 0 || stored <= duck {
		return 0, 0, false
	}
	return t.precision, t.scale, true
}

// decimalsBeyondPrecision refuses the first value of a chunk of the
// Parquet file at path that DuckDB reads narrower (decimalNarrowed)
// beyond its precision, or of a UINT_8 or UINT_16 beyond its width
// (unsignedNarrowed), or such a chunk whose pages it cannot read: its
// dictionary page's values and its data pages' PLAIN,
// and DELTA_BINARY_PACKED (Spark's V2 pages) values (DuckDB 1.5 reads
// BYTE_STREAM_SPLIT of floats only).
func decimalsBeyondPrecision(ctx context.Context, path string, chunks []chunkMeta) error {
	f := &chunkFile{path: path}
	defer f.close()
	for _, c := range chunks {
		precision, scale, ok := decimalNarrowed(c)
		bits, unsigned := unsignedNarrowed(c)
		if !ok && !unsigned {
			continue
		}
		if err := f.open(); err != nil {
			return err
		}
		c.ctx = ctx
		if unsigned {
			if err := unsignedBeyondWidth(f.file, f.size, c, bits, &f.zd); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			continue
		}
		if c.physical == ptFixed && precision <= 18 && c.typeLength > 8 && c.typeLength < 16 {
			// parquet-mr takes such a value as a long, shifting its first
			// bytes out: 1.50 read -1.06 (TestReview36DecimalOfNineToFifteenBytesIsRefused).
			return fmt.Errorf("row group %d, column %q is a DECIMAL(%d,%d) stored in %d bytes: Spark reads each value of at most 18 digits stored in 9 to 15 bytes with its first bytes shifted out (1.50 read -1.06), DuckDB and pyarrow as stored", c.rowGroup, c.path, precision, scale, c.typeLength)
		}
		bound := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
		width := map[int32]int{ptInt32: 4, ptInt64: 8, ptFixed: int(c.typeLength), ptByteArray: 0}[c.physical]
		var beyond *big.Int
		check := func(v []byte) error {
			if c.physical == ptInt32 || c.physical == ptInt64 {
				// An integer's precision is at most 9 here: no big.Int
				// for each of a column's values.
				if x, _ := plainInt(v); x < bound.Int64() && x > -bound.Int64() {
					return nil
				}
			}
			x := decimalValue(v, c.physical)
			if new(big.Int).Abs(x).Cmp(bound) >= 0 {
				beyond = x
				return errBeyond
			}
			return nil
		}
		err := chunkValues(f.file, f.size, c, width, &f.zd, check)
		typ := fmt.Sprintf("DECIMAL(%d,%d)", precision, scale)
		duckBits := 8 * duckDecimalBytes(precision)
		switch {
		case beyond != nil:
			return fmt.Errorf("row group %d, column %q holds the %s value %s, beyond its precision: DuckDB reads it into an integer of %d bits, where it wraps around (or fails), pyarrow and Spark as it is stored", c.rowGroup, c.path, typ, decimalText(beyond, scale), duckBits)
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("row group %d, column %q is a %s whose values DuckDB reads into an integer of %d bits, narrower than they are stored in, and its pages cannot be read to check that each fits (%v): refused rather than read otherwise than pyarrow and Spark may", c.rowGroup, c.path, typ, duckBits, err)
		}
	}
	return nil
}

var errBeyond = unverifiable("a value beyond the precision")

// chunkFile is a Parquet file whose chunks' values are read in Go
// (chunkValues): opened on first use, with one zstd decoder for all its
// pages. close releases both.
type chunkFile struct {
	path string
	file *os.File
	size int64
	zd   *zstd.Decoder
}

// open opens the file, once.
func (f *chunkFile) open() error {
	if f.file != nil {
		return nil
	}
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return err
	}
	f.file, f.size = file, info.Size()
	return nil
}

func (f *chunkFile) close() {
	if f.file != nil {
		f.file.Close()
	}
	if f.zd != nil {
		f.zd.Close()
	}
}

// A UINT_8 or UINT_16 leaf is stored in an INT32, and a value beyond its
// width is read by DuckDB and pyarrow by its low 8 or 16 bits, by Spark
// 4.3.0 (a ShortType, an IntegerType) by its low 16 or 32: 70000 as
// UINT_8 read 112 and 4464, as UINT_16 4464 and 70000
// (TestReview36UnsignedBeyondItsWidthIsRefused). Signed INT_8 and INT_16
// are truncated alike by all three, and no writer stores such a value.

// unsignedNarrowed is the width in bits of chunk c's UINT_8 or UINT_16.
func unsignedNarrowed(c chunkMeta) (int, bool) {
	if c.physical != ptInt32 {
		return 0, false
	}
	switch c.types.converted {
	case cvUint8:
		return 8, true
	case cvUint8 + 1: // UINT_16
		return 16, true
	}
	return 0, false
}

// unsignedBeyondWidth refuses the first value of chunk c (a UINT_8 or
// UINT_16 of bits) beyond its width, or the chunk when its pages cannot
// be read.
func unsignedBeyondWidth(f *os.File, size int64, c chunkMeta, bits int, zd **zstd.Decoder) error {
	var beyond uint32
	err := chunkValues(f, size, c, 4, zd, func(v []byte) error {
		if u := binary.LittleEndian.Uint32(v); u>>bits != 0 {
			beyond = u
			return errBeyond
		}
		return nil
	})
	switch {
	case beyond != 0:
		spark := int64(int16(beyond))
		if bits == 16 {
			spark = int64(int32(beyond))
		}
		return fmt.Errorf("row group %d, column %q holds the UINT_%d value %d, beyond its width: DuckDB and pyarrow read its low %d bits (%d), Spark its low %d (%d)",
			c.rowGroup, c.path, bits, beyond, bits, beyond&(1<<bits-1), 2*bits, spark)
	case err != nil:
		return fmt.Errorf("row group %d, column %q is a UINT_%d stored in 32 bits, whose values beyond its width DuckDB and pyarrow read otherwise than Spark, and its pages cannot be read to check that each fits (%v): refused rather than read otherwise than Spark may", c.rowGroup, c.path, bits, err)
	}
	return nil
}

// chunkValues calls fn with the plain bytes of every value of chunk c
// (width bytes each, 0 for a byte array's): its dictionary's and its data
// pages' but dictionary indexes (so a dictionary's value no page names
// too). Also int96Nanos's.
func chunkValues(f *os.File, size int64, c chunkMeta, width int, zd **zstd.Decoder, fn func([]byte) error) error {
	pages, err := walkPages(f, size, c)
	if err != nil {
		return err
	}
	dict := false
	for _, p := range pages {
		b, err := readBody(f, c, p, zd)
		if err != nil {
			return err
		}
		if !p.data() {
			dict = true
			if err := plainValues(b, width, fn); err != nil {
				return err
			}
			continue
		}
		vals, err := pageValues(c, p.h, b, zd)
		if err != nil {
			return err
		}
		switch p.h.encoding {
		case 0: // PLAIN
			err = plainValues(vals, width, fn)
		case 2, 8: // PLAIN_DICTIONARY, RLE_DICTIONARY: the dictionary's values
			if !dict {
				err = unverifiable("dictionary indexes without a dictionary")
			}
		case 5: // DELTA_BINARY_PACKED
			if c.physical != ptInt32 && c.physical != ptInt64 {
				return unverifiable("DELTA_BINARY_PACKED values of type %d", c.physical)
			}
			err = deltaBinaryPacked(vals, width, int64(p.h.numValues), fn)
		default:
			err = unverifiable("values of encoding %d", p.h.encoding)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decimalValue is a DECIMAL's unscaled plain value v: a little-endian
// INT32 or INT64, or big-endian two's complement bytes.
func decimalValue(v []byte, physical int32) *big.Int {
	if physical == ptInt32 || physical == ptInt64 {
		s, _ := plainInt(v)
		return big.NewInt(s)
	}
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}

// decimalText is unscaled value x of scale s as text (1000.00).
func decimalText(x *big.Int, s int32) string {
	t := new(big.Int).Abs(x).String()
	if s > 0 {
		if len(t) <= int(s) {
			t = strings.Repeat("0", int(s)-len(t)+1) + t
		}
		t = t[:len(t)-int(s)] + "." + t[len(t)-int(s):]
	}
	if x.Sign() < 0 {
		t = "-" + t
	}
	return t
}

// deltaBinaryPacked calls fn with each value of DELTA_BINARY_PACKED b,
// of width 4 or 8 bytes (plain, little-endian), at most most of them.
func deltaBinaryPacked(b []byte, width int, most int64, fn func([]byte) error) error {
	uvarint := func() (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, unverifiable("DELTA_BINARY_PACKED values cut")
		}
		b = b[k:]
		return v, nil
	}
	zigzag := func() (int64, error) {
		v, err := uvarint()
		return int64(v>>1) ^ -int64(v&1), err
	}
	block, err := uvarint()
	if err != nil {
		return err
	}
	minis, err := uvarint()
	if err != nil {
		return err
	}
	total, err := uvarint()
	if err != nil {
		return err
	}
	cur, err := zigzag()
	if err != nil {
		return err
	}
	if block == 0 || block%128 != 0 || block > 1<<16 || minis == 0 || block%minis != 0 || (block/minis)%32 != 0 || total > uint64(most) {
		return unverifiable("a DELTA_BINARY_PACKED header of blocks of %d values in %d miniblocks, %d values", block, minis, total)
	}
	out := make([]byte, 8)
	emit := func(v int64) error {
		binary.LittleEndian.PutUint64(out, uint64(v))
		return fn(out[:width])
	}
	if total == 0 {
		return nil
	}
	if width == 4 {
		cur = int64(int32(cur))
	}
	if err := emit(cur); err != nil {
		return err
	}
	left := total - 1
	per := int(block / minis)
	for left > 0 {
		minDelta, err := zigzag()
		if err != nil {
			return err
		}
		if uint64(len(b)) < minis {
			return unverifiable("DELTA_BINARY_PACKED bit widths cut")
		}
		widths := b[:minis]
		b = b[minis:]
		for _, bw := range widths {
			if left == 0 {
				break
			}
			if bw > 64 {
				return unverifiable("a DELTA_BINARY_PACKED bit width of %d", bw)
			}
			n := per * int(bw) / 8
			if len(b) < n {
				return unverifiable("a DELTA_BINARY_PACKED miniblock cut")
			}
			packed := b[:n]
			b = b[n:]
			for i := 0; i < per && left > 0; i++ {
				var d uint64
				for j, bit := 0, i*int(bw); j < int(bw); {
					byt := packed[(bit+j)/8] >> ((bit + j) % 8)
					take := min(8-(bit+j)%8, int(bw)-j)
					d |= uint64(byt&(1<<take-1)) << j
					j += take
				}
				cur = int64(uint64(cur) + uint64(minDelta) + d)
				if width == 4 {
					cur = int64(int32(cur))
				}
				if err := emit(cur); err != nil {
					return err
				}
				left--
			}
		}
	}
	return nil
}
