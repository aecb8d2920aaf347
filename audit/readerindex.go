package audit

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/lakewap/lakewap/schemas"
)

// What readers of main skip by, besides a file's row-group statistics.
//
// DuckDB (1.5 and 2.0) skips a row group whose split-block bloom filter
// says an equality's constant is absent (WHERE s = 'v7'); Spark's
// parquet-mr does so when asked. The audit reads every row, so a file
// whose bloom filter excludes a value its rows hold passes checks that a
// reader of main, filtering on that value, reads other rows for
// (TestForgedBloomFilterIsRefused). readerIndexes checks each bloom filter
// against the values of its column chunk, as the Parquet format defines
// the filter (the xxhash64 of each value's plain encoding, set in one
// block of the bitset), and refuses the file where a value is excluded or
// where it cannot tell (an encoding, a codec or a layout it does not read).
//
// Only a chunk's dictionary page and its PLAIN data pages are read: a
// data page encoded by the dictionary holds indexes into it, and every
// dictionary value is checked. DuckDB writes a bloom filter for each
// dictionary-encoded chunk only, so a DuckDB file costs the reading of its
// page headers and dictionaries.

// chunkMeta is one column chunk of a row group, as the footer describes
// it: what the readers' indexes need.
type chunkMeta struct {
	rowGroup, column int      // the row group's and the leaf's index
	rows             int64    // the row group's num_rows
	path             string   // the leaf's path, dotted
	parts            []string // the leaf's path
	types            nodeTypes
	physical         int32 // Type; -1 unknown
	typeLength       int32
	maxDef, maxRep   int
	hasMeta          bool // meta_data was given
	codec            int32
	numValues        int64
	dataOffset       int64
	dictOffset       int64 // 0 when unset
	totalCompressed  int64
	bloomOffset      int64 // -1 when unset
	bloomLength      int64 // -1 when unset
	colIdxOffset     int64 // -1 when unset
	colIdxLength     int64
	offIdxOffset     int64 // -1 when unset
	offIdxLength     int64
	otherPath        []string // its path_in_schema, when not its leaf's (columnChunk)
	encodings        []int32  // ColumnMetaData's encodings
	dataEncodings    []int32  // its encoding_stats' of data pages
	encodingStats    bool     // encoding_stats was given
	groupCompressed  int64    // its RowGroup's total_compressed_size
	groupSized       bool     // groupCompressed was given
	// The run's, set by checkReaderIndexes: its pages are read until it
	// ends (a file may hold 1,048,576 pages per chunk, each 256 MiB).
	ctx context.Context
}

// ended is the error of c's run when it has ended.
func (c chunkMeta) ended() error {
	if c.ctx == nil {
		return nil
	}
	return c.ctx.Err()
}

// Bounds of the readers' indexes' reading (past them, the file is refused:
// honest writers stay far below).
const (
	bloomMaxBytes    = 128 << 20 // a bitset: the Parquet format's maximum
	pageMaxBytes     = 256 << 20 // a page, compressed or not
	pageHeaderMax    = 16 << 20  // a page header (statistics included)
	chunkMaxPages    = 1 << 20   // pages of a column chunk
	chunkValueRender = 40        // bytes of a value named in a refusal
)

// leafLevels are the leaves of a schema tree (depth first, the root
// first) with their maximum definition and repetition levels.
type leafInfo struct {
	path           string
	parts          []string
	types          nodeTypes
	maxDef, maxRep int
}

func schemaLeaves(nodes []schemaNode, types []nodeTypes) []leafInfo {
	var out []leafInfo
	i := 1
	var walk func(prefix []string, def, rep int)
	walk = func(prefix []string, def, rep int) {
		n, nt := nodes[i], types[i]
		i++
		p := append(slices.Clone(prefix), n.name)
		d, r := def, rep
		switch nt.repetition {
		case 1:
			d++
		case 2:
			d++
			r++
		}
		if n.children == 0 {
			out = append(out, leafInfo{path: strings.Join(p, "."), parts: p, types: nt, maxDef: d, maxRep: r})
			return
		}
		for c := int64(0); c < n.children && i < len(nodes); c++ {
			walk(p, d, r)
		}
	}
	for c := int64(0); c < nodes[0].children && i < len(nodes); c++ {
		walk(nil, 0, 0)
	}
	return out
}

// i64 reads a zigzag varint of up to 64 bits.
func (d *compactReader) i64() (int64, error) {
	u, err := d.uvarint(10)
	if err != nil {
		return 0, err
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// footerChunks are the column chunks of a FileMetaData that the strict
// reading (fileMetaData) took, read again for the fields the readers'
// indexes need.
func footerChunks(buf []byte, nodes []schemaNode, types []nodeTypes) ([]chunkMeta, int64, error) {
	if len(types) != len(nodes) {
		return nil, 0, errors.New("schema elements without types")
	}
	leaves := schemaLeaves(nodes, types)
	d := &compactReader{b: buf}
	var out []chunkMeta
	numRows := int64(-1)
	err := d.fields(func(id int16, t byte) (bool, error) {
		if id == 3 && t == ctI64 {
			v, err := d.i64()
			numRows = v
			return true, err
		}
		if id != 4 || t != ctList {
			return false, nil
		}
		_, n, err := d.list()
		if err != nil {
			return true, err
		}
		for rg := 0; rg < n; rg++ {
			var cs []chunkMeta
			var rows int64
			compressed, sized := int64(0), false
			err := d.fields(func(id int16, t byte) (bool, error) {
				switch {
				case id == 3 && t == ctI64:
					v, err := d.i64()
					rows = v
					return true, err
				case id == 6 && t == ctI64:
					v, err := d.i64()
					compressed, sized = v, true
					return true, err
				case id == 1 && t == ctList:
					_, m, err := d.list()
					if err != nil {
						return true, err
					}
					if m != len(leaves) {
						return true, fmt.Errorf("row group %d of %d column chunks for %d leaves", rg, m, len(leaves))
					}
					for c := 0; c < m; c++ {
						l := leaves[c]
						ch, err := d.columnChunk(l.parts)
						if err != nil {
							return true, err
						}
						if ch.otherPath != nil {
							// parquet-mr reads a chunk by its path, DuckDB and
							// pyarrow by its position: swapped paths read xa's
							// chunk as xb to Spark
							// (TestReview36ChunkPathOtherThanItsLeafIsRefused).
							return true, fmt.Errorf("row group %d's column chunk %d names the path %q, its leaf's is %q: Spark (parquet-mr) reads a chunk by its path, DuckDB and pyarrow by its position", rg, c, strings.Join(ch.otherPath, "."), l.path)
						}
						ch.rowGroup, ch.column, ch.path, ch.parts, ch.types = rg, c, l.path, l.parts, l.types
						ch.typeLength, ch.maxDef, ch.maxRep = l.types.typeLength, l.maxDef, l.maxRep
						if ch.physical != l.types.physical {
							ch.physical = -1 // DuckDB reads the schema's; the audit does not guess
						}
						cs = append(cs, ch)
					}
					return true, nil
				}
				return false, nil
			})
			if err != nil {
				return true, err
			}
			for i := range cs {
				cs[i].rows, cs[i].groupCompressed, cs[i].groupSized = rows, compressed, sized
				if c := &cs[i]; c.hasMeta && rows == 0 && c.numValues == 0 && c.dataOffset == 0 && c.dictOffset > 0 {
					// pyarrow's chunk of a row group of 0 rows (an empty
					// DataFrame's file): a dictionary page and no data
					// page, whose offset it leaves 0. Its pages start at
					// the dictionary page; walkPages still refuses any
					// data page after it (values beyond the chunk's 0)
					// (TestHonestWritersPass/pandas_empty).
					c.dataOffset = c.dictOffset
				}
			}
			out = append(out, cs...)
		}
		return true, nil
	})
	return out, numRows, err
}

// fields reads a struct's fields: read takes the ones it wants (true),
// the others are skipped.
func (d *compactReader) fields(read func(id int16, t byte) (bool, error)) error {
	if d.depth++; d.depth > footerMaxDepth {
		return errors.New("nested too deep")
	}
	defer func() { d.depth-- }()
	var last int16
	for {
		t, id, err := d.field(last)
		if err != nil {
			return err
		}
		if t == ctStop {
			return nil
		}
		last = id
		took, err := read(id, t)
		if err != nil {
			return err
		}
		if !took {
			if err := d.skip(t); err != nil {
				return err
			}
		}
	}
}

// columnChunk reads a ColumnChunk's page index offsets and its
// ColumnMetaData's fields; otherPath is its path_in_schema when that is
// not path, its leaf's.
func (d *compactReader) columnChunk(path []string) (chunkMeta, error) {
	c := chunkMeta{physical: -1, bloomOffset: -1, bloomLength: -1, colIdxOffset: -1, offIdxOffset: -1}
	err := d.fields(func(id int16, t byte) (bool, error) {
		var err error
		switch {
		case id == 4 && t == ctI64:
			c.offIdxOffset, err = d.i64()
		case id == 5 && t == ctI32:
			var v int32
			v, err = d.i32()
			c.offIdxLength = int64(v)
		case id == 6 && t == ctI64:
			c.colIdxOffset, err = d.i64()
		case id == 7 && t == ctI32:
			var v int32
			v, err = d.i32()
			c.colIdxLength = int64(v)
		case id == 3 && t == ctStruct:
			c.hasMeta = true
			err = d.fields(func(id int16, t byte) (bool, error) {
				var err error
				switch {
				case id == 1 && t == ctI32:
					c.physical, err = d.i32()
				case id == 3 && t == ctList:
					var named []string
					same := true
					err = d.each(func(et byte) error {
						if et != ctBinary {
							return fmt.Errorf("path_in_schema of type %d", et)
						}
						b, err := d.binary(footerMaxName)
						if err != nil {
							return err
						}
						same = same && len(named) < len(path) && string(b) == path[len(named)]
						named = append(named, string(b))
						return nil
					})
					if !same || len(named) != len(path) {
						c.otherPath = named
					}
				case id == 4 && t == ctI32:
					c.codec, err = d.i32()
				case id == 5 && t == ctI64:
					c.numValues, err = d.i64()
				case id == 7 && t == ctI64:
					c.totalCompressed, err = d.i64()
				case id == 9 && t == ctI64:
					c.dataOffset, err = d.i64()
				case id == 11 && t == ctI64:
					c.dictOffset, err = d.i64()
				case id == 2 && t == ctList:
					err = d.each(func(et byte) error {
						if et != ctI32 {
							return d.skip(et)
						}
						v, err := d.i32()
						c.encodings = append(c.encodings, v)
						return err
					})
				case id == 13 && t == ctList:
					c.encodingStats = true
					err = d.each(func(et byte) error {
						if et != ctStruct {
							return d.skip(et)
						}
						typ, enc := int32(-1), int32(-1)
						if err := d.fields(func(id int16, t byte) (bool, error) {
							var err error
							switch {
							case id == 1 && t == ctI32:
								typ, err = d.i32()
							case id == 2 && t == ctI32:
								enc, err = d.i32()
							default:
								return false, nil
							}
							return true, err
						}); err != nil {
							return err
						}
						if typ == 0 || typ == 3 { // DATA_PAGE, DATA_PAGE_V2
							c.dataEncodings = append(c.dataEncodings, enc)
						}
						return nil
					})
				case id == 14 && t == ctI64:
					c.bloomOffset, err = d.i64()
				case id == 15 && t == ctI32:
					var v int32
					v, err = d.i32()
					c.bloomLength = int64(v)
				default:
					return false, nil
				}
				return true, err
			})
		default:
			return false, nil
		}
		return true, err
	})
	return c, err
}

// each calls fn with the element type of the list at d, once an element.
func (d *compactReader) each(fn func(et byte) error) error {
	et, n, err := d.list()
	for ; err == nil && n > 0; n-- {
		err = fn(et)
	}
	return err
}

// dictionaryOnly: c's metadata says every data page of it is
// dictionary-encoded, as parquet-mr's dictionary filter reads it (Spark
// then skips the row group when the dictionary lacks an equality's
// constant): its encoding_stats name data pages of the dictionary
// encodings only, or without them, its encodings are PLAIN_DICTIONARY
// and levels' (RLE, BIT_PACKED). Where parquet-mr reads no such claim
// (encoding_stats of both dictionary encodings), this one may: it only
// asks the pages to be so.
func (c chunkMeta) dictionaryOnly() bool {
	dict := func(e int32) bool { return e == 2 || e == 8 } // PLAIN_DICTIONARY, RLE_DICTIONARY
	if c.encodingStats {
		return len(c.dataEncodings) > 0 && !slices.ContainsFunc(c.dataEncodings, func(e int32) bool { return !dict(e) })
	}
	return slices.Contains(c.encodings, 2) && !slices.ContainsFunc(c.encodings, func(e int32) bool { return e != 2 && e != 3 && e != 4 })
}

// groupInFile: the row group whose first chunk is chunks[i] has its
// midpoint in the file of size bytes. parquet-mr (Spark) reads a row group
// in the split of the file holding it: its first chunk's start plus half
// its total_compressed_size (or its chunks' sizes); past the file, or
// before it, no split does and Spark reads none of its rows
// (TestReview11RowGroupSizesOutsideTheFileAreRefused).
func groupInFile(chunks []chunkMeta, i int, size int64) error {
	c := chunks[i]
	if !c.hasMeta {
		return nil
	}
	total := c.groupCompressed
	if !c.groupSized {
		for _, o := range chunks[i:] {
			if o.rowGroup != c.rowGroup {
				break
			}
			total += o.totalCompressed
		}
	}
	start := c.dataOffset
	if c.dictOffset > 0 && start > c.dictOffset {
		start = c.dictOffset
	}
	if start < 0 || start >= size || total/2 < -start || total/2 >= size-start {
		return fmt.Errorf("row group %d claims a total_compressed_size of %d from offset %d, which puts its midpoint outside the file of %d bytes: Spark reads a row group in the split holding its midpoint, so none of its rows", c.rowGroup, total, start, size)
	}
	return nil
}

// errUnverifiable is an index the audit cannot check: the file is refused.
// cause, when set, is the error that kept the audit from checking it
// (DuckDB's), whose type decides whether it is the machine's (quoting).
type errUnverifiable struct {
	why   string
	cause error
}

func (e errUnverifiable) Error() string { return e.why }
func (e errUnverifiable) Unwrap() error { return e.cause }

func unverifiable(format string, a ...any) error {
	return errUnverifiable{why: fmt.Sprintf(format, a...)}
}

// readerIndexes names the first file of a Parquet (or Delta) table whose
// bloom filter excludes a value of its column chunk, or that the audit
// cannot check. A file that passed is kept in the memo by its identity;
// the footers come from parquetColumns (r.footers) or are read again.
func (r *run) readerIndexes(ctx context.Context, files []string, objPath, ids map[string]string) error {
	for _, f := range files {
		var key [32]byte
		keyed := false
		if id := ids[f]; id != "" && r.e.memo != nil {
			key, keyed = memoKey("readerindex", id), true
			if _, ok := r.e.memo.get(key); ok {
				continue
			}
		}
		if err := r.ready(ctx); err != nil {
			return err
		}
		ft, err := readFooter(f)
		if err != nil {
			// DuckDB reads the footer (parquet_schema did): nothing in it is
			// checked, and the file is refused.
			n, found, merr := r.footerCount(ctx, f, "bloom_filter_offset IS NOT NULL", func(merr error) error {
				return fmt.Errorf("file %s has a footer neither the audit (%v) nor DuckDB's parquet_metadata (%s) reads, whose row counts, sizes and bloom filters readers count, split and skip the file by (pyarrow's count_rows, Spark): it cannot check them",
					objPath[f], err, schemas.Clip(merr.Error(), 256))
			})
			switch {
			case merr != nil:
				return merr
			case !found:
				continue // a file DuckDB cannot read is left for the view
			case n > 0:
				return fmt.Errorf("file %s has bloom filters, which readers skip row groups by, in a footer the audit does not read (%v): it cannot check them", objPath[f], err)
			}
			// Its row counts and sizes too, which readers count and
			// split by (TestReview11FootersTheGoReaderGivesUpOnAreRefused).
			return fmt.Errorf("file %s has a footer the audit does not read (%v), whose row counts and sizes readers count and split the file by (pyarrow's count_rows, Spark): it cannot check them", objPath[f], err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var rows int64
		for i, c := range ft.chunks {
			if i == 0 || c.rowGroup != ft.chunks[i-1].rowGroup {
				rows += c.rows
			}
		}
		if ft.rows != rows {
			// pyarrow's dataset counts rows by it
			// (TestReview11FileRowCountsOtherThanTheRowGroupsAreRefused).
			return fmt.Errorf("file %s claims num_rows %d, its row groups hold %d: pyarrow's dataset counts the file's rows by the claim (count_rows), DuckDB and Spark by the row groups", objPath[f], ft.rows, rows)
		}
		if err := decimalsBeyondPrecision(ctx, f, ft.chunks); err != nil { // decimalwidth.go
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return quote(fmt.Errorf("file %s: %w", objPath[f], err), err)
		}
		claims, err := checkReaderIndexes(ctx, f, ft.chunks)
		if err == nil && !r.e.claimsNotInGo {
			claims = settlePageClaims(ctx, f, ft.chunks, claims) // the rest to DuckDB
		}
		if err == nil {
			err = r.columnIndexDisagreement(ctx, f, ft.chunks, claims)
		}
		var unv errUnverifiable
		switch {
		case errors.As(err, &unv):
			return quote(fmt.Errorf("file %s has page statistics or a page index, which readers (DuckDB 2.0, Spark) skip pages by, that the audit cannot check (%s): refused rather than read otherwise than they may", objPath[f], unv.why), err)
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return quote(fmt.Errorf("file %s: %w", objPath[f], err), err)
		}
		if keyed {
			r.e.memo.put(key, true, 48)
		}
	}
	return nil
}

// footerCount counts the column chunks of Parquet file f matching cond in
// DuckDB's reading of its footer (parquet_metadata), for a footer the Go
// reader gave up on. Not found: DuckDB reads neither the footer nor the
// file alone, which is left for the view to report. A failure for the
// run's sake (ctx ended, the machine failed: infrastructure) is returned
// as it is; a footer parquet_metadata cannot read in a file DuckDB reads
// is refused (cannot's error, quoting the failure): passed unread, its
// claims would be checked by nothing
// (TestReview46FooterMetadataThatFailsIsNotPassedUnseen).
func (r *run) footerCount(ctx context.Context, f, cond string, cannot func(err error) error) (n int64, found bool, err error) {
	qerr := r.pool().QueryRowContext(ctx, "SELECT count(*) FROM parquet_metadata("+quoteLiteral(f)+") WHERE "+cond).Scan(&n)
	if r.e.scanFault != nil && qerr == nil {
		qerr = r.e.scanFault("footer")
	}
	switch {
	case qerr == nil:
		return n, true, nil
	case ctx.Err() != nil:
		return 0, false, ctx.Err()
	case infrastructure(qerr):
		return 0, false, qerr
	}
	switch ok, err := r.bindsAlone(ctx, FormatParquet, f); {
	case err != nil:
		return 0, false, err
	case !ok:
		return 0, false, nil
	}
	return 0, false, quote(cannot(qerr), qerr)
}

// checkReaderIndexes checks the bloom filters and the OffsetIndexes of
// the chunks of the Parquet file at path, and returns the claims of its
// ColumnIndexes, for columnIndexDisagreement to compare with the data.
func checkReaderIndexes(ctx context.Context, path string, chunks []chunkMeta) ([]pageClaim, error) {
	var file *os.File
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	var size int64
	var zd *zstd.Decoder
	defer func() {
		if zd != nil {
			zd.Close()
		}
	}()
	var claims []pageClaim
	rowBase, lastGroup := int64(0), 0
	for i, c := range chunks {
		if c.rowGroup != lastGroup {
			rowBase += chunks[i-1].rows
			lastGroup = c.rowGroup
		}
		indexed := c.bloomOffset >= 0 || c.colIdxOffset >= 0 || c.offIdxOffset >= 0
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.hasMeta && c.dictOffset > c.dataOffset {
			return nil, fmt.Errorf("row group %d, column %q names its dictionary page at %d, after its first data page at %d: DuckDB reads the chunk's pages from the one, pyarrow from the other, so they read other values", c.rowGroup, c.path, c.dictOffset, c.dataOffset)
		}
		c.ctx = ctx
		if file == nil {
			var err error
			if file, err = os.Open(path); err != nil {
				return nil, err
			}
			info, err := file.Stat()
			if err != nil {
				return nil, err
			}
			size = info.Size()
		}
		if c.column == 0 {
			if err := groupInFile(chunks, i, size); err != nil {
				return nil, err
			}
		}
		what := "a bloom filter, which readers (DuckDB, Spark) skip the row group by,"
		pages, err := walkPages(file, size, c)
		if c.dictionaryOnly() {
			// Spark's dictionary filter skips by the claim
			// (TestReview11DictionaryOnlyClaimsAreCompared).
			if err != nil {
				return nil, fmt.Errorf("row group %d, column %q says its data pages are all dictionary-encoded, which Spark skips row groups by (its dictionary lacking a constant), and its pages cannot be read to check it (%v): refused rather than read otherwise than Spark may", c.rowGroup, c.path, err)
			}
			for i, p := range slices.DeleteFunc(slices.Clone(pages), func(p pageInfo) bool { return !p.data() }) {
				if p.h.encoding != 2 && p.h.encoding != 8 {
					return nil, fmt.Errorf("row group %d, column %q says its data pages are all dictionary-encoded, and its data page %d is of encoding %d: Spark, which skips a row group whose dictionary lacks an equality's constant, reads other rows than the audit read", c.rowGroup, c.path, i, p.h.encoding)
				}
			}
		}
		if c.hasMeta && c.maxRep == 0 {
			// DuckDB counts rows by num_rows without reading the pages,
			// pyarrow and pandas read the pages
			// (TestReview11RowCountsThePagesDoNotHoldAreRefused).
			var values int64
			for _, p := range pages {
				if p.data() {
					values += int64(p.h.numValues)
				}
			}
			whole := len(pages) > 0 && pages[len(pages)-1].end() == chunkStart(c)+c.totalCompressed
			if c.numValues != c.rows || (err != nil && whole && values != c.numValues) {
				return nil, fmt.Errorf("row group %d, column %q: its metadata says %d values in %d rows, its pages hold %d: DuckDB counts the rows the metadata says without reading them, pyarrow and pandas read the pages", c.rowGroup, c.path, c.numValues, c.rows, values)
			}
		}
		if c.hasMeta && c.maxRep > 0 {
			// A repeated leaf (a list's or a map's): DuckDB's count(*) and
			// pyarrow's count_rows take num_rows, pyarrow's read_table and
			// pandas the records the pages hold, or fail beside a flat
			// column of num_rows values, and Spark makes up empty lists
			// (TestRowCountsOfListOnlyFilesAreCountedFromTheirPages,
			// TestRowCountsOfListLeavesBesideFlatOnesAreCounted).
			if err != nil {
				return nil, fmt.Errorf("row group %d, column %q: a list's or map's leaf whose pages cannot be read to count its records (%v), which pyarrow and pandas read where DuckDB counts the %d rows its metadata says: refused rather than counted otherwise than they may", c.rowGroup, c.path, err, c.rows)
			}
			n, rerr := chunkRecords(file, c, pages, &zd)
			var unv errUnverifiable
			switch {
			case errors.As(rerr, &unv):
				return nil, fmt.Errorf("row group %d, column %q: a list's or map's leaf whose pages' records the audit cannot count (%s), which pyarrow and pandas read where DuckDB counts the %d rows its metadata says: refused rather than counted otherwise than they may", c.rowGroup, c.path, unv.why, c.rows)
			case rerr != nil:
				return nil, fmt.Errorf("row group %d, column %q: %w", c.rowGroup, c.path, rerr)
			case n != c.rows:
				return nil, fmt.Errorf("row group %d, column %q: its metadata says %d rows, its pages hold %d records: DuckDB counts the rows the metadata says without reading them, pyarrow and pandas read the pages", c.rowGroup, c.path, c.rows, n)
			}
		}
		stats := slices.ContainsFunc(pages, func(p pageInfo) bool { return p.h.stats != nil })
		if err != nil && !indexed && !stats {
			continue // no index, no page statistics before what the walk cannot read
		}
		if !indexed {
			what = "page statistics, which readers (DuckDB 2.0) skip pages by,"
		}
		if err == nil && c.bloomOffset >= 0 {
			err = checkBloom(file, size, c, pages, &zd)
		}
		if err == nil && (c.colIdxOffset >= 0 || c.offIdxOffset >= 0) {
			what = "a page index, which readers (DuckDB 2.0, Spark) skip pages by,"
			var cl []pageClaim
			cl, err = checkPageIndex(file, size, c, i, pages, rowBase, &zd)
			claims = append(claims, cl...)
		}
		if err == nil && stats {
			what = "page statistics, which readers (DuckDB 2.0) skip pages by,"
			var cl []pageClaim
			cl, err = headerClaims(file, c, i, pages, rowBase, &zd)
			claims = append(claims, cl...)
		}
		where := fmt.Sprintf("row group %d, column %q", c.rowGroup, c.path)
		var unv errUnverifiable
		switch {
		case errors.As(err, &unv):
			return nil, fmt.Errorf("%s has %s that the audit cannot check (%s): refused rather than read otherwise than they may", where, what, unv.why)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // a walk it stopped is no check
	}
	// One pass over each column's rows: its pages in file order.
	slices.SortStableFunc(claims, func(a, b pageClaim) int {
		return cmp.Or(cmp.Compare(chunks[a.chunk].column, chunks[b.chunk].column), strings.Compare(a.source, b.source), cmp.Compare(a.lo, b.lo))
	})
	return claims, nil
}

// chunkRecords counts the records the data pages of a repeated leaf
// hold: a V2 page says its rows, a V1 page's records are its repetition
// levels of 0 (a record may run on into the next page: it counts where it
// begins).
func chunkRecords(f io.ReaderAt, c chunkMeta, pages []pageInfo, zd **zstd.Decoder) (int64, error) {
	var n int64
	for _, p := range pages {
		if !p.data() {
			continue
		}
		if p.h.v2 {
			if p.h.numRows < 0 {
				return 0, unverifiable("a page at %d of %d rows", p.offset, p.h.numRows)
			}
			n += int64(p.h.numRows)
			continue
		}
		b, err := readBody(f, c, p, zd)
		if err != nil {
			return 0, err
		}
		rep, _, err := v1Levels(c, p.h, b)
		if err != nil {
			return 0, err
		}
		z, _, err := rleZeros(rep, bits.Len(uint(c.maxRep)), int(p.h.numValues))
		if err != nil {
			return 0, err
		}
		n += int64(z)
	}
	return n, nil
}

// bloomSalt are the split-block bloom filter's eight salts, as the Parquet
// format's BloomFilter.md gives them.
var bloomSalt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

// bloomHas: the split-block bitset holds hash h.
func bloomHas(bitset []byte, h uint64) bool {
	blocks := uint64(len(bitset) / 32)
	b := ((h >> 32) * blocks) >> 32
	key := uint32(h)
	blk := bitset[b*32 : b*32+32]
	for i, s := range bloomSalt {
		w := binary.LittleEndian.Uint32(blk[4*i:])
		if w&(1<<((key*s)>>27)) == 0 {
			return false
		}
	}
	return true
}

// readBloom reads the BloomFilterHeader at c.bloomOffset and its bitset.
func readBloom(f *os.File, size int64, c chunkMeta) ([]byte, error) {
	if c.bloomOffset < 4 || c.bloomOffset >= size {
		return nil, unverifiable("its offset %d is outside the file", c.bloomOffset)
	}
	hb := make([]byte, min(64, size-c.bloomOffset))
	if _, err := f.ReadAt(hb, c.bloomOffset); err != nil {
		return nil, err
	}
	d := &compactReader{b: hb}
	var numBytes int32
	var algo, hash, comp bool
	// BloomFilterHeader: numBytes, then the unions algorithm (BLOCK),
	// hash (XXHASH) and compression (UNCOMPRESSED), each of one empty struct.
	union := func(want int16, ok *bool) error {
		n := 0
		err := d.fields(func(id int16, t byte) (bool, error) {
			n++
			if id != want || t != ctStruct {
				return false, nil
			}
			*ok = true
			return false, nil // the empty struct is skipped
		})
		if n != 1 {
			*ok = false
		}
		return err
	}
	err := d.fields(func(id int16, t byte) (bool, error) {
		var err error
		switch {
		case id == 1 && t == ctI32:
			numBytes, err = d.i32()
		case id == 2 && t == ctStruct:
			err = union(1, &algo)
		case id == 3 && t == ctStruct:
			err = union(1, &hash)
		case id == 4 && t == ctStruct:
			err = union(1, &comp)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, unverifiable("its header: %v", err)
	}
	if !algo || !hash || !comp {
		return nil, unverifiable("not a split-block, xxhash, uncompressed filter")
	}
	if numBytes < 32 || numBytes > bloomMaxBytes || bits.OnesCount32(uint32(numBytes)) != 1 {
		return nil, unverifiable("a bitset of %d bytes", numBytes)
	}
	start := c.bloomOffset + int64(d.i)
	if start+int64(numBytes) > size || (c.bloomLength >= 0 && int64(d.i)+int64(numBytes) != c.bloomLength) {
		return nil, unverifiable("a bitset of %d bytes after a header of %d does not fill its length %d in the file", numBytes, d.i, c.bloomLength)
	}
	bitset := make([]byte, numBytes)
	if _, err := f.ReadAt(bitset, start); err != nil {
		return nil, err
	}
	return bitset, nil
}

// pageHeader is what the indexes' checks keep of a PageHeader.
type pageHeader struct {
	typ                  int32
	uncompressed         int32
	compressed           int32
	numValues            int32
	encoding             int32
	defEnc, repEnc       int32
	defBytes, repBytes   int32 // V2
	numRows              int32 // V2
	compressedV2         bool  // V2's is_compressed (true unless said)
	stats                *pageStats
	hasData, hasDict, v2 bool
}

// readPageHeader reads the PageHeader at off, before end.
func readPageHeader(f io.ReaderAt, off, end int64) (pageHeader, int, error) {
	for n := int64(512); ; n *= 8 { // a header is tens of bytes, more with long bounds
		n = min(n, end-off, pageHeaderMax)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil {
			return pageHeader{}, 0, err
		}
		d := &compactReader{b: buf}
		h, err := d.pageHeader()
		if errors.Is(err, errShort) && n < min(end-off, pageHeaderMax) {
			continue
		}
		if err != nil {
			return h, 0, unverifiable("the page header at %d: %v", off, err)
		}
		return h, d.i, nil
	}
}

func (d *compactReader) pageHeader() (pageHeader, error) {
	h := pageHeader{typ: -1, compressedV2: true}
	i32 := func(p *int32) error {
		v, err := d.i32()
		*p = v
		return err
	}
	err := d.fields(func(id int16, t byte) (bool, error) {
		switch {
		case id == 1 && t == ctI32:
			return true, i32(&h.typ)
		case id == 2 && t == ctI32:
			return true, i32(&h.uncompressed)
		case id == 3 && t == ctI32:
			return true, i32(&h.compressed)
		case id == 5 && t == ctStruct:
			h.hasData = true
			return true, d.fields(func(id int16, t byte) (bool, error) {
				switch {
				case id == 1 && t == ctI32:
					return true, i32(&h.numValues)
				case id == 2 && t == ctI32:
					return true, i32(&h.encoding)
				case id == 3 && t == ctI32:
					return true, i32(&h.defEnc)
				case id == 4 && t == ctI32:
					return true, i32(&h.repEnc)
				case id == 5 && t == ctStruct:
					st, err := d.pageStatistics()
					h.stats = st
					return true, err
				}
				return false, nil
			})
		case id == 7 && t == ctStruct:
			h.hasDict = true
			return true, d.fields(func(id int16, t byte) (bool, error) {
				switch {
				case id == 1 && t == ctI32:
					return true, i32(&h.numValues)
				case id == 2 && t == ctI32:
					return true, i32(&h.encoding)
				}
				return false, nil
			})
		case id == 8 && t == ctStruct:
			h.v2 = true
			return true, d.fields(func(id int16, t byte) (bool, error) {
				switch {
				case id == 1 && t == ctI32:
					return true, i32(&h.numValues)
				case id == 3 && t == ctI32:
					return true, i32(&h.numRows)
				case id == 4 && t == ctI32:
					return true, i32(&h.encoding)
				case id == 5 && t == ctI32:
					return true, i32(&h.defBytes)
				case id == 6 && t == ctI32:
					return true, i32(&h.repBytes)
				case id == 7 && (t == ctTrue || t == ctFalse):
					h.compressedV2 = t == ctTrue
					return true, nil
				case id == 8 && t == ctStruct:
					st, err := d.pageStatistics()
					h.stats = st
					return true, err
				}
				return false, nil
			})
		}
		return false, nil
	})
	return h, err
}

// decompress uncompresses a page's body by the chunk's codec.
func decompress(codec int32, src []byte, size int, zd **zstd.Decoder) ([]byte, error) {
	if size < 0 || size > pageMaxBytes {
		return nil, unverifiable("a page of %d bytes uncompressed", size)
	}
	var out []byte
	var err error
	switch codec {
	case 0: // UNCOMPRESSED
		out = src
	case 1: // SNAPPY
		var n int
		if n, err = snappy.DecodedLen(src); err == nil && n != size {
			return nil, unverifiable("a snappy page of %d bytes, its header says %d", n, size)
		}
		out, err = snappy.DecodeStrict(make([]byte, size), src)
	case 2: // GZIP
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, int64(size)+1))
		}
	case 4: // BROTLI
		out, err = io.ReadAll(io.LimitReader(brotli.NewReader(bytes.NewReader(src)), int64(size)+1))
	case 6: // ZSTD
		if *zd == nil {
			if *zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(pageMaxBytes)); err != nil {
				return nil, err
			}
		}
		out, err = (*zd).DecodeAll(src, make([]byte, 0, size))
	case 7: // LZ4_RAW
		out = make([]byte, size)
		var n int
		n, err = lz4.UncompressBlock(src, out)
		out = out[:max(n, 0)]
	default:
		return nil, unverifiable("compression codec %d", codec)
	}
	if err != nil {
		return nil, unverifiable("a page that does not decompress: %v", err)
	}
	if len(out) != size {
		return nil, unverifiable("a page of %d bytes uncompressed, its header says %d", len(out), size)
	}
	return out, nil
}

// pageInfo is a page of a column chunk as walkPages found it.
type pageInfo struct {
	offset    int64 // of its header
	headerLen int
	h         pageHeader
	firstRow  int64 // of a data page: its first row in the row group (pageRows)
}

func (p pageInfo) body() int64 { return p.offset + int64(p.headerLen) }
func (p pageInfo) end() int64  { return p.body() + int64(p.h.compressed) }
func (p pageInfo) data() bool  { return (p.h.typ == 0 && p.h.hasData) || (p.h.typ == 3 && p.h.v2) }

// chunkStart is where a chunk's pages begin, as DuckDB and pyarrow read
// it: its dictionary page if it names one before its first data page (one
// named after it is refused: they read from different places).
func chunkStart(c chunkMeta) int64 {
	if c.dictOffset > 0 {
		return min(c.dataOffset, c.dictOffset)
	}
	return c.dataOffset
}

// walkPages reads the page headers of chunk c, from its start to its end
// exactly: at most one dictionary page, first, then data pages whose
// values add up to the chunk's.
func walkPages(f io.ReaderAt, size int64, c chunkMeta) ([]pageInfo, error) {
	if !c.hasMeta {
		return nil, unverifiable("a chunk without metadata")
	}
	if c.dictOffset > c.dataOffset {
		// DuckDB starts the chunk at the dictionary page it names,
		// pyarrow at the lesser offset: which pages it holds is the
		// reader's (TestReview11ADictionaryOffsetAfterTheDataIsNotSettledInGo).
		return nil, unverifiable("a dictionary_page_offset %d after its data_page_offset %d", c.dictOffset, c.dataOffset)
	}
	start := chunkStart(c)
	end := start + c.totalCompressed
	if start < 4 || c.totalCompressed <= 0 || end > size || end < start {
		return nil, unverifiable("pages at %d..%d outside the file", start, end)
	}
	var pages []pageInfo
	var values int64
	for off := start; off < end; {
		if len(pages) >= chunkMaxPages {
			return nil, unverifiable("more than %d pages", chunkMaxPages)
		}
		if err := c.ended(); err != nil {
			return nil, err
		}
		h, n, err := readPageHeader(f, off, end)
		if err != nil {
			return pages, err
		}
		p := pageInfo{offset: off, headerLen: n, h: h}
		pages = append(pages, p) // for the caller to see, whatever follows
		if h.compressed < 0 || h.uncompressed < 0 || h.compressed > pageMaxBytes || p.end() > end {
			return pages, unverifiable("a page of %d bytes at %d past its chunk", h.compressed, off)
		}
		if n := btoi(h.hasData) + btoi(h.hasDict) + btoi(h.v2); n > 1 {
			// Their fields share pageHeader's: DuckDB reads a page by its
			// type's struct, this walk might by another's
			// (TestReview11APageOfBothHeaderKindsIsNotSettledInGo).
			return pages, unverifiable("a page header at %d of type %d with %d kinds of page header", off, h.typ, n)
		}
		switch {
		case h.typ == 2 && h.hasDict: // DICTIONARY_PAGE
			if off != start || (h.encoding != 0 && h.encoding != 2) {
				return pages, unverifiable("a dictionary page at %d of encoding %d", off, h.encoding)
			}
		case p.data():
			if h.numValues < 0 {
				return pages, unverifiable("a page of %d values", h.numValues)
			}
			values += int64(h.numValues)
		default:
			return pages, unverifiable("a page of type %d at %d", h.typ, off)
		}
		off = p.end()
	}
	if values != c.numValues {
		return pages, unverifiable("pages of %d values, its metadata says %d", values, c.numValues)
	}
	return pages, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readBody reads and uncompresses a page's body.
func readBody(f io.ReaderAt, c chunkMeta, p pageInfo, zd **zstd.Decoder) ([]byte, error) {
	if err := c.ended(); err != nil {
		return nil, err
	}
	raw := make([]byte, p.h.compressed)
	if _, err := f.ReadAt(raw, p.body()); err != nil {
		return nil, err
	}
	if p.h.v2 {
		return raw, nil // pageValues and pageRows uncompress the parts they read
	}
	return decompress(c.codec, raw, int(p.h.uncompressed), zd)
}

// checkBloom checks c's bloom filter against the chunk's values: those of
// its dictionary page and of its PLAIN data pages.
func checkBloom(f *os.File, size int64, c chunkMeta, pages []pageInfo, zd **zstd.Decoder) error {
	width := 0
	switch c.physical {
	case 0: // BOOLEAN: the format hashes no BOOLEAN value, and no reader
		// skips by such a filter (DuckDB 1.5 and 2.0, Spark: measured),
		// which parquet-mr writes when asked for every chunk.
		return nil
	case 1, 4: // INT32, FLOAT
		width = 4
	case 2, 5: // INT64, DOUBLE
		width = 8
	case 3: // INT96
		width = 12
	case 6: // BYTE_ARRAY
	case 7: // FIXED_LEN_BYTE_ARRAY
		if c.typeLength <= 0 {
			return unverifiable("a fixed length of %d", c.typeLength)
		}
		width = int(c.typeLength)
	default:
		return unverifiable("physical type %d", c.physical)
	}
	bitset, err := readBloom(f, size, c)
	if err != nil {
		return err
	}
	check := func(vals []byte) error {
		return plainValues(vals, width, func(v []byte) error {
			if !bloomHas(bitset, xxhash.Sum64(v)) {
				return fmt.Errorf("its bloom filter excludes %s, a value its rows hold: a reader that skips row groups by it (DuckDB, Spark) reads other rows than the audit read for WHERE %s = that value", renderValue(c.physical, v), quoteIdent(c.path))
			}
			return nil
		})
	}
	dict := false
	for _, p := range pages {
		if p.data() {
			switch p.h.encoding {
			case 2, 8: // PLAIN_DICTIONARY, RLE_DICTIONARY: indexes into the dictionary
				if !dict {
					return unverifiable("a dictionary-encoded page without a dictionary")
				}
				continue
			case 0: // PLAIN
			default:
				return unverifiable("a data page of encoding %d", p.h.encoding)
			}
		}
		b, err := readBody(f, c, p, zd)
		if err != nil {
			return err
		}
		if !p.data() {
			dict = true
		} else if b, err = pageValues(c, p.h, b, zd); err != nil {
			return err
		}
		if err := check(b); err != nil {
			return err
		}
	}
	return nil
}

// pageValues are the PLAIN-encoded values of a data page whose body is b
// (readBody), its levels skipped.
func pageValues(c chunkMeta, h pageHeader, b []byte, zd **zstd.Decoder) ([]byte, error) {
	if h.v2 {
		lv := int(h.defBytes) + int(h.repBytes)
		if h.defBytes < 0 || h.repBytes < 0 || lv > len(b) || lv > int(h.uncompressed) {
			return nil, unverifiable("a V2 page's levels of %d bytes", lv)
		}
		if !h.compressedV2 {
			if len(b) != int(h.uncompressed) {
				return nil, unverifiable("an uncompressed V2 page of %d bytes, its header says %d", len(b), h.uncompressed)
			}
			return b[lv:], nil
		}
		return decompress(c.codec, b[lv:], int(h.uncompressed)-lv, zd)
	}
	_, b, err := v1Levels(c, h, b)
	return b, err
}

// v1Levels splits the uncompressed body of a V1 data page: its
// repetition levels (RLE, without their length) and what follows its
// definition levels.
func v1Levels(c chunkMeta, h pageHeader, b []byte) (rep, rest []byte, err error) {
	skip := func(enc int32) ([]byte, error) {
		if enc != 3 { // RLE, length-prefixed; BIT_PACKED is not
			return nil, unverifiable("levels of encoding %d", enc)
		}
		if len(b) < 4 {
			return nil, unverifiable("a page ends in its levels")
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return nil, unverifiable("levels of %d bytes past the page", n)
		}
		lv := b[4 : 4+n]
		b = b[4+n:]
		return lv, nil
	}
	if c.maxRep > 0 {
		if rep, err = skip(h.repEnc); err != nil {
			return nil, nil, err
		}
	}
	if c.maxDef > 0 {
		if _, err = skip(h.defEnc); err != nil {
			return nil, nil, err
		}
	}
	return rep, b, nil
}

// plainValues calls fn with each value of PLAIN-encoded b: width bytes
// each, or (width 0) BYTE_ARRAYs, each after its 4-byte length.
func plainValues(b []byte, width int, fn func([]byte) error) error {
	if width > 0 {
		if len(b)%width != 0 {
			return unverifiable("%d bytes of values of %d", len(b), width)
		}
		for i := 0; i < len(b); i += width {
			if err := fn(b[i : i+width]); err != nil {
				return err
			}
		}
		return nil
	}
	for len(b) > 0 {
		if len(b) < 4 {
			return unverifiable("a value's length cut")
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return unverifiable("a value of %d bytes past the page", n)
		}
		if err := fn(b[4 : 4+n]); err != nil {
			return err
		}
		b = b[4+n:]
	}
	return nil
}

// renderValue is a value of a refusal: an integer in decimal, text
// quoted, anything else in hex, cut at chunkValueRender bytes.
func renderValue(physical int32, v []byte) string {
	switch {
	case physical == 1 && len(v) == 4:
		return strconv.FormatInt(int64(int32(binary.LittleEndian.Uint32(v))), 10)
	case physical == 2 && len(v) == 8:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(v)), 10)
	}
	cut := ""
	if len(v) > chunkValueRender {
		v, cut = v[:chunkValueRender], "..."
	}
	if physical == 6 && utf8.Valid(v) {
		return strconv.Quote(string(v)) + cut
	}
	return "0x" + strings.ToUpper(hex.EncodeToString(v)) + cut
}
