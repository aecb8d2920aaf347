package audit

import (
	"cmp"
	"container/list"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// The query memo. Between a batch's audit and its recheck onto a moved
// target (Request.Onto) the batch's files do not change: the same sealed
// commit, the same physical addresses, the same suite. The queries of an
// incremental audit that read only those files (the row checks' scan of the
// batch view, unique's batch keys, row counts) give the same answer, so the
// engine keeps their answers (queryMemo) and the recheck reuses them.
//
// A memoized answer is exactly what running the query would give, because
// its key holds everything the query reads:
//   - the query's text, byte for byte: the generated SQL spells out every
//     check's figures (columns, values, patterns, bounds, a where
//     condition, a planned expression) and the literals it compares with
//     (the unchanged files' key ranges, min and max);
//   - for every view the query names, the view's definition (viewSQL: the
//     table's name, its format, its files in order) with each file by its
//     identity (fileIdentity): the repository, the physical address and
//     the size of the object the local file is a copy of. Files named in
//     the query's own text (read_parquet over the unchanged files) are
//     replaced by their identities in the key the same way (memoIDs).
//
// The content at a physical address does not change (a path written again
// gets a new address): the download cache and the statistics rely on the
// same fact. A local file is the copy of that address when it was
// downloaded at a commit whose listing gave that address (into the cache,
// named by repository, address and size, or not): a commit's entry for a
// path never changes. A file downloaded at a branch (which can move between
// the listing and the download, which is by path) has no identity, not even
// the cache's copy. A diff gives no addresses: the batch's files then take theirs
// from the listing of the commit they were read at (addressed), which the
// engine keeps anyway.
//
// What else an answer could depend on is the same for every query of the
// engine: its DuckDB's settings are set once when it opens and locked
// (setupSQL: TimeZone UTC, insertion order kept, the distrusted optimizers
// off), and the memo is the engine's. The local files' directories are the
// engine's cache directory or a run directory (run-<digits>/files/<n>),
// and every read_* call turns DuckDB's hive partitioning off (noHive), so
// no directory of a local path adds a column. BatchTime and now() reach no
// memoized query: freshness's scan reads max(column) and judges it in Go.
//
// Anything that cannot be keyed so is not memoized (memoView says no):
// a file without an identity, a view with no files (its columns come from
// another file, or from the checks), Delta tables (the log decides what is
// read), CSV and JSON (read with DuckDB's sniffing), custom SQL (it may
// name any table, in the main or base schema too), and a where condition
// that is not row-only (rowOnly: one that reads other rows, through a
// subquery, PIVOT or UNPIVOT, or whose answer changes with time or between
// runs, now(), transaction_timestamp(), random(), ...). Only answers
// are kept, never errors: a query that failed runs again.
//
// Per-file facts are kept too: the columns a Parquet file's footer names
// (parquetColumns, for columnCollision), by the file's identity; and that
// DuckDB took a view's definition (goodView), so that a run whose queries
// all hit opens no connection (lazyConn).

// The memo's bounds: at most memoMaxEntries answers of at most
// memoMaxBytes together (as estimated by memoSize); the least recently
// used goes first. An answer is one row of a few figures (a few hundred
// bytes); a file's columns take about 40 bytes a column. 8 MiB holds the
// answers of thousands of batches' audits, more than the batches in flight
// between an audit and its recheck.
const (
	memoMaxEntries = 16_384
	memoMaxBytes   = 8 << 20
	// memoMaxValueBytes bounds one answer: larger ones are not kept.
	memoMaxValueBytes = 64 << 10
	// memoEntryOverhead is what an entry costs besides its value: the key
	// in the map and in the entry (32 bytes each), the map's slot with its
	// share of empty ones, the list element (48 bytes allocated) and the
	// entry (64). Measured: 214 bytes of heap an entry of one int64 (100,000
	// entries), 262 of four values; counted 264 and 368.
	memoEntryOverhead = 200
)

// queryMemo is the engine's bounded memo of query answers (see above).
type queryMemo struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	lru        *list.List // of *memoEntry, most recently used first
	m          map[[32]byte]*list.Element
	hits       int64
	misses     int64
	// conns counts the runs' connections opened (lazyConn), for tests.
	conns atomic.Int64
}

type memoEntry struct {
	key  [32]byte
	val  any
	size int64
}

func newQueryMemo(maxEntries int, maxBytes int64) *queryMemo {
	return &queryMemo{maxEntries: maxEntries, maxBytes: maxBytes, lru: list.New(), m: map[[32]byte]*list.Element{}}
}

// memoKey hashes the parts of a key, each prefixed with its length, so
// that no two lists of parts give the same bytes.
func memoKey(parts ...string) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (m *queryMemo) get(k [32]byte) (any, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.m[k]
	if !ok {
		m.misses++
		return nil, false
	}
	m.hits++
	m.lru.MoveToFront(el)
	return el.Value.(*memoEntry).val, true
}

func (m *queryMemo) has(k [32]byte) bool {
	_, ok := m.get(k)
	return ok
}

// holds says whether k has an answer, without counting a hit or a miss
// or making it the most recently used.
func (m *queryMemo) holds(k [32]byte) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.m[k]
	return ok
}

func (m *queryMemo) put(k [32]byte, v any, size int64) {
	if m == nil || size > memoMaxValueBytes {
		return
	}
	size += memoEntryOverhead
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[k]; ok {
		e := el.Value.(*memoEntry)
		m.bytes += size - e.size
		e.val, e.size = v, size
		m.lru.MoveToFront(el)
	} else {
		m.m[k] = m.lru.PushFront(&memoEntry{key: k, val: v, size: size})
		m.bytes += size
	}
	for m.lru.Len() > m.maxEntries || (m.bytes > m.maxBytes && m.lru.Len() > 0) {
		el := m.lru.Back()
		e := el.Value.(*memoEntry)
		m.lru.Remove(el)
		delete(m.m, e.key)
		m.bytes -= e.size
	}
}

// stats are the memo's hits and misses so far (tests).
func (m *queryMemo) stats() (hits, misses int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits, m.misses
}

// memoSize estimates the bytes a row of values holds.
func memoSize(vals []any) int64 {
	n := int64(24 + 16*len(vals))
	for _, v := range vals {
		switch x := v.(type) {
		case nil, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, time.Time:
			n += 24
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case *big.Int:
			n += int64(len(x.Bits())*8) + 32
		case duckdb.Decimal:
			n += 64
		default:
			// Maps, lists, intervals and the like: their printed size is
			// close enough to what they hold.
			n += int64(len(fmt.Sprint(x))) + 64
		}
	}
	return n
}

// memoView is the definition that identifies view k's answers (see the
// memo's comment): the view's definition with each file by its identity
// (fileIdentity), or false when its answers cannot be memoized.
func (r *run) memoView(ctx context.Context, k viewKey) (string, bool) {
	v := r.views[k]
	if r.e.memo == nil || v == nil || v.broken || v.colsErr != nil || v.synthetic || v.delta != nil ||
		v.table.format() != FormatParquet || len(v.files) == 0 || len(v.files) != len(v.objects) {
		return "", false
	}
	if id, ok := r.viewIDs[k]; ok {
		return id, id != ""
	}
	if r.viewIDs == nil {
		r.viewIDs = map[viewKey]string{}
	}
	objs := r.addressed(ctx, v)
	ids := make([]string, len(objs))
	for i, o := range objs {
		id, ok := r.fileIdentity(o, cmp.Or(o.at, v.ref))
		if !ok {
			r.viewIDs[k] = ""
			return "", false
		}
		ids[i] = id
	}
	def := viewSQL(k.schema, v.table.Name, v.table.format(), ids)
	r.viewIDs[k] = def
	return def, true
}

// fileIdentity names the content of the local copy of object o
// read at ref: its repository, physical address and size, when f was
// downloaded at a commit (a commit's entry for a path never changes, and
// the listing of that commit gave o's address), as a run file or as the
// cache's copy of that address. Anything else has no identity: a ref that
// can move between the listing and the download (the download is by path:
// at a branch, even the cache's file named by o's address may hold another
// address's bytes), an object without an address.
func (r *run) fileIdentity(o Object, ref string) (string, bool) {
	if o.Address == "" || !IsCommitID(ref) {
		return "", false
	}
	return "lakewap-object:" + statsKey(r.req.Repository, o), true
}

// addressed is a view's objects with their physical addresses: a diff
// (the batch's changes without a cache) gives none, so they are taken from
// the listing of the commit the files were read at (kept by the engine),
// for a path of the same size. An object left without one has no identity.
func (r *run) addressed(ctx context.Context, v *view) []Object {
	objs := slices.Clone(v.objects)
	byRef := map[string]pathIndex{}
	for i, o := range objs {
		ref := cmp.Or(o.at, v.ref)
		if o.Address != "" || !IsCommitID(ref) {
			continue
		}
		listed, ok := byRef[ref]
		if !ok {
			l, err := r.listRead(ctx, ref, v.table.Path)
			if err != nil {
				r.log.Debug("audit: no addresses for the memo", "ref", ref, "err", err)
			}
			listed = indexPaths(l)
			byRef[ref] = listed
		}
		if lo, ok := listed.get(o.Path); ok && lo.Size == o.Size {
			objs[i].Address = lo.Address
		}
	}
	return objs
}

// memoIDs is q with each of the local files named in it (the copies of
// objs, read at their ref or the request's) replaced by its identity, or
// false when one has none.
func (r *run) memoIDs(q string, objs []Object, files []string) (string, bool) {
	if r.e.memo == nil || len(objs) != len(files) {
		return "", false
	}
	for i, o := range objs {
		id, ok := r.fileIdentity(o, cmp.Or(o.at, r.req.Ref))
		if !ok {
			return "", false
		}
		q = strings.ReplaceAll(q, quoteLiteral(files[i]), quoteLiteral(id))
	}
	return q, true
}

// memoRow is queryRow with the engine's memo: q reads the views vs and no
// other table. The row is a copy, but its values (a *big.Int, a map) are
// shared with later runs: callers read them and never change them. keyText is q as the key names it: q itself, or q with the
// local files it names replaced by their identities (memoIDs); "" when
// they have none, and then q just runs, as it does when a view cannot be
// memoized.
func (r *run) memoRow(ctx context.Context, q, keyText string, n int, vs ...viewKey) ([]any, error) {
	if keyText == "" || r.e.memo == nil {
		return r.queryRow(ctx, q, n)
	}
	parts := []string{"row", keyText}
	for _, k := range vs {
		def, ok := r.memoView(ctx, k)
		if !ok {
			return r.queryRow(ctx, q, n)
		}
		parts = append(parts, def)
	}
	key := memoKey(parts...)
	if v, ok := r.e.memo.get(key); ok {
		vals := v.([]any)
		if len(vals) == n {
			return append([]any(nil), vals...), nil
		}
	}
	vals, err := r.queryRow(ctx, q, n)
	if err == nil {
		r.e.memo.put(key, append([]any(nil), vals...), memoSize(vals))
	}
	return vals, err
}

// lazyConn is a run's connection, opened when a query first needs it: a
// run whose every query is answered by the memo opens none, creates no
// catalog and no view in DuckDB, and downloads none of its files (ready). Views whose definitions DuckDB took
// before (memoView's definition, kept in the memo as a good view) wait in
// deferred and are created when the connection opens; a view DuckDB may
// refuse is created at once (openDB), so that its checks report why.
type lazyConn struct {
	r        *run
	conn     *sql.Conn
	err      error    // a failed open: every use fails with it
	deferred []string // views to create when it opens
	views    []string // the views asked for on the connection (qualified), to drop
	pooled   bool     // the catalog came from the engine's pool (runCatalogs)
	// made: the catalog is as runSQL makes it (taken from the pool, or
	// every statement of runSQL ran); only then may it go to the pool.
	made bool
	// searchPath: a statement changed the connection's search path (a
	// custom SQL check); its catalog is not pooled again.
	searchPath bool
}

// open opens the connection, makes the run's catalog and creates the
// deferred views. A failure is the machine's, not the data's (the views
// were created before over the same files): the run is retried.
func (c *lazyConn) open(ctx context.Context) error {
	if err := c.r.ready(ctx); err != nil { // the files the views and the query read
		return err
	}
	if c.conn != nil || c.err != nil {
		return c.err
	}
	setup, making := c.deferred, 0
	if pc, ok := c.r.catalogs().take(); ok {
		c.conn, c.r.catalog, c.pooled, c.made = pc.conn, pc.name, true, true
	} else {
		conn, err := c.r.pool().Conn(ctx)
		if err != nil {
			return fmt.Errorf("audit: duckdb connection: %w", err)
		}
		c.conn = conn
		making = len(runSQL(c.r.catalog))
		setup = append(runSQL(c.r.catalog), setup...)
	}
	conn := c.conn
	if c.r.e.memo != nil {
		c.r.e.memo.conns.Add(1)
	}
	for i, s := range setup {
		c.r.e.statement(s)
		if _, err := conn.ExecContext(ctx, s); err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // not kept unless made: close tears down what was made
			}
			c.err = fmt.Errorf("audit: duckdb setup %q: %w", s, err)
			if c.r.infra == nil {
				c.r.infra = fmt.Errorf("%w: %w", ErrInfrastructure, c.err)
			}
			return c.err
		}
		if i+1 == making {
			c.made = true
		}
	}
	c.deferred = nil
	return nil
}

func (c *lazyConn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	c.r.e.statement(q)
	return c.conn.QueryContext(ctx, q, args...)
}

func (c *lazyConn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	c.r.e.statement(q)
	return c.conn.ExecContext(ctx, q, args...)
}

// lazyRow is a row of a lazyConn: the row, or why the connection did not open.
type lazyRow struct {
	row *sql.Row
	err error
}

func (r lazyRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.row.Scan(dest...)
}

func (c *lazyConn) QueryRowContext(ctx context.Context, q string, args ...any) lazyRow {
	if err := c.open(ctx); err != nil {
		return lazyRow{err: err}
	}
	c.r.e.statement(q)
	return lazyRow{row: c.conn.QueryRowContext(ctx, q, args...)}
}

// statement notes a statement about to run on a run's connection: tests
// count them (onStatement).
func (e *Engine) statement(q string) {
	if e.onStatement != nil {
		e.onStatement(q)
	}
}

// goodView is the memo's key for a view definition DuckDB took, when the
// view's files all have identities (memoView).
func (r *run) goodView(ctx context.Context, k viewKey) ([32]byte, bool) {
	def, ok := r.memoView(ctx, k)
	if !ok {
		return [32]byte{}, false
	}
	return memoKey("view", def), true
}

// parquetColumnsMemo is parquetColumns with each file's columns kept in the
// memo by its identity (ids: by local file, "" for none; a file without
// one is read every time).
func (r *run) parquetColumnsMemo(ctx context.Context, files []string, ids map[string]string) (map[string][]fileColumn, error) {
	out := map[string][]fileColumn{}
	var missing []string
	for _, f := range files {
		if id := ids[f]; id != "" {
			if v, ok := r.e.memo.get(memoKey("columns", id)); ok {
				out[f] = v.([]fileColumn)
				continue
			}
		}
		missing = append(missing, f)
	}
	if len(missing) == 0 {
		return out, nil
	}
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	got, err := r.parquetColumns(ctx, missing)
	if err != nil {
		return nil, err
	}
	for f, cols := range got {
		out[f] = cols
		if id := ids[f]; id != "" {
			size := int64(len(id))
			for _, c := range cols {
				size += int64(len(c.name)+len(c.pandas)+len(c.arrow)+len(c.arrowFile)+len(c.typed)+len(c.legacyList)+len(c.wideDecimal)+len(c.sparkSchema)+len(c.sparkChar)+len(c.sparkCharType)+len(c.union)+len(c.sparkDefault)) + 40
				for _, ch := range c.children {
					size += int64(len(ch)) + 16
				}
				for _, d := range c.sparkCharTexts {
					size += int64(len(d)) + 16
				}
				for _, l := range c.rebased {
					size += int64(len(l.path)) + 48
					for _, s := range l.steps {
						size += int64(len(s.field)) + 24
					}
				}
				for _, p := range c.nested {
					size += int64(len(p)) + 16
				}
				for _, l := range c.unionLeaves {
					size += int64(len(l.path)+len(l.typ)) + 56
					for _, s := range l.steps {
						size += int64(len(s.kind)+len(s.name)) + 32
					}
				}
			}
			r.e.memo.put(memoKey("columns", id), cols, size)
		}
	}
	return out, nil
}
