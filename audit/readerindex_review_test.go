package audit

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// endsAfter is a context that ends after its Err was asked n times: where
// a long piece of work asks it.
type endsAfter struct {
	context.Context
	n atomic.Int64
}

func (c *endsAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestReaderIndexesStopWhenTheRunEnds: the Go page reader reads a file's
// pages (up to 1,048,576 per chunk, each up to 256 MiB uncompressed) for a
// run that may end (a shutdown, a revoked partition): it must stop between
// pages rather than read the file to its end. Before, once a file's
// reading began it went on to the end whatever the run's context said.
func TestReaderIndexesStopWhenTheRunEnds(t *testing.T) {
	e := newEngine(t, newDirSource(t), "")
	// DuckDB's bloom filters over three row groups' dictionaries.
	f := filepath.Join(e.dir, "blooms.parquet")
	copySQL(t, "COPY ("+duckdbIndexedRows+") TO "+quoteLiteral(f)+" (FORMAT parquet, ROW_GROUP_SIZE 3000)")
	r := &run{e: e}
	if err := r.readerIndexes(context.Background(), []string{f}, map[string]string{f: "p.parquet"}, nil); err != nil {
		t.Fatalf("the honest file: %v", err)
	}
	ctx := &endsAfter{Context: context.Background()}
	ctx.n.Store(1) // the run ends once its file's reading began
	if err := r.readerIndexes(ctx, []string{f}, map[string]string{f: "p.parquet"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the run ended while its file was read: %v, want the reading stopped (context canceled)", err)
	}
}
