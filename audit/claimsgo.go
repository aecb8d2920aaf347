package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Row-group claims settled from the pages, in Go. claimsHold compared
// every claimed leaf with DuckDB's aggregates of it (count, min and max),
// and over a small batch each aggregate costs DuckDB more to bind and set
// up than to compute: the claims added 6 expressions to the demo suite's
// fused statement for its two columns no check reads, about 0.3 ms of a
// first audit's 4 ms. A leaf whose pages the Go reader reads (readBody,
// as the bloom filter's check does) is now compared from them: its values
// (PLAIN, or dictionary indexes decoded into the dictionary's values) and
// its definition levels give the chunk's count of values, min and max, in
// the shape of the aggregates (goChunkFigures), and chunkHolds compares
// them with the claims as it compares DuckDB's. Only a leaf whose claims
// hold in every row group so is settled; anything else (a claim that does
// not hold, an encoding, a codec or a type this reading does not take, a
// value DuckDB would not read as these bytes: text that is not UTF-8, a
// NaN, an out-of-range index) leaves the leaf to DuckDB, which compares
// and refuses as before, with the same message. So the Go reading can
// only spare work: a file it settles wrongly would be a claim that does
// not hold and that it reports held (TestGoSettledClaimsThatLieAreRefused
// plants one in each way it reads).
//
// A page's claims (its column index, its header's statistics) are
// settled alike from that page's figures (settlePageClaims), which
// columnIndexDisagreement compared in a statement binding every page's
// bounds as literals (about 0.1 ms a page and column).
//
// Types taken: byte arrays (strings, enums, JSON, binary), INT32 and
// INT64 signed or unsigned at their full width, FLOAT, DOUBLE and DATE,
// each read by DuckDB as the plain value's bytes. Leaves under a
// repeated field are not compared at all (claims.go).

// goClaimsMaxBytes bounds the compressed bytes of a file's column chunks
// read in Go for its claims: past it, DuckDB's scan, vectorized, is left
// the whole file (a file of 1.8 MB, 200,000 rows of 4 columns: 27 ms in
// Go, 28 ms of wall time for DuckDB's scan on 2 threads).
const goClaimsMaxBytes = 2 << 20

// goClaimsFusedRows bounds the rows of a batch's file whose claims are
// read in Go when the fused statement, which scans the file anyway, would
// compute their aggregates: DuckDB's were the cheaper past about a
// thousand rows (a column of 1,000 values: about 50 µs in Go, 35 µs of
// DuckDB's three aggregates in that statement).
const goClaimsFusedRows = 512

// goClaims reads the pages of one Parquet file for its claims.
type goClaims struct {
	ctx    context.Context
	path   string
	f      *bytes.Reader // the file
	size   int64
	chunks []chunkMeta
	zd     *zstd.Decoder
	budget int64
	failed bool // the file did not open: nothing is settled
}

func newGoClaims(ctx context.Context, path string, chunks []chunkMeta) *goClaims {
	return &goClaims{ctx: ctx, path: path, chunks: chunks, budget: goClaimsMaxBytes}
}

func (g *goClaims) close() {
	if g.zd != nil {
		g.zd.Close()
	}
}

// settled: leaf k's claims hold in every row group of groups, as its
// pages read in Go show; false when they do not or it cannot tell.
func (g *goClaims) settled(leaves []leafColumn, k int, groups []rowGroupClaims) bool {
	l := leaves[k]
	gl, ok := goLeafOf(l)
	if !ok || g.failed {
		return false
	}
	for gi, grp := range groups {
		i := gi*len(leaves) + k
		if i >= len(g.chunks) {
			return false
		}
		c := g.chunks[i]
		if c.rowGroup != gi || c.column != k || !slices.Equal(c.parts, l.path) || c.maxRep != 0 ||
			c.physical != l.physical || c.numValues != grp.rows || grp.rows <= 0 {
			return false
		}
		pages, ok := g.pageFigures(gl, c)
		if !ok || chunkHolds(l, grp.chunks[k], grp.rows, chunkFigures(gl, pages)) != nil {
			return false
		}
	}
	return true
}

// goLeaf is a leaf as the Go reading takes its plain values: their
// order (claimBytes, claimInt, claimUint, claimFloat, claimDouble or
// claimDate), whether DuckDB reads them as text, their width (0 for a
// byte array).
type goLeaf struct {
	kind  claimKind
	text  bool
	width int
}

// goLeafOf is l as the Go reading takes it, if it does.
func goLeafOf(l leafColumn) (goLeaf, bool) {
	if l.repeated {
		return goLeaf{}, false
	}
	switch {
	case l.kind == claimBytes && l.physical == ptByteArray:
		return goLeaf{kind: claimBytes, text: l.text}, true
	case (l.kind == claimInt || l.kind == claimUint) && l.fullWidth && l.physical == ptInt32,
		l.kind == claimDate && l.physical == ptInt32, l.kind == claimFloat && l.physical == ptFloat:
		return goLeaf{kind: l.kind, width: 4}, true
	case (l.kind == claimInt || l.kind == claimUint) && l.fullWidth && l.physical == ptInt64,
		l.kind == claimDouble && l.physical == ptDouble:
		return goLeaf{kind: l.kind, width: 8}, true
	}
	return goLeaf{}, false
}

// goLeafOfChunk is the leaf of chunk c as the Go reading takes it, for
// its page claims (chunkDomain's domain of it is then the plain value's).
func goLeafOfChunk(c chunkMeta) (goLeaf, bool) {
	t := c.types
	if c.maxRep != 0 || t.converted == cvDecimal || t.logical == ltDecimal {
		return goLeaf{}, false
	}
	switch c.physical {
	case ptByteArray:
		switch {
		case t.converted == cvUTF8 || t.converted == cvEnum || t.converted == cvJSON || t.logical == ltString || t.logical == ltEnum || t.logical == ltJSON:
			return goLeaf{kind: claimBytes, text: true}, true
		case (t.converted == -1 || t.converted == cvBSON) && (t.logical == 0 || t.logical == ltBSON):
			return goLeaf{kind: claimBytes}, true
		}
	case ptInt32, ptInt64:
		width := map[int32]int{ptInt32: 4, ptInt64: 8}[c.physical]
		bits := int8(8 * width)
		conv := map[int32]int8{cvInt32: 32, cvInt64: 64, cvUint32: 32, cvUint64: 64}
		unsignedConv := t.converted == cvUint32 || t.converted == cvUint64
		switch {
		case c.physical == ptInt32 && (t.converted == cvDate || t.logical == ltDate) && (t.converted == -1 || t.converted == cvDate) && (t.logical == 0 || t.logical == ltDate):
			return goLeaf{kind: claimDate, width: 4}, true
		case t.logical == 0 && t.converted == -1,
			t.logical == 0 && conv[t.converted] == bits && !unsignedConv,
			t.logical == ltInteger && t.intBits == bits && !t.unsigned && (t.converted == -1 || conv[t.converted] == bits && !unsignedConv):
			return goLeaf{kind: claimInt, width: width}, true
		case t.logical == 0 && conv[t.converted] == bits && unsignedConv,
			t.logical == ltInteger && t.intBits == bits && t.unsigned && (t.converted == -1 || conv[t.converted] == bits && unsignedConv):
			return goLeaf{kind: claimUint, width: width}, true
		}
	case ptFloat, ptDouble:
		if t.converted == -1 && t.logical == 0 {
			return goLeaf{kind: map[int32]claimKind{ptFloat: claimFloat, ptDouble: claimDouble}[c.physical], width: map[int32]int{ptFloat: 4, ptDouble: 8}[c.physical]}, true
		}
	}
	return goLeaf{}, false
}

// pageFig is what a data page's values and levels show: its levels (its
// rows, in a leaf of no repetition), its values (levels of the maximum
// definition level), the least and the greatest of them (plain, nil
// without values).
type pageFig struct {
	levels, values int64
	lo, hi         []byte
}

// chunkFigures are the aggregates dataExprs asks of a chunk whose data
// pages are pages (its count of values, its min and max, and a float's
// NaN count: none, or pageFigures left the chunk to DuckDB).
func chunkFigures(l goLeaf, pages []pageFig) []any {
	var count int64
	var lo, hi []byte
	for _, p := range pages {
		count += p.values
		if p.lo == nil {
			continue
		}
		if lo == nil || plainCompare(l, p.lo, lo) < 0 {
			lo = p.lo
		}
		if hi == nil || plainCompare(l, p.hi, hi) > 0 {
			hi = p.hi
		}
	}
	out := []any{count, nil, nil}
	if lo != nil {
		out[1], out[2] = plainAggregate(l, lo), plainAggregate(l, hi)
	}
	if l.kind == claimFloat || l.kind == claimDouble {
		out = append(out, int64(0))
	}
	return out
}

// pageFigures are the figures of chunk c's data pages, in order, read
// from the pages; ok is false where the Go reading cannot tell (see
// above), or past the file's budget.
func (g *goClaims) pageFigures(l goLeaf, c chunkMeta) ([]pageFig, bool) {
	if g.failed {
		return nil, false
	}
	if g.budget -= c.totalCompressed; g.budget < 0 {
		return nil, false
	}
	c.ctx = g.ctx
	if g.f == nil {
		// The file in one read: its chunks are at most goClaimsMaxBytes.
		b, err := readAtMost(g.path, goClaimsMaxBytes+footerMaxBytes+12)
		if err != nil {
			g.failed = true
			return nil, false
		}
		g.f, g.size = bytes.NewReader(b), int64(len(b))
	}
	pages, err := walkPages(g.f, g.size, c)
	if err != nil {
		return nil, false
	}
	var (
		dict [][]byte
		figs []pageFig
		bad  bool
	)
	for i, p := range pages {
		b, err := readBody(g.f, c, p, &g.zd)
		if err != nil {
			return nil, false
		}
		if !p.data() {
			if i != 0 || dict != nil {
				return nil, false
			}
			dict = [][]byte{}
			if plainValues(b, l.width, func(v []byte) error { dict = append(dict, v); return nil }) != nil || len(dict) != int(p.h.numValues) ||
				slices.ContainsFunc(dict, func(v []byte) bool { return !goReadable(l, v) }) {
				return nil, false
			}
			continue
		}
		defs, vals, ok := g.levelsAndValues(c, p, b)
		if !ok {
			return nil, false
		}
		n := int(p.h.numValues)
		fig := pageFig{levels: int64(n), values: int64(n)}
		if c.maxDef > 0 {
			fig.values = 0
			if rleEach(defs, bits.Len(uint(c.maxDef)), n, func(v uint64) bool {
				if v == uint64(c.maxDef) {
					fig.values++
				}
				return v <= uint64(c.maxDef)
			}) != nil {
				return nil, false
			}
		}
		see := func(v []byte) {
			if bad {
				return
			}
			if !goReadable(l, v) {
				bad = true
				return
			}
			if fig.lo == nil || plainCompare(l, v, fig.lo) < 0 {
				fig.lo = v
			}
			if fig.hi == nil || plainCompare(l, v, fig.hi) > 0 {
				fig.hi = v
			}
		}
		if fig.values > 0 {
			switch p.h.encoding {
			case 0: // PLAIN
				m := int64(0)
				if plainValues(vals, l.width, func(v []byte) error { m++; see(v); return nil }) != nil || m != fig.values {
					return nil, false
				}
			case 2, 8: // PLAIN_DICTIONARY, RLE_DICTIONARY
				if len(dict) == 0 || len(vals) < 1 || vals[0] > 32 {
					return nil, false
				}
				if rleEach(vals[1:], int(vals[0]), int(fig.values), func(ix uint64) bool {
					if ix >= uint64(len(dict)) {
						return false
					}
					see(dict[ix])
					return true
				}) != nil {
					return nil, false
				}
			default:
				return nil, false
			}
		}
		if bad {
			return nil, false
		}
		figs = append(figs, fig)
	}
	return figs, true
}

// settlePageClaims is claims (of the Parquet file at path, whose chunks
// are chunks) without those its pages read in Go show to hold. A
// column's claims of one source are all taken out or all left:
// columnIndexDisagreement places each row in a page by the claims' rows.
func settlePageClaims(ctx context.Context, path string, chunks []chunkMeta, claims []pageClaim) []pageClaim {
	if len(claims) == 0 {
		return claims
	}
	g := newGoClaims(ctx, path, chunks)
	defer g.close()
	type span struct {
		column int
		source string
	}
	holds := map[span]bool{}
	figs := map[int][]pageFig{} // by chunk, nil where not read
	for _, cl := range claims {
		if cl.chunk < 0 || cl.chunk >= len(chunks) {
			return claims
		}
		c := chunks[cl.chunk]
		k := span{c.column, cl.source}
		if h, seen := holds[k]; seen && !h {
			continue
		}
		f, read := figs[cl.chunk]
		if !read {
			if l, ok := goLeafOfChunk(c); ok {
				if f, ok = g.pageFigures(l, c); !ok {
					f = nil
				}
			}
			figs[cl.chunk] = f
		}
		holds[k] = cl.page >= 0 && cl.page < len(f) && pageClaimHolds(cl, f[cl.page])
	}
	var out []pageClaim
	for _, cl := range claims {
		if !holds[span{chunks[cl.chunk].column, cl.source}] {
			out = append(out, cl)
		}
	}
	return out
}

// pageClaimHolds: claim cl holds for its page's figures f, as
// columnIndexDisagreement's comparison finds (a bound, null count or
// null page of the claim's that the data contradicts).
func pageClaimHolds(cl pageClaim, f pageFig) bool {
	if cl.hi-cl.lo != f.levels {
		return false // not the rows DuckDB would place in the page
	}
	if cl.nulls >= 0 && cl.nulls != f.levels-f.values {
		return false
	}
	if f.values == 0 {
		return true
	}
	if cl.nullPage || cl.domain.decode == nil {
		return false
	}
	lo, err := cl.domain.decode(f.lo)
	if err != nil {
		return false
	}
	hi, err := cl.domain.decode(f.hi)
	if err != nil {
		return false
	}
	for _, b := range [][2]bound{{cl.min, cl.max}, {cl.lmin, cl.lmax}} {
		if b[0].set() && cl.domain.cmp(lo, b[0]) < 0 || b[1].set() && cl.domain.cmp(hi, b[1]) > 0 {
			return false
		}
	}
	return true
}

// readAtMost reads the file at path, of at most max bytes.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > max {
		return nil, errors.New("not a regular file within the bound")
	}
	b := make([]byte, info.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// goReadable: DuckDB reads plain value v of l as these bytes, and
// chunkHolds's rules ask nothing more of it. Text that is not UTF-8 is
// DuckDB's error to report (the refusal), a NaN its rule to apply, and a
// DATE of the infinities' days is read as infinity.
func goReadable(l goLeaf, v []byte) bool {
	switch l.kind {
	case claimBytes:
		return !l.text || utf8.Valid(v)
	case claimFloat, claimDouble:
		return !math.IsNaN(plainFloat(v))
	case claimDate:
		d, _ := plainInt(v)
		return d > math.MinInt32+1 && d < math.MaxInt32
	}
	return true
}

// levelsAndValues splits the body b of data page p of a chunk of no
// repetition: its definition levels (RLE, without a length) and its
// values, uncompressed.
func (g *goClaims) levelsAndValues(c chunkMeta, p pageInfo, b []byte) (defs, vals []byte, ok bool) {
	if p.h.v2 {
		if p.h.repBytes != 0 || p.h.defBytes < 0 || int(p.h.defBytes) > len(b) || (c.maxDef == 0 && p.h.defBytes != 0) {
			return nil, nil, false
		}
		vals, err := pageValues(c, p.h, b, &g.zd)
		return b[:p.h.defBytes], vals, err == nil
	}
	if c.maxDef == 0 {
		return nil, b, true
	}
	if p.h.defEnc != 3 || len(b) < 4 { // RLE, length-prefixed
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// rleEach calls fn with each of the first n values of the RLE/bit-packed
// hybrid b of bit width bw (at most 32), until fn returns false.
func rleEach(b []byte, bw, n int, fn func(uint64) bool) error {
	if bw < 0 || bw > 32 {
		return unverifiable("a bit width of %d", bw)
	}
	per := (bw + 7) / 8
	for got := 0; got < n; {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return unverifiable("levels cut")
		}
		b = b[k:]
		if h&1 == 0 { // a run of one value
			cnt := h >> 1
			if cnt == 0 || len(b) < per {
				return unverifiable("a run cut")
			}
			var v uint64
			for i := range per {
				v |= uint64(b[i]) << (8 * i)
			}
			b = b[per:]
			for m := min(cnt, uint64(n-got)); m > 0; m-- {
				if !fn(v) {
					return unverifiable("a value out of range")
				}
				got++
			}
			continue
		}
		groups := h >> 1 // of 8 values, bit-packed
		if groups == 0 || groups > uint64(len(b)) || groups*uint64(bw) > uint64(len(b)) {
			return unverifiable("bit-packed values cut")
		}
		packed := b[:int(groups)*bw]
		for i := 0; i < int(groups)*8 && got < n; i++ {
			var v uint64
			bit := i * bw
			for j := 0; j < bw; {
				byt := packed[(bit+j)/8] >> ((bit + j) % 8)
				take := min(8-(bit+j)%8, bw-j)
				v |= uint64(byt&(1<<take-1)) << j
				j += take
			}
			if !fn(v) {
				return unverifiable("a value out of range")
			}
			got++
		}
		b = b[int(groups)*bw:]
	}
	return nil
}

// plainFloat is a FLOAT's or DOUBLE's plain value.
func plainFloat(v []byte) float64 {
	if len(v) == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v))
}

// plainInt is an INT32's or INT64's plain value, signed, and as unsigned.
func plainInt(v []byte) (int64, uint64) {
	if len(v) == 4 {
		u := binary.LittleEndian.Uint32(v)
		return int64(int32(u)), uint64(u)
	}
	u := binary.LittleEndian.Uint64(v)
	return int64(u), u
}

// plainCompare orders two plain values of l (goClaimWidth's types).
func plainCompare(l goLeaf, a, b []byte) int {
	switch l.kind {
	case claimBytes:
		return bytes.Compare(a, b)
	case claimFloat, claimDouble:
		return compareFloat(plainFloat(a), plainFloat(b))
	case claimUint:
		_, x := plainInt(a)
		_, y := plainInt(b)
		return cmp.Compare(x, y)
	}
	x, _ := plainInt(a)
	y, _ := plainInt(b)
	return cmp.Compare(x, y)
}

// plainAggregate is plain value v of l as dataValue reads DuckDB's
// aggregate of it.
func plainAggregate(l goLeaf, v []byte) any {
	switch l.kind {
	case claimBytes:
		return v
	case claimFloat, claimDouble:
		return plainFloat(v)
	case claimUint:
		_, u := plainInt(v)
		return u
	}
	s, _ := plainInt(v)
	return s
}
