package audit

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps prepared statements of the engine's pool by text: the
// fused statement over a batch view's read (fusion.fetch) has the same
// text for every batch of a dataset, its files a parameter, so its answer
// depends on nothing but the text and the arguments, and preparing it
// once saves DuckDB parsing it for every batch (BenchmarkFusedStatementParts:
// param-kept against param). At most maxKeptStatements, the oldest
// evicted first; an evicted statement is closed when the last run using
// it is done with it (release), so a run never finds its statement closed
// under it. database/sql prepares a kept statement again on each pooled
// connection it runs on.
type stmtCache struct {
	mu     sync.Mutex
	by     map[string]*keptStmt
	order  []string // oldest first
	closed bool
}

// keptStmt is a kept statement and the runs using it.
type keptStmt struct {
	st      *sql.Stmt
	users   int
	evicted bool // out of the cache: closed when users reaches 0
}

// maxKeptStatements bounds the kept statements (one per dataset's suite
// and batch shape in practice).
const maxKeptStatements = 32

// maxKeptStatementBytes bounds the text of a kept statement; a longer one
// is prepared each time.
const maxKeptStatementBytes = 64 << 10

// prepared is q prepared on db, kept, and the release the caller calls
// once done with it; ok is false when q is not kept (too long, or the
// cache is closed), and the caller runs it unprepared.
func (c *stmtCache) prepared(ctx context.Context, db *sql.DB, q string) (st *sql.Stmt, release func(), ok bool, err error) {
	if len(q) > maxKeptStatementBytes {
		return nil, nil, false, nil
	}
	c.mu.Lock()
	if k := c.by[q]; k != nil {
		k.users++
		c.mu.Unlock()
		return k.st, c.releaser(k), true, nil
	}
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, false, nil
	}
	prepared, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed { // closed meanwhile
		_ = prepared.Close()
		return nil, nil, false, nil
	}
	if k := c.by[q]; k != nil { // prepared meanwhile by another run
		_ = prepared.Close()
		k.users++
		return k.st, c.releaser(k), true, nil
	}
	if c.by == nil {
		c.by = map[string]*keptStmt{}
	}
	if len(c.order) >= maxKeptStatements {
		c.evict(c.by[c.order[0]])
		delete(c.by, c.order[0])
		c.order = c.order[1:]
	}
	k := &keptStmt{st: prepared, users: 1}
	c.by[q] = k
	c.order = append(c.order, q)
	return k.st, c.releaser(k), true, nil
}

// evict takes k out of use: closed now, or by its last user's release.
// c.mu is held.
func (c *stmtCache) evict(k *keptStmt) {
	k.evicted = true
	if k.users == 0 {
		_ = k.st.Close()
	}
}

// releaser is the release of one use of k.
func (c *stmtCache) releaser(k *keptStmt) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			k.users--
			if k.evicted && k.users == 0 {
				_ = k.st.Close()
			}
		})
	}
}

// close takes every kept statement out of use; later calls keep none.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.by {
		c.evict(k)
	}
	c.by, c.order, c.closed = nil, nil, true
}
