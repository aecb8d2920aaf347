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
// param-kept against param). At most maxKeptStatements, the oldest closed
// first; database/sql prepares a kept statement again on each pooled
// connection it runs on.
type stmtCache struct {
	mu     sync.Mutex
	by     map[string]*sql.Stmt
	order  []string // oldest first
	closed bool
}

// maxKeptStatements bounds the kept statements (one per dataset's suite
// and batch shape in practice).
const maxKeptStatements = 32

// maxKeptStatementBytes bounds the text of a kept statement; a longer one
// is prepared each time.
const maxKeptStatementBytes = 64 << 10

// prepared is q prepared on db, kept; ok is false when q is not kept (too
// long, or the cache is closed), and the caller runs it unprepared.
func (c *stmtCache) prepared(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, bool, error) {
	if len(q) > maxKeptStatementBytes {
		return nil, false, nil
	}
	c.mu.Lock()
	if st := c.by[q]; st != nil {
		c.mu.Unlock()
		return st, true, nil
	}
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, false, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed { // closed meanwhile
		_ = st.Close()
		return nil, false, nil
	}
	if old := c.by[q]; old != nil { // prepared meanwhile by another run
		_ = st.Close()
		return old, true, nil
	}
	if c.by == nil {
		c.by = map[string]*sql.Stmt{}
	}
	if len(c.order) >= maxKeptStatements {
		// A run may still be using the oldest: Close waits for its
		// queries to end (database/sql).
		_ = c.by[c.order[0]].Close()
		delete(c.by, c.order[0])
		c.order = c.order[1:]
	}
	c.by[q] = st
	c.order = append(c.order, q)
	return st, true, nil
}

// close closes the kept statements; later calls keep none.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.by {
		_ = st.Close()
	}
	c.by, c.order, c.closed = nil, nil, true
}
