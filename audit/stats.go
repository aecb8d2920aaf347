package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lakewap/lakewap/schemas"
)

// fileStats are lakewap's own figures of one table file, computed from its
// data by an audit that read the file; never from the file's footer, which
// is the writer's claim. Incremental audits take the unchanged files'
// row counts and key ranges from them instead of reading those files.
type fileStats struct {
	Rows int64 `json:"rows"`
	// Counts are the rows meeting a check's where condition, by whereKey.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Cols are the figures of the columns checks take a min or max of (a
	// unique key's first column, range and stat columns), by lower-case name.
	Cols map[string]colStats `json:"cols,omitempty"`
	// Schema is each column of the file as DuckDB reads the file alone:
	// its name as the file spells it, and its type. Cols take the type of
	// the scan that computed them, which a file of another type beside it
	// widens; an incremental audit compares the batch's files' schemas with
	// the unchanged files' (schemaDisagreement). A record without one is
	// computed again.
	Schema [][2]string `json:"schema,omitempty"`
	// Spark is what the file's footer tells of how Spark reads the
	// table's other files (schemaagree.go's sparkCharDeclared); nil, or
	// of another version than sparkFactsV, in a record written before
	// records held it as this build reads it, which is computed again.
	Spark *sparkFacts `json:"spark,omitempty"`
	// Nulls are, for each name a where condition of the figures reads
	// (statsNeed.whereCols) that the file has no column of, the type its
	// NULLs there were read in: the table reads them in the column's type
	// (union by name with the files that have it), which a condition can
	// tell (typeof(x) = 'BIGINT'), and the file's figures under a where
	// are the table's only where the audit reads that column in the same
	// type ("NULL": no file of the scan had it). Review 62: a file scanned
	// alone read SQL's untyped NULL, and an incremental row_count under
	// such a where passed a batch the full audit fails
	// (TestMerge62WhereCountOfAFileLackingTheColumnIsTheTables).
	Nulls map[string]string `json:"nulls,omitempty"`
	// mixed: computed in one scan with files that give a column another
	// type, so in the type of their union, not the file's own. Not stored
	// (schemaagree.go).
	mixed bool
}

// sparkFacts are a file's footer facts that change how Spark reads the
// table's other files: Chars are the columns its Spark schema declares a
// CHAR(n), or of a type holding one, whose values Spark pads in every
// file of the table (sparkchar.go), with their declarations, in the
// file's order; Ints, its INT32 and INT64 leaves whose Spark type its
// DuckDB type does not tell (sparkIntTold), with Spark's; Unknown, that
// they are more than a record keeps (maxSparkCharFacts,
// maxSparkCharFactBytes) or the file has more integer leaves than the full
// audit compares (sparkIntsOver), and an incremental audit of the table
// runs full. Defaults are the columns its Spark schema declares an
// EXISTS_DEFAULT, which Spark reads in the rows of the table's files
// lacking them (sparkdefault.go), with the default, clipped. V is
// sparkFactsV: review 60's records held the first CHAR column's name only
// (V 0), which an incremental audit cannot scan a batch by, and no
// integer leaves; V 2 no defaults; they are computed again.
type sparkFacts struct {
	V        int                `json:"v"`
	Chars    []sparkCharFact    `json:"chars,omitempty"`
	Ints     []sparkIntFact     `json:"ints,omitempty"`
	Defaults []sparkDefaultFact `json:"defaults,omitempty"`
	Unknown  bool               `json:"unknown,omitempty"`
}

// sparkDefaultFact is a column a file's Spark schema declares an
// EXISTS_DEFAULT (its name as the file spells it) and the default,
// clipped (fileColumn.sparkDefault).
type sparkDefaultFact struct {
	Column  string `json:"column"`
	Default string `json:"default"`
}

// sparkIntFact is an INT32 or INT64 leaf of a file whose Spark type its
// DuckDB type does not tell: its column (as the file spells it), its path
// below it (sparkIntLeaf's), its physical type and Spark's type.
type sparkIntFact struct {
	Column   string `json:"column"`
	Path     string `json:"path,omitempty"`
	Physical int32  `json:"physical"`
	Type     string `json:"type"`
}

// sparkCharFact is a column a file's Spark schema declares a CHAR (its
// name as the file spells it) and the whole texts of the declarations
// giving its condition (fileColumn.sparkCharTexts): the condition is
// sparkCharCondOfTexts(Column, Declared).
type sparkCharFact struct {
	Column   string   `json:"column"`
	Declared []string `json:"declared"`
}

// sparkFactsV is the version of the facts this build writes and takes.
const sparkFactsV = 3

// maxSparkCharFacts and maxSparkCharFactBytes bound a record's CHAR
// declarations (its columns, and the bytes of their names and texts) and
// its integer leaves not told (their number, and the bytes of their
// names, paths and types, apart). Spark writes `char(5)` per column;
// past either, the record says Unknown.
const (
	maxSparkCharFacts     = 16
	maxSparkCharFactBytes = 2 << 10
)

// noSparkFacts are the facts of a file that declares no CHAR, shared by
// every such record in memory.
var noSparkFacts = &sparkFacts{V: sparkFactsV}

// sharedFacts is f, or noSparkFacts when f is equal to it.
func sharedFacts(f *sparkFacts) *sparkFacts {
	if f != nil && f.V == sparkFactsV && !f.Unknown && len(f.Chars) == 0 && len(f.Ints) == 0 && len(f.Defaults) == 0 {
		return noSparkFacts
	}
	return f
}

// current: f are facts this build takes.
func (f *sparkFacts) current() bool { return f != nil && f.V == sparkFactsV }

// sparkFactsOf are the facts of a file of columns cols (its footer's).
func sparkFactsOf(cols []fileColumn) *sparkFacts {
	f := &sparkFacts{V: sparkFactsV}
	bytes := 0
	for _, c := range cols {
		if c.sparkChar == "" {
			continue
		}
		bytes += len(c.name)
		for _, d := range c.sparkCharTexts {
			bytes += len(d)
		}
		if len(f.Chars) == maxSparkCharFacts || bytes > maxSparkCharFactBytes || len(c.sparkCharTexts) == 0 {
			return &sparkFacts{V: sparkFactsV, Unknown: true}
		}
		f.Chars = append(f.Chars, sparkCharFact{Column: c.name, Declared: c.sparkCharTexts})
	}
	if len(cols) > 0 && cols[0].sparkIntsOver {
		return &sparkFacts{V: sparkFactsV, Unknown: true}
	}
	bytes = 0
	for _, c := range cols {
		for _, l := range c.sparkInts {
			if l.told {
				continue
			}
			bytes += len(c.name) + len(l.path) + len(l.typ)
			if len(f.Ints) == maxSparkCharFacts || bytes > maxSparkCharFactBytes {
				return &sparkFacts{V: sparkFactsV, Unknown: true}
			}
			f.Ints = append(f.Ints, sparkIntFact{Column: c.name, Path: l.path, Physical: l.physical, Type: l.typ})
		}
	}
	bytes = 0
	for _, c := range cols {
		if c.sparkDefault == "" {
			continue
		}
		bytes += len(c.name) + len(c.sparkDefault)
		if len(f.Defaults) == maxSparkCharFacts || bytes > maxSparkCharFactBytes {
			return &sparkFacts{V: sparkFactsV, Unknown: true}
		}
		f.Defaults = append(f.Defaults, sparkDefaultFact{Column: c.name, Default: c.sparkDefault})
	}
	return sharedFacts(f)
}

// colStats are one column's figures in one file. Min and Max are DuckDB's
// text of the values (CAST AS VARCHAR), which casts back to Type exactly.
type colStats struct {
	Type    string `json:"type"`
	NonNull int64  `json:"non_null"`
	Min     string `json:"min,omitempty"`
	Max     string `json:"max,omitempty"`
}

// maxStatValueBytes bounds a stored min or max: a longer one (a long text
// key) is not stored, and the files whose figure it is are read instead.
const maxStatValueBytes = 256

// maxStatsRecordBytes is the byte budget of one stored record; a record
// over it is not stored (its file is read again next time).
const maxStatsRecordBytes = 16 << 10

// statsNeed is what a suite's incremental plans need of each file.
type statsNeed struct {
	cols   []colNeed
	wheres []string // where conditions
	// whereCols are the names the wheres' column references hold, lower
	// case (Engine.whereColumns); nullType is the type the audited table
	// reads a column of that name in, for a file without it: the batch's
	// view's, "NULL" when it has none (nil: every one "NULL").
	whereCols []string
	nullType  func(name string) string
}

// typeOfNull is n.nullType(name), "NULL" without one.
func (n statsNeed) typeOfNull(name string) string {
	if n.nullType == nil {
		return "NULL"
	}
	return n.nullType(name)
}

// whereFigures says whether n asks for figures under a where condition.
func (n statsNeed) whereFigures() bool {
	return len(n.wheres) > 0 || slices.ContainsFunc(n.cols, func(c colNeed) bool { return strings.TrimSpace(c.where) != "" })
}

// colNeed is a column whose min and max a plan needs, over the rows that
// meet where (all rows when empty). countOnly: only its non-NULL count is
// needed, and its min and max when it is of an integer type (pandas'
// reading, pandasfloat.go): a text column whose min or max is too long to
// store (maxStatValueBytes) does not make its files read again each audit.
type colNeed struct {
	name, where string
	countOnly   bool
}

// addCol adds c to n's columns; a column it has of the same key stays,
// needing min and max if either does.
func (n *statsNeed) addCol(c colNeed) {
	for i, have := range n.cols {
		if have.key() == c.key() {
			n.cols[i].countOnly = have.countOnly && c.countOnly
			return
		}
	}
	n.cols = append(n.cols, c)
}

// key names the figures in fileStats.Cols: the lower-case column name, and
// the where condition's key when there is one.
func (c colNeed) key() string {
	if strings.TrimSpace(c.where) == "" {
		return strings.ToLower(c.name)
	}
	return strings.ToLower(c.name) + "@" + whereKey(c.where)
}

func (n statsNeed) empty() bool { return len(n.cols) == 0 && len(n.wheres) == 0 }

// has reports whether s holds every figure n asks for, usable as stored,
// and the file's schema. Values of a column the file's schema lacks are
// a record computed before the scan read the files' own columns: of
// read_parquet's virtual column so named (ownColumnsSQL), doubtful
// (TestReview38RecordsOfTheVirtualColumnAreComputedAgain).
func (s fileStats) has(n statsNeed) bool {
	if len(s.Schema) == 0 || !s.Spark.current() {
		return false
	}
	for _, c := range n.cols {
		cs, ok := s.Cols[c.key()]
		if !ok || (cs.NonNull > 0 && (cs.Min == "" || cs.Max == "") && (!c.countOnly || integerType(cs.Type))) {
			return false
		}
		if cs.NonNull > 0 && !slices.ContainsFunc(s.Schema, func(col [2]string) bool { return strings.EqualFold(col[0], c.name) }) {
			return false
		}
	}
	for _, w := range n.wheres {
		if _, ok := s.Counts[whereKey(w)]; !ok {
			return false
		}
	}
	if n.whereFigures() {
		for _, k := range n.whereCols {
			if !s.hasColumn(k) && s.Nulls[k] != n.typeOfNull(k) {
				return false
			}
		}
	}
	return true
}

// hasColumn says whether the file's schema has a column named name, in
// any case.
func (s fileStats) hasColumn(name string) bool {
	return slices.ContainsFunc(s.Schema, func(c [2]string) bool { return strings.EqualFold(c[0], name) })
}

// whereKey names a where condition in fileStats.Counts.
func whereKey(where string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(where)))
	return hex.EncodeToString(h[:12])
}

// statsKey names a file's statistics: the repository and the physical
// address (a new write gets a new address, so the figures of an address
// never change) and the size. A file without an address has none.
func statsKey(repo string, o Object) string {
	if o.Address == "" {
		return ""
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", repo, o.Address, o.Size))
	return hex.EncodeToString(h[:])
}

// StatsStore keeps the statistics of the files audits have read: in memory
// (bounded) and, with a directory, on disk, one small file per table file,
// so that a restarted daemon uses them. A record is written to a temporary
// file and renamed into place; one that does not parse, fails its checksum
// or names another key is doubtful and is not used: its file is read and
// the record written again. Losing the directory costs the next audit of
// each table one read of its files, never a wrong verdict.
//
// The directory holds at most two generations of records, dir/g<N>: records
// are written into the current one; a record used that is only in the
// previous one is copied into the current one; when the current one holds
// statsPerGeneration records it becomes the previous one, and the one
// before is deleted. Before, the directory kept a record of every file
// lakewap ever audited, for good: a writer's uploads (each a new address)
// grew it without end. The layout before generations (dir/xx/<key>.json)
// is read as the previous generation of the first one.
type StatsStore struct {
	dir string
	// cur and prev are the current and previous generations (prev 0: the
	// layout before generations; -1: none); written counts the records
	// in cur (at start, its files); removing waits for deletions.
	cur, prev int
	written   int
	removing  sync.WaitGroup

	mu       sync.Mutex
	mem      map[string]fileStats
	order    []string
	sizes    map[string]int // bytes of each record in mem, as stored
	memBytes int
	// schemas interns the files' schemas held in mem (most files of a
	// table share one): schemaDisagreement tells a file whose schema is
	// the previous file's by its backing array before comparing it. At
	// most maxInternedSchemas; past it, schemas are not interned.
	schemas       map[string][][2]string
	internedBytes int // what schemas holds (schemaHeld and its keys)
	// Failpoint, when set, is called at named points of a write (tests).
	failpoint func(name string)
	// lookups counts the records looked up (get), for tests.
	lookups atomic.Int64
}

// statsPerGeneration bounds the records of one generation of the stats
// directory (a var for tests): the directory holds at most twice as many
// (a record is at most maxStatsRecordBytes, most a few hundred bytes).
var statsPerGeneration = 1 << 18

// settle waits for the deletions of old generations started so far.
func (s *StatsStore) settle() { s.removing.Wait() }

// maxStatsInMemory and maxStatsMemBytes bound the records kept in memory,
// in number and in bytes, each counted as the larger of its size as stored
// and what it holds decoded (statsHeld): a writer's files choose the figures
// (a min and max of up to 256 bytes per column a check reads), and 65,536
// records of maxStatsRecordBytes were 1 GiB.
const (
	maxStatsInMemory = 1 << 16
	maxStatsMemBytes = 64 << 20
)

// NewStatsStore returns a store; dir "" keeps the records in memory only.
func NewStatsStore(dir string) (*StatsStore, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("audit: stats dir: %w", err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("audit: stats dir: %w", err)
		}
		dir = abs
	}
	s := &StatsStore{dir: dir, mem: map[string]fileStats{}, sizes: map[string]int{}, prev: -1}
	if dir != "" {
		if err := s.openGenerations(); err != nil {
			return nil, fmt.Errorf("audit: stats dir: %w", err)
		}
	}
	return s, nil
}

// openGenerations finds the directory's two newest generations (the
// layout before generations counts as generation 0), counts the records
// of the newest, and deletes the older ones.
func (s *StatsStore) openGenerations() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var gens []int
	legacy := false
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if isShard(e.Name()) {
			legacy = true
		} else if g, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "g")); err == nil && g > 0 && e.Name() == fmt.Sprint("g", g) {
			gens = append(gens, g)
		}
	}
	if legacy {
		gens = append(gens, 0)
	}
	slices.Sort(gens)
	switch len(gens) {
	case 0:
		s.cur = 1
	case 1:
		s.cur, s.prev = max(gens[0], 1), gens[0]
		if s.prev == s.cur {
			s.prev = -1
		}
	default:
		s.cur, s.prev = gens[len(gens)-1], gens[len(gens)-2]
		for _, g := range gens[:len(gens)-2] {
			s.remove(g)
		}
	}
	s.written = countRecords(s.genDir(s.cur))
	return nil
}

// isShard says whether name is one of the two-hex-digit directories a
// generation holds its records in.
func isShard(name string) bool {
	if len(name) != 2 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// countRecords counts the files in the shards of a generation's directory.
func countRecords(dir string) int {
	n := 0
	shards, _ := os.ReadDir(dir)
	for _, sh := range shards {
		if sh.IsDir() && isShard(sh.Name()) {
			files, _ := os.ReadDir(filepath.Join(dir, sh.Name()))
			n += len(files)
		}
	}
	return n
}

func (s *StatsStore) genDir(g int) string {
	if g == 0 {
		return s.dir
	}
	return filepath.Join(s.dir, fmt.Sprint("g", g))
}

// remove deletes generation g in the background (of generation 0, only
// its shards).
func (s *StatsStore) remove(g int) {
	if g < 0 {
		return
	}
	dir := s.genDir(g)
	s.removing.Add(1)
	go func() {
		defer s.removing.Done()
		if g > 0 {
			_ = os.RemoveAll(dir)
			return
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && isShard(e.Name()) {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}()
}

// wrote counts a record written into generation g, and starts the next
// generation when the current one is full.
func (s *StatsStore) wrote(g int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g != s.cur {
		return
	}
	if s.written++; s.written < statsPerGeneration {
		return
	}
	s.remove(s.prev)
	s.prev, s.cur, s.written = s.cur, s.cur+1, 0
}

// statsRecord is the stored form of one file's statistics.
type statsRecord struct {
	V     int             `json:"v"`
	Key   string          `json:"key"`
	Stats json.RawMessage `json:"stats"`
	Sum   string          `json:"sum"` // sha256 of Stats
}

// path is key's record in the current generation.
func (s *StatsStore) path(key string) string {
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	return s.pathIn(g, key)
}

func (s *StatsStore) pathIn(g int, key string) string {
	return filepath.Join(s.genDir(g), key[:2], key+".json")
}

// get returns the statistics stored under key, if they are whole.
func (s *StatsStore) get(key string) (fileStats, bool) {
	if key == "" {
		return fileStats{}, false
	}
	s.lookups.Add(1)
	s.mu.Lock()
	st, ok := s.mem[key]
	s.mu.Unlock()
	if ok || s.dir == "" {
		return st, ok
	}
	s.mu.Lock()
	cur, prev := s.cur, s.prev
	s.mu.Unlock()
	for _, g := range []int{cur, prev} {
		if g < 0 {
			continue
		}
		b, err := os.ReadFile(s.pathIn(g, key))
		if err != nil || len(b) > maxStatsRecordBytes {
			continue
		}
		st, err = decodeStats(key, b)
		if err != nil {
			return fileStats{}, false // doubtful: read the file again
		}
		if g != cur {
			_ = s.write(key, b) // in use: into the current generation
		}
		s.remember(key, st, len(b))
		return st, true
	}
	return fileStats{}, false
}

func decodeStats(key string, b []byte) (fileStats, error) {
	var rec statsRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fileStats{}, err
	}
	sum := sha256.Sum256(rec.Stats)
	if rec.V != 1 || rec.Key != key || rec.Sum != hex.EncodeToString(sum[:]) {
		return fileStats{}, errors.New("stats record is not this file's, or is damaged")
	}
	var st fileStats
	if err := json.Unmarshal(rec.Stats, &st); err != nil {
		return fileStats{}, err
	}
	if st.Rows < 0 {
		return fileStats{}, errors.New("negative row count")
	}
	return st, nil
}

func (s *StatsStore) remember(key string, st fileStats, size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sizes == nil {
		s.sizes = map[string]int{}
	}
	if _, ok := s.mem[key]; !ok {
		s.order = append(s.order, key)
	}
	var shared bool
	st.Schema, shared = s.intern(st.Schema)
	st.Spark = sharedFacts(st.Spark)
	size = max(size, statsHeld(st, shared))
	s.memBytes += size - s.sizes[key]
	s.mem[key], s.sizes[key] = st, size
	for len(s.order) > maxStatsInMemory || s.memBytes > maxStatsMemBytes {
		k := s.order[0]
		s.memBytes -= s.sizes[k]
		delete(s.mem, k)
		delete(s.sizes, k)
		s.order = s.order[1:]
	}
}

// maxInternedSchemas and maxInternedBytes bound StatsStore.schemas, in
// number and in bytes as held (they are never let go): a writer's files
// choose their columns, and 1,024 schemas of 640 short names held 50 MB.
const (
	maxInternedSchemas = 1024
	maxInternedBytes   = 8 << 20
)

// intern is schema, or an equal one interned before (with s.mu held).
func (s *StatsStore) intern(schema [][2]string) ([][2]string, bool) {
	if len(schema) == 0 {
		return schema, true
	}
	var b strings.Builder
	for _, c := range schema {
		b.WriteString(c[0])
		b.WriteByte(0)
		b.WriteString(c[1])
		b.WriteByte(0)
	}
	k := b.String()
	if have, ok := s.schemas[k]; ok {
		return have, true
	}
	if s.schemas == nil {
		s.schemas = map[string][][2]string{}
	}
	held := schemas.HeldBytes(len(k)) + schemaHeld(schema) + 64
	if len(s.schemas) < maxInternedSchemas && s.internedBytes+held <= maxInternedBytes {
		s.schemas[k] = schema
		s.internedBytes += held
		return schema, true
	}
	return schema, false
}

// schemaHeld is what a schema holds in memory: a [2]string per column
// and its two strings, each as the allocator's size class.
func schemaHeld(schema [][2]string) int {
	n := 24 + 32*cap(schema)
	for _, c := range schema {
		n += schemas.HeldBytes(len(c[0])) + schemas.HeldBytes(len(c[1]))
	}
	return n
}

// statsHeld is what st holds in memory, decoded (its schema left out when
// interned, which the interned schemas' bound counts): counted as stored,
// a writer's file of many short column names held 3.7 times its JSON
// (TestLimits64StatsInMemoryHoldWithinTheirBudget). A map entry is
// counted as its strings and 48 bytes of slot.
func statsHeld(st fileStats, schemaShared bool) int {
	const slot = 48
	n := 160 // the record, its maps' headers
	for k := range st.Counts {
		n += schemas.HeldBytes(len(k)) + 8 + slot
	}
	for k, c := range st.Cols {
		n += schemas.HeldBytes(len(k)) + schemas.HeldBytes(len(c.Type)) + schemas.HeldBytes(len(c.Min)) + schemas.HeldBytes(len(c.Max)) + 56 + slot
	}
	for k, v := range st.Nulls {
		n += schemas.HeldBytes(len(k)) + schemas.HeldBytes(len(v)) + slot
	}
	if !schemaShared {
		n += schemaHeld(st.Schema)
	}
	if st.Spark != nil && st.Spark != noSparkFacts {
		if b, err := json.Marshal(st.Spark); err == nil {
			n += 2*len(b) + 256
		}
	}
	return n
}

// interned is schema, or an equal one the store interned before.
func (s *StatsStore) interned(schema [][2]string) [][2]string {
	if s == nil {
		return schema
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	schema, _ = s.intern(schema)
	return schema
}

// sameSchema is slices.Equal(a, b), told at once for one interned schema.
func sameSchema(a, b [][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// put stores st under key (merged with the figures already stored).
func (s *StatsStore) put(key string, st fileStats) error {
	if key == "" {
		return nil
	}
	if old, ok := s.get(key); ok {
		st = mergeStats(old, st)
	}
	stats, err := json.Marshal(st)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(stats)
	b, err := json.Marshal(statsRecord{V: 1, Key: key, Stats: stats, Sum: hex.EncodeToString(sum[:])})
	if err != nil {
		return err
	}
	if len(b) > maxStatsRecordBytes {
		return fmt.Errorf("statistics record of %d bytes is over its budget of %d", len(b), maxStatsRecordBytes)
	}
	s.remember(key, st, len(b))
	if s.dir == "" {
		return nil
	}
	return s.write(key, b)
}

// write writes record b of key into the current generation: into a
// temporary file, renamed into place.
func (s *StatsStore) write(key string, b []byte) error {
	s.mu.Lock()
	g := s.cur
	s.mu.Unlock()
	p := s.pathIn(g, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	half := len(b) / 2
	_, err = tmp.Write(b[:half])
	if s.failpoint != nil {
		s.failpoint("stats_half_written")
	}
	if err == nil {
		_, err = tmp.Write(b[half:])
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	s.wrote(g)
	if s.failpoint != nil {
		s.failpoint("after_stats")
	}
	return nil
}

// mergeStats keeps the figures of both; b wins where both have one. A
// record without the file's columns (a without Schema) was written before
// records held them, when figures of a scan of files of several types
// were stored in their union's type (schemaagree.go): none of its figures
// is kept, or completing it with other figures would make them usable.
func mergeStats(a, b fileStats) fileStats {
	if len(a.Schema) == 0 {
		a = fileStats{}
	}
	// Figures under a where read a missing column's NULLs in one type:
	// a's where figures of another go (Nulls).
	nulls := maps.Clone(a.Nulls)
	for k, v := range b.Nulls {
		if have, ok := nulls[k]; ok && have != v {
			nulls = maps.Clone(b.Nulls)
			a.Counts = nil
			a.Cols = maps.Clone(a.Cols)
			maps.DeleteFunc(a.Cols, func(k string, _ colStats) bool { return strings.Contains(k, "@") })
			break
		}
		if nulls == nil {
			nulls = map[string]string{}
		}
		nulls[k] = v
	}
	out := fileStats{Rows: b.Rows, Counts: map[string]int64{}, Cols: map[string]colStats{}, Schema: b.Schema, Spark: b.Spark, Nulls: nulls}
	if !out.Spark.current() && a.Spark.current() {
		out.Spark = a.Spark
	}
	if len(out.Schema) == 0 {
		out.Schema = a.Schema
	}
	for _, m := range []fileStats{a, b} {
		for k, v := range m.Counts {
			out.Counts[k] = v
		}
		for k, v := range m.Cols {
			out.Cols[k] = v
		}
	}
	return out
}

// computeStats reads files (local copies of the objects objs of table t,
// in order) and returns their statistics: one grouped scan of the files
// together.
func (r *run) computeStats(ctx context.Context, t Table, objs []Object, files []string, need statsNeed) ([]fileStats, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out, err := r.computeFigures(ctx, t, files, need)
	if err != nil {
		return nil, err
	}
	types := map[string]string{} // lower-case column -> type family
	mixed := false
	if err := r.markSparkFacts(ctx, files, out); err != nil {
		return nil, err
	}
	for i, f := range files {
		if out[i].Schema, err = r.fileSchema(ctx, f); err != nil {
			return nil, err
		}
		out[i].Schema = r.e.stats.interned(out[i].Schema)
		for _, c := range out[i].Schema {
			k := strings.ToLower(c[0])
			fam := typeFamily(c[1], !need.plain())
			if t, ok := types[k]; ok && t != fam {
				mixed = true
			}
			types[k] = fam
		}
	}
	if need.whereFigures() {
		mixed = markNulls(out, need, r.typedNulls(ctx, t, need)) || mixed
	}
	for i := range out {
		out[i].mixed = mixed
	}
	return out, nil
}

// markNulls sets the Nulls of the files of one scan (out, schemas set):
// for each of need.whereCols a file has no column of, the type the scan
// read its NULLs in, typed's (ownColumnsSQL) or that of the scan's files
// that have the column, "NULL" when none has it. It reports whether a
// file's own type of such a column is not the one the scan read it in
// (the union's): then the figures are not the files' own (mixed).
func markNulls(out []fileStats, need statsNeed, typed map[string]string) (mixed bool) {
	for _, k := range need.whereCols {
		read := typed[k]
		for _, st := range out {
			for _, c := range st.Schema {
				if !strings.EqualFold(c[0], k) {
					continue
				}
				if read == "" {
					read = c[1]
				} else if c[1] != read {
					mixed = true
				}
			}
		}
		if read == "" {
			read = "NULL"
		}
		for i := range out {
			if out[i].hasColumn(k) {
				continue
			}
			if out[i].Nulls == nil {
				out[i].Nulls = map[string]string{}
			}
			out[i].Nulls[k] = read
		}
	}
	return mixed
}

// markSparkFacts sets each of out's Spark, the facts of the footer of
// the local Parquet file files[i] (read once per run: the batch's files'
// are read by columnCollision).
func (r *run) markSparkFacts(ctx context.Context, files []string, out []fileStats) error {
	var unread []string
	for _, f := range files {
		if _, ok := r.footerCols[f]; !ok {
			unread = append(unread, f)
		}
	}
	var read map[string][]fileColumn
	if len(unread) > 0 {
		var err error
		if read, err = r.parquetColumns(ctx, unread); err != nil {
			return err
		}
	}
	for i, f := range files {
		cols, ok := r.footerCols[f]
		if !ok {
			cols = read[f]
		}
		out[i].Spark = sparkFactsOf(cols)
	}
	return nil
}

// fileSchema is the columns of the local Parquet file f as DuckDB reads
// it alone: names as the file spells them, and types.
func (r *run) fileSchema(ctx context.Context, f string) ([][2]string, error) {
	if q, n, ok := r.batchSchemaSQL([]string{f}); ok {
		if vals, ok := r.prefetched(ctx, q, n); ok {
			out := make([][2]string, n)
			for i, c := range r.footerCols[f] {
				typ, _ := vals[i].(string)
				if typ == "" {
					out = nil
					break
				}
				out[i] = [2]string{c.name, typ}
			}
			if out != nil {
				return out, nil
			}
		}
	}
	cols, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{f}))
	if err != nil {
		return nil, err
	}
	out := make([][2]string, len(cols))
	for i, c := range cols {
		out[i] = [2]string{c.name, c.typ}
	}
	return out, nil
}

// computeFigures is computeStats's figures, without the files' schemas.
func (r *run) computeFigures(ctx context.Context, t Table, files []string, need statsNeed) ([]fileStats, error) {
	if st, ok := r.batchFileStats(ctx, t.format(), files, need); ok {
		return []fileStats{st}, nil
	}
	exprs := statsExprs(need)
	union := noHive
	if len(files) > 1 {
		union += ", union_by_name = true"
	}
	uniq := slices.Compact(slices.Sorted(slices.Values(files)))
	// The file name's column gets a name no file can be counted on to
	// lack otherwise: DuckDB refuses a filename column whose name the
	// file has (TestStatsOfFileWithLakewapFileColumn).
	fc := "__lakewap_file_" + strconv.FormatUint(rand.Uint64(), 36)
	q := fmt.Sprintf("SELECT %s, %s FROM %s GROUP BY %s",
		quoteIdent(fc), strings.Join(exprs, ", "), ownColumnsSQL(uniq, fc, union, r.nullColumns(ctx, t, need), r.typedNulls(ctx, t, need)), quoteIdent(fc))
	rows, err := r.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byFile := map[string]fileStats{}
	for rows.Next() {
		vals, err := scanValues(rows.Scan, len(exprs)+1)
		if err != nil {
			return nil, err
		}
		byFile[fmt.Sprint(vals[0])] = statsOfRow(vals[1:], need)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]fileStats, len(files))
	for i, f := range files {
		st, ok := byFile[f]
		if !ok { // a file without rows has no group
			st = emptyStats(need)
		}
		out[i] = st
	}
	return out, nil
}

// ownColumnsSQL is computeFigures's read of files: their own columns (and
// the file name's, fc), where read_parquet alone also has virtual columns
// (file_row_number, file_index) that a column so named stood for in a
// scan of files that all lack it: the statistics of such a file were its
// row numbers where the table reads NULL (union by name with a file that
// has it), and an incremental audit passed a duplicate or failed a range
// the full one does not (TestReview38VirtualColumnStatsGiveTheFullVerdict).
// Each of nulls that none of the files has is NULL, as the table reads it:
// union by name with a relation of NULLs without rows, whose type (SQL's
// NULL) widens no file's; one typed has typed's type instead (lower-case
// name: a column a where condition reads, in the table's type, so that a
// file without it reads its NULLs as the table does: typedNulls).
func ownColumnsSQL(files []string, fc, union string, nulls []string, typed map[string]string) string {
	read := fmt.Sprintf("(SELECT * FROM read_parquet(%s, filename = %s%s))", literalList(files), quoteLiteral(fc), union)
	if len(nulls) == 0 {
		return read
	}
	return "(" + read + " UNION ALL BY NAME (SELECT " + strings.Join(each(nulls, func(c string) string {
		if typ := typed[strings.ToLower(c)]; typ != "" {
			return "CAST(NULL AS " + typ + ") AS " + quoteIdent(c)
		}
		return "NULL AS " + quoteIdent(c)
	}), ", ") + " LIMIT 0))"
}

// typedNulls are the types, by lower-case name, that a scan of t's files
// for need reads the columns of need.whereCols in where a file has none:
// the batch's view's (the table's, as the audited files agree on one type
// per column under a where: schemaagree.go). Nil without figures under a
// where.
func (r *run) typedNulls(ctx context.Context, t Table, need statsNeed) map[string]string {
	if !need.whereFigures() || len(need.whereCols) == 0 {
		return nil
	}
	cols, err := r.describe(ctx, schemaBatch, t.Name)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range cols {
		k := strings.ToLower(c.name)
		if slices.Contains(need.whereCols, k) {
			if _, ok := out[k]; !ok {
				out[k] = c.typ
			}
		}
	}
	return out
}

// nullColumns are the columns computeFigures reads as NULL in a file that
// lacks them (ownColumnsSQL), one of each lower-case name: need's, and
// with a where condition, which may read any, the batch's view of t's
// (those the audit knows the table has; a where over a column that
// neither the batch nor the files scanned has still fails the scan, and
// the checks that need the figures err).
func (r *run) nullColumns(ctx context.Context, t Table, need statsNeed) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if k := strings.ToLower(name); !seen[k] {
			seen[k] = true
			out = append(out, name)
		}
	}
	for _, c := range need.cols {
		add(c.name)
	}
	if !need.plain() {
		if cols, err := r.describe(ctx, schemaBatch, t.Name); err == nil {
			for _, c := range cols {
				add(c.name)
			}
		}
	}
	return out
}

// statsExprs are the figures of a file's statistics (need), as
// aggregates over its rows: its rows, the rows meeting each where, and
// each column's type, values, min and max as text.
func statsExprs(need statsNeed) []string {
	exprs := []string{"count(*)"}
	for _, w := range need.wheres {
		exprs = append(exprs, "count(*) FILTER (WHERE (\n"+w+"\n))")
	}
	for _, c := range need.cols {
		q := quoteIdent(c.name)
		filter := ""
		if w := strings.TrimSpace(c.where); w != "" {
			filter = " FILTER (WHERE (\n" + w + "\n))"
		}
		if c.countOnly {
			// The min and max of an integer column only: DuckDB folds
			// typeof of a column, so another type's are of NULLs, and a
			// text column's values are not compared
			// (TestGoSettledClaimsThatLieAreRefused).
			v := "CASE WHEN typeof(" + q + ") IN (" + integerTypeList + ") THEN " + q + " END"
			exprs = append(exprs, "typeof(any_value("+q+"))", "count("+q+")"+filter, "CAST(min("+v+")"+filter+" AS VARCHAR)", "CAST(max("+v+")"+filter+" AS VARCHAR)")
			continue
		}
		exprs = append(exprs, "typeof(min("+q+"))", "count("+q+")"+filter, "CAST(min("+q+")"+filter+" AS VARCHAR)", "CAST(max("+q+")"+filter+" AS VARCHAR)")
	}
	return exprs
}

// integerTypeList is integerType's types, as SQL literals.
const integerTypeList = "'TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'HUGEINT'"

// statsOfRow reads the figures of statsExprs(need), in order.
func statsOfRow(vals []any, need statsNeed) fileStats {
	st := fileStats{Rows: asInt(vals[0]), Counts: map[string]int64{}, Cols: map[string]colStats{}}
	j := 1
	for _, w := range need.wheres {
		st.Counts[whereKey(w)] = asInt(vals[j])
		j++
	}
	for _, c := range need.cols {
		cs := colStats{Type: fmt.Sprint(vals[j]), NonNull: asInt(vals[j+1])}
		if lo, ok := vals[j+2].(string); ok && len(lo) <= maxStatValueBytes {
			cs.Min = lo
		}
		if hi, ok := vals[j+3].(string); ok && len(hi) <= maxStatValueBytes {
			cs.Max = hi
		}
		st.Cols[c.key()] = cs
		j += 4
	}
	return st
}

// emptyStats are the statistics of a file without rows.
func emptyStats(need statsNeed) fileStats {
	st := fileStats{Counts: map[string]int64{}, Cols: map[string]colStats{}}
	for _, w := range need.wheres {
		st.Counts[whereKey(w)] = 0
	}
	for _, c := range need.cols {
		st.Cols[c.key()] = colStats{}
	}
	return st
}
