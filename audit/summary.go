package audit

import (
	"cmp"
	"container/list"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Summaries of unchanged files. An incremental audit takes the unchanged
// files' row counts and min and max from their statistics; over a table of
// thousands of files that made every recheck at the publish turn look up
// every file's statistics (a key hashed per file) and reduce every file's
// min and max again (reduceMinMax, a parse of each figure), although the
// target had gained only the files of the batches published since the last
// audit, whose statistics their own audits had stored. The engine now keeps
// the last few summaries of such a file set (summaryCache): the files (path,
// physical address, size, in path order), their statistics, and what the
// checks take of them all (the rows, the rows meeting each where condition,
// each column's reduced min and max). An audit whose unchanged files hold a
// kept set whole takes the kept set's statistics and figures, looks up the
// statistics of the other files only (the gained ones), and folds them in.
//
// A summary is reused only for files with the same path, physical address
// and size (the statistics' own key: the bytes at an address never change),
// under the same repository, table path, format and statistics asked for
// (summaryKey); a set it does not hold whole (a file removed or rewritten)
// is summed up again from every file. The figures are exactly those of the
// files one by one: row counts add up; a min and max folds in only where
// the order decides alone (minMaxFold), else the audit reduces the files'
// figures as before.

// summaryCache bounds: at most summaryMaxEntries summaries of at most
// summaryMaxBytes together (summaryBytes); the least recently used goes
// first. A summary of a table of 10,000 files of two figures each takes
// about 14 MiB (summaryBytes).
const (
	summaryMaxEntries = 16
	summaryMaxBytes   = 32 << 20
)

// summaryFile is a file of a summary: what its statistics are keyed by.
type summaryFile struct {
	path, address string
	size          int64
}

// fileSummary is what the checks of an incremental audit take from a set
// of unchanged files.
type fileSummary struct {
	files  []summaryFile // in path order
	stats  []fileStats   // the files' statistics, in the same order
	rows   int64
	counts map[string]int64      // rows meeting each where condition, by whereKey
	cols   map[string]minMaxFold // by colNeed.key()
	// keys is each column's figures file by file, parsed once (see
	// keyColumn), by colNeed.key().
	keys map[string]*keyColumn
	// nulls are the types its files without a column a where reads
	// read their NULLs in (fileStats.Nulls), by lower-case name; a name
	// read in two types is "" (never the table's: not used).
	nulls     map[string]string
	statBytes int64 // summaryBytes(files, stats)
	bytes     int64 // statBytes and the keys'
}

// keyColumn is one column's figures in each file of a summary, in the
// files' order, read from their statistics once per summary (a summary
// folded from a kept one takes the kept one's and reads the gained files'
// only): unique's incremental plan goes over every unchanged file for the
// ones whose key range can hold a batch key, and adds up every file's
// non-NULL count and integer range for pandas' reading. Doing that from
// the statistics (a map lookup and four integer parses per file, two big
// integers more for the range) was most of the audit's cost that grew with
// the table (BenchmarkAuditManyFiles).
type keyColumn struct {
	files   []keyFile
	nonNull int64    // the files' non-NULL values
	ints    intRange // the integer-typed files' min and max, as intRange.add takes them
	wide    string   // the type of the last integer-typed file in path order, or ""
	// types counts the files of each type of the column ("": files
	// without it); with one, what pandas reads of the unchanged files is
	// told from the figures above (pandasColumn).
	types map[string]int
}

// keyFile is one file's figures of a key column.
type keyFile struct {
	rows, nonNull int64
	// min and max, when parsed: the column is of an integer type and
	// strconv.ParseInt takes both (as rangesMeet compares them).
	min, max int64
	parsed   bool
	intType  string // the column's type, when an integer type
	// The column's min and max, when both are set and it is VARCHAR
	// (rangesMeet compares them as text).
	textMin, textMax string
	// noRange: its min or max is not set (rangesMeet: any range meets it).
	noRange bool
}

// keyFileBytes is what keyColumn keeps per file (summaryBytes; the text
// figures are the statistics' own strings).
const keyFileBytes = 96

func keyFileOf(st fileStats, col string) keyFile {
	cs := st.Cols[col]
	k := keyFile{rows: st.Rows, nonNull: cs.NonNull, noRange: cs.Min == "" || cs.Max == ""}
	if cs.Type == "VARCHAR" && !k.noRange {
		k.textMin, k.textMax = cs.Min, cs.Max
	}
	if !integerType(cs.Type) {
		return k
	}
	k.intType = cs.Type
	if !k.noRange {
		lo, e1 := strconv.ParseInt(cs.Min, 10, 64)
		hi, e2 := strconv.ParseInt(cs.Max, 10, 64)
		k.min, k.max, k.parsed = lo, hi, e1 == nil && e2 == nil
	}
	return k
}

// batchRange is a batch's key range as rangesMeet takes it: its type and
// text, and the integers they parse to.
type batchRange struct {
	typ, lo, hi string
	l, h        int64
	parsed      bool // typ is an integer type and both parse
}

func newBatchRange(typ, lo, hi string) batchRange {
	b := batchRange{typ: typ, lo: lo, hi: hi}
	l, e1 := strconv.ParseInt(lo, 10, 64)
	h, e2 := strconv.ParseInt(hi, 10, 64)
	b.l, b.h, b.parsed = l, h, integerType(typ) && e1 == nil && e2 == nil
	return b
}

// meets is rangesMeet(b.typ, b.lo, b.hi, the file's figures).
func (k keyFile) meets(b batchRange) bool {
	switch {
	case k.noRange || b.lo == "" || b.hi == "":
		return true
	case integerType(b.typ) && k.intType != "":
		return !b.parsed || !k.parsed || (k.min <= b.h && b.l <= k.max)
	case b.typ == "VARCHAR" && k.textMin != "":
		return k.textMin <= b.hi && b.lo <= k.textMax
	}
	return true
}

// keyColumnOf is col's keyColumn over stats (the summary's files in
// order): from prev's (the kept summary's, files held[i] in order) and
// the gained files' statistics when prev has it, else from every file's.
func keyColumnOf(col string, stats []fileStats, prev *keyColumn, held []bool) *keyColumn {
	k := &keyColumn{files: make([]keyFile, len(stats)), types: map[string]int{}}
	gained := func(i int) {
		cs := stats[i].Cols[col]
		k.files[i] = keyFileOf(stats[i], col)
		k.nonNull += cs.NonNull
		k.types[cs.Type]++
		if k.files[i].intType != "" {
			k.ints.add(cs.Min, cs.Max)
		}
	}
	if prev == nil {
		for i := range stats {
			gained(i)
		}
	} else {
		k.nonNull, k.ints = prev.nonNull, prev.ints // intRange.add replaces its values, never changes them
		maps.Copy(k.types, prev.types)
		j := 0
		for i := range stats {
			if held[i] {
				k.files[i] = prev.files[j]
				j++
				continue
			}
			gained(i)
		}
	}
	for i := len(k.files) - 1; i >= 0; i-- {
		if t := k.files[i].intType; t != "" {
			k.wide = t
			break
		}
	}
	return k
}

// minMaxFold is one column's min and max over files' statistics, as
// combinedMinMax takes them: n files with a non-NULL value; with one, its
// figures (lo); with more, the file of the least min (lo) and of the
// greatest max (hi), as reduceMinMax picks them in path order. exact is
// false when that is not known (a type whose order Go does not reproduce,
// types that differ, a tie between two spellings of one value, a figure
// that does not parse, a type name the statistics should not hold): the
// audit then reduces the files' figures as before.
type minMaxFold struct {
	n      int
	lo, hi colStats
	exact  bool
}

// add folds one file's figures of the column in.
func (f minMaxFold) add(cs colStats) minMaxFold {
	if cs.NonNull == 0 {
		return f
	}
	if !typeName.MatchString(cs.Type) {
		return minMaxFold{n: f.n + 1}
	}
	if f.n == 0 {
		return minMaxFold{n: 1, lo: cs, hi: cs, exact: true}
	}
	f.n++
	if !f.exact || cs.Type != f.lo.Type || cs.Type != f.hi.Type {
		f.exact = false
		return f
	}
	order := minMaxOrder(strings.ToUpper(strings.TrimSpace(cs.Type)))
	if order == nil {
		f.exact = false
		return f
	}
	cLo, ok1 := order(cs.Min, f.lo.Min)
	cHi, ok2 := order(cs.Max, f.hi.Max)
	_, ok3 := order(cs.Min, cs.Max)
	if !ok1 || !ok2 || !ok3 || (cLo == 0 && cs.Min != f.lo.Min) || (cHi == 0 && cs.Max != f.hi.Max) {
		// reduceMinMax keeps the first of equal values in path order:
		// which spelling that is depends on where the file falls.
		f.exact = false
		return f
	}
	if cLo < 0 {
		f.lo = cs
	}
	if cHi > 0 {
		f.hi = cs
	}
	return f
}

// olds is the column's figures as combinedMinMax queries them (reduced to
// one when there are several), or false when they must be reduced from the
// files' statistics.
func (f minMaxFold) olds() ([]colStats, bool) {
	switch {
	case f.n == 0:
		return []colStats{}, true
	case !f.exact:
		return nil, false
	case f.n == 1:
		return []colStats{f.lo}, true
	}
	return []colStats{{Type: f.lo.Type, Min: f.lo.Min, Max: f.hi.Max}}, true
}

// fold adds files' statistics to s's figures (need: what they hold).
func (s *fileSummary) fold(need statsNeed, sts []fileStats) {
	for _, st := range sts {
		for k, typ := range st.Nulls {
			if have, ok := s.nulls[k]; ok && have != typ {
				typ = ""
			}
			if s.nulls == nil {
				s.nulls = map[string]string{}
			}
			s.nulls[k] = typ
		}
		s.rows += st.Rows
		for _, w := range need.wheres {
			s.counts[whereKey(w)] += st.Counts[whereKey(w)]
		}
		for _, c := range need.cols {
			s.cols[c.key()] = s.cols[c.key()].add(st.Cols[c.key()])
		}
	}
}

// nullsAre says whether s's figures under need's where conditions read
// each missing column's NULLs as this audit's table does (need.nullType).
func (s *fileSummary) nullsAre(need statsNeed) bool {
	if !need.whereFigures() {
		return true
	}
	for _, k := range need.whereCols {
		if typ, ok := s.nulls[k]; ok && typ != need.typeOfNull(k) {
			return false
		}
	}
	return true
}

// summaryKey names the summaries an audit of table t may use: the
// repository, the table's path and format, and the statistics asked for.
func summaryKey(repo string, t Table, need statsNeed) string {
	parts := []string{repo, t.Path, t.format()}
	for _, c := range need.cols {
		if c.countOnly { // its files' min and max may be missing
			parts = append(parts, "count:"+c.key())
			continue
		}
		parts = append(parts, "col:"+c.key())
	}
	for _, w := range need.wheres {
		parts = append(parts, "where:"+whereKey(w))
	}
	slices.Sort(parts[3:])
	k := memoKey(parts...)
	return string(k[:])
}

// summaryCache keeps the last summaries (see above).
type summaryCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	lru        *list.List // of *summaryEntry, most recently used first
	folded     int64      // summaries made from a kept one, for tests
}

type summaryEntry struct {
	key string
	s   *fileSummary
}

func newSummaryCache(maxEntries int, maxBytes int64) *summaryCache {
	return &summaryCache{maxEntries: maxEntries, maxBytes: maxBytes, lru: list.New()}
}

// largestWithin is the kept summary under key with the most files that
// files (in path order) hold whole, and which of files it holds (held[i]:
// files[i] is one of its files, in order), or nil.
func (c *summaryCache) largestWithin(key string, files []summaryFile) (*fileSummary, []bool) {
	c.mu.Lock()
	var cands []*list.Element
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*summaryEntry); e.key == key && len(e.s.files) <= len(files) {
			cands = append(cands, el)
		}
	}
	c.mu.Unlock()
	slices.SortStableFunc(cands, func(a, b *list.Element) int {
		return len(b.Value.(*summaryEntry).s.files) - len(a.Value.(*summaryEntry).s.files)
	})
	for _, el := range cands {
		s := el.Value.(*summaryEntry).s
		if held, ok := within(s.files, files); ok {
			c.mu.Lock()
			c.lru.MoveToFront(el) // no-op if it went meanwhile
			c.mu.Unlock()
			return s, held
		}
	}
	return nil, nil
}

// within reports whether files (in path order) hold every one of kept (in
// path order) with the same path, address and size, and which they are.
func within(kept, files []summaryFile) ([]bool, bool) {
	held := make([]bool, len(files))
	j := 0
	for i, f := range files {
		if j == len(kept) {
			break
		}
		if k := kept[j]; f.path == k.path {
			if f.address != k.address || f.size != k.size {
				return nil, false
			}
			held[i] = true
			j++
		} else if k.path < f.path {
			return nil, false // kept[j] is not among files
		}
	}
	return held, j == len(kept)
}

func (c *summaryCache) put(key string, s *fileSummary) {
	if s.bytes > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.PushFront(&summaryEntry{key: key, s: s})
	c.bytes += s.bytes
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		el := c.lru.Back()
		c.lru.Remove(el)
		c.bytes -= el.Value.(*summaryEntry).s.bytes
	}
}

// summaryBytes estimates what a summary of files holds: each file's path,
// address and record, its statistics' two maps (kept alive by the summary
// even after the statistics store lets them go), and each figure's key,
// type and min and max text (TestSummaryBytesCountsWhatItKeeps; the heap
// measured was 0.8 to 0.9 of the estimate).
func summaryBytes(files []summaryFile, stats []fileStats) int64 {
	n := int64(256)
	for _, f := range files {
		n += int64(len(f.path)+len(f.address)) + 80 + 1024
	}
	for _, st := range stats {
		for k, cs := range st.Cols {
			n += int64(len(k)+len(cs.Type)+len(cs.Min)+len(cs.Max)) + 64
		}
		for k := range st.Counts {
			n += int64(len(k)) + 16
		}
	}
	return n
}

// unchangedStats sets it.oldStats, the statistics of it.old, and it.sum,
// their summary (summarize).
func (r *run) unchangedStats(ctx context.Context, t Table, it *incTable) error {
	var err error
	it.sum, it.oldStats, err = r.summarize(ctx, t, it.old, it.need)
	return err
}

// summarize is the summary of objs (files of table t, with the figures
// need asks for) and their statistics: from the largest kept summary that
// objs hold whole, with the other files' statistics looked up (or
// computed) and folded in; else from every file's. A set of files it
// cannot key (one without an address, not in path order) gets no summary,
// only the statistics.
func (r *run) summarize(ctx context.Context, t Table, objs []Object, need statsNeed) (*fileSummary, []fileStats, error) {
	files := make([]summaryFile, len(objs))
	keyed := r.e.summaries != nil
	for i, o := range objs {
		files[i] = summaryFile{path: o.Path, address: o.Address, size: o.Size}
		// Figures of a file read at a branch are not kept (storeStats).
		keyed = keyed && o.Address != "" && (i == 0 || files[i-1].path < o.Path) && IsCommitID(cmp.Or(o.at, r.req.Ref))
	}
	if !keyed {
		sts, err := r.statsOf(ctx, t, objs, need)
		return nil, sts, err
	}
	key := summaryKey(r.req.Repository, t, need)
	prev, held := r.e.summaries.largestWithin(key, files)
	if prev != nil && !prev.nullsAre(need) {
		prev, held = nil, nil // its figures under a where read a column's NULLs in another type
	}
	if prev != nil && len(prev.files) == len(files) {
		return prev, prev.stats, nil // the same files
	}
	s := &fileSummary{files: files, counts: map[string]int64{}, cols: map[string]minMaxFold{}, nulls: map[string]string{}}
	var gained []int
	if prev == nil {
		gained = make([]int, len(files))
		for i := range gained {
			gained[i] = i
		}
	} else {
		r.e.summaries.mu.Lock()
		r.e.summaries.folded++
		r.e.summaries.mu.Unlock()
		s.rows = prev.rows
		maps.Copy(s.nulls, prev.nulls)
		for k, v := range prev.counts {
			s.counts[k] = v
		}
		for k, v := range prev.cols {
			s.cols[k] = v
		}
		for i, h := range held {
			if !h {
				gained = append(gained, i)
			}
		}
	}
	sts, err := r.statsOf(ctx, t, each(gained, func(i int) Object { return objs[i] }), need)
	if err != nil {
		return nil, nil, err
	}
	// The folds go in path order only without a kept summary: with one, a
	// gained file may sort before kept ones, which minMaxFold allows for.
	s.fold(need, sts)
	s.stats = make([]fileStats, len(files))
	j, g := 0, 0
	for i := range files {
		if g < len(gained) && gained[g] == i {
			s.stats[i] = sts[g]
			g++
			continue
		}
		s.stats[i] = prev.stats[j]
		j++
	}
	s.keys = make(map[string]*keyColumn, len(need.cols))
	for _, c := range need.cols {
		var pk *keyColumn
		if prev != nil {
			pk = prev.keys[c.key()]
		}
		s.keys[c.key()] = keyColumnOf(c.key(), s.stats, pk, held)
	}
	// What the files and their statistics take: the kept summary's and
	// the gained files' (summaryBytes over every file's statistics maps
	// was a walk of the whole table at every audit).
	if prev == nil {
		s.statBytes = summaryBytes(files, s.stats)
	} else {
		s.statBytes = prev.statBytes + summaryBytes(each(gained, func(i int) summaryFile { return files[i] }), sts) - summaryBytes(nil, nil)
	}
	s.bytes = s.statBytes + int64(len(files)*len(need.cols)*keyFileBytes)
	if !slices.ContainsFunc(sts, func(st fileStats) bool { return st.mixed }) {
		r.e.summaries.put(key, s) // figures of a mixed scan are not kept (schemaagree.go)
	}
	r.log.Debug("audit files summed up", "table", t.Name, "files", len(files), "gained", len(gained), "kept", prev != nil)
	return s, s.stats, nil
}

// foldedSummaries counts the summaries made from a kept one (tests).
func (e *Engine) foldedSummaries() int64 {
	if e.summaries == nil {
		return 0
	}
	e.summaries.mu.Lock()
	defer e.summaries.mu.Unlock()
	return e.summaries.folded
}
