package audit

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// countingSource counts the downloads of its Source.
type countingSource struct {
	Source
	downloads atomic.Int64
}

func (s *countingSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	s.downloads.Add(1)
	return s.Source.Download(ctx, repo, ref, path, w)
}

// A Delta table's log is the batch's bytes too: Request.BeforeRead (where
// the runner records a recheck's attempt) comes before its first download,
// and before reading the log's files from the cache when they are there
// already (nothing downloaded then); its error fails the run with
// ErrInfrastructure, nothing downloaded, no statement run, nothing passed.
// A guard of b135e50: the Delta log's downloads go through the run's
// downloader, whose getAll calls it.
func TestBeforeReadPrecedesTheDeltaLog(t *testing.T) {
	src := &countingSource{Source: deltaFixture(t)}
	e := newEngine(t, src, t.TempDir())
	var statements atomic.Int64
	e.onStatement = func(string) { statements.Add(1) }
	type call struct{ downloads, statements int64 }
	var calls []call
	var fail error
	req := Request{Dataset: "events", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "events", Path: "gold/events/", Format: FormatDelta}},
			Checks: []Check{{Kind: KindNotNull, Table: "events", Column: "id"}}},
		BeforeRead: func(context.Context) error {
			calls = append(calls, call{src.downloads.Load(), statements.Load()})
			return fail
		}}

	rep, err := e.Run(context.Background(), req)
	if err != nil || !rep.Passed || src.downloads.Load() == 0 {
		t.Fatalf("audit: err %v, passed %v, %d downloads: %+v", err, rep.Passed, src.downloads.Load(), rep.Checks)
	}
	if len(calls) != 1 || calls[0] != (call{}) {
		t.Fatalf("BeforeRead calls (downloads, statements so far) %v, want one before anything", calls)
	}

	// The cache holds the log and the data now.
	calls, fail = nil, errors.New("injected begin failure")
	downloads, stmts := src.downloads.Load(), statements.Load()
	rep, err = e.Run(context.Background(), req)
	if !errors.Is(err, fail) || !errors.Is(err, ErrInfrastructure) || rep.Passed {
		t.Fatalf("audit whose BeforeRead fails: err %v, passed %v", err, rep.Passed)
	}
	if len(calls) != 1 || src.downloads.Load() != downloads || statements.Load() != stmts {
		t.Errorf("audit whose BeforeRead fails: called %d times, %d downloads, %d statements; want once, none",
			len(calls), src.downloads.Load()-downloads, statements.Load()-stmts)
	}

	calls, fail = nil, nil
	rep, err = e.Run(context.Background(), req)
	if err != nil || !rep.Passed || len(calls) != 1 || calls[0].statements != stmts {
		t.Fatalf("audit from the cache: err %v, passed %v, BeforeRead calls %v (want one before statement %d)", err, rep.Passed, calls, stmts)
	}
}
