package runstore

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

func setAside(t *testing.T, s *Store, reason string) float64 {
	t.Helper()
	var m dto.Metric
	_ = s.setAside.WithLabelValues(reason).Write(&m)
	return m.GetCounter().GetValue()
}

func stateOf(t *testing.T, v []byte) pipeline.State {
	t.Helper()
	var r pipeline.Run
	if err := json.Unmarshal(v, &r); err != nil {
		t.Fatalf("restored record: %v", err)
	}
	return r.State
}

// An older record lakewap sealed itself, written onto the changelog again
// by someone who kept a copy, does not move its run backwards: the run of
// a batch cancelled after its audit passed is not made "publishing" again,
// a run lakewap deleted is not brought back, and a record another record
// had overtaken before compaction stays set aside after it. Records carry
// the partition's sequence inside the seal; restore keeps the newest.
func TestReplayedRecordIsSetAside(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	put := func(mut func(*pipeline.Run)) []byte {
		k, v := record(t, mut)
		must(t, s.Put(ctx, 0, k, v))
		return inner.latest(0)[k]
	}
	var history [][]byte
	for _, st := range []pipeline.State{pipeline.StateAwaitingWrites, pipeline.StateAuditing, pipeline.StatePublishing} {
		history = append(history, put(func(r *pipeline.Run) { r.State = st }))
	}
	put(func(r *pipeline.Run) { r.State, r.Reason = pipeline.StateAborted, schemas.ReasonCancelled })
	gone := put(func(r *pipeline.Run) { r.BatchID, r.Branch = "b2", schemas.BranchName("billing", "b2") })
	must(t, s.Delete(ctx, 0, pipeline.RunKey("billing", "b2")))
	k4, live4 := record(t, func(r *pipeline.Run) { r.BatchID, r.Branch = "b4", schemas.BranchName("billing", "b4") })
	must(t, s.Put(ctx, 0, k4, live4))

	// The attacker's copies: b1 publishing, awaiting writes, and b2 after
	// its deletion.
	must(t, inner.Put(ctx, 0, pipeline.RunKey("billing", "b1"), history[2]))
	must(t, inner.Put(ctx, 0, pipeline.RunKey("billing", "b1"), history[0]))
	must(t, inner.Put(ctx, 0, pipeline.RunKey("billing", "b2"), gone))

	restarted := func() *Store {
		s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
		must(t, err)
		return s
	}
	s = restarted()
	got, err := s.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[pipeline.RunKey("billing", "b1")]); st != pipeline.StateAborted || len(got) != 2 {
		t.Errorf("restored %v with b1 %s, want b1 aborted as lakewap left it, and b4", keys(got), st)
	}
	if n := setAside(t, s, ReasonReplayed); n != 3 {
		t.Errorf("set aside as replayed: %v, want 3", n)
	}

	// After compaction the replays are the keys' latest records and
	// lakewap's are gone; records lakewap wrote before the replays still
	// date them. (A key with no record left is forgotten, never revived.)
	inner.compact(0)
	s = restarted()
	got, err = s.Load(ctx, 0)
	must(t, err)
	if _, ok := got[pipeline.RunKey("billing", "b2")]; ok {
		t.Errorf("b2, deleted by lakewap, came back after compaction")
	}
	if v, ok := got[pipeline.RunKey("billing", "b1")]; ok {
		t.Errorf("b1 restored %s after compaction, a state it had left", stateOf(t, v))
	}
	if !bytes.Equal(got[k4], live4) {
		t.Errorf("b4 not restored as lakewap wrote it")
	}
}

// A store numbers on from the newest record it loaded, whatever its clock
// says, so a restarted daemon's records are not taken for replays; and a
// forged record over a live run leaves the run its authentic record.
func TestRestartedStoreNumbersOnAndForgeriesKeepTheRun(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	k, v := record(t, nil)
	must(t, s.Put(ctx, 0, k, v))

	past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) // a clock far behind
	s, err = New(Config{Inner: inner, Key: key, Datasets: specs, Now: func() time.Time { return past }})
	must(t, err)
	if _, err := s.Load(ctx, 0); err != nil {
		t.Fatal(err)
	}
	k2, v2 := record(t, func(r *pipeline.Run) { r.BatchID, r.Branch = "b2", schemas.BranchName("billing", "b2") })
	must(t, s.Put(ctx, 0, k2, v2))
	_, v1 := record(t, func(r *pipeline.Run) { r.State = pipeline.StatePublished })
	must(t, s.Put(ctx, 0, k, v1))
	forged := bytes.Replace(inner.latest(0)[k], []byte(`"published"`), []byte(`"publishing"`), 1)
	must(t, inner.Put(ctx, 0, k, forged))

	s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, err := s.Load(ctx, 0)
	must(t, err)
	if len(got) != 2 || !bytes.Equal(got[k], v1) || !bytes.Equal(got[k2], v2) {
		t.Errorf("restored %v, want b1 published and b2 as written", keys(got))
	}
	if n, r := setAside(t, s, ReasonBadSeal), setAside(t, s, ReasonReplayed); n != 1 || r != 0 {
		t.Errorf("set aside %v bad_seal and %v replayed, want 1 and 0", n, r)
	}
	if len(inner.latest(0)[k]) > len(v1)+Overhead {
		t.Errorf("a sealed record of %d bytes, the run's %d plus Overhead %d", len(inner.latest(0)[k]), len(v1), Overhead)
	}
}
