package runstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

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
	_, err = s.Load(ctx, 0)
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

	restarted := func(inner logStore) *Store {
		s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
		must(t, err)
		return s
	}

	// Compaction before any restore: the replays are the keys' latest
	// records and lakewap's are gone; the marks and records lakewap wrote
	// before the replays date them. (A key with no record left is
	// forgotten, never revived.)
	early := logStore{0: slices.Clone(inner[0])}
	early.compact(0)
	s = restarted(early)
	got, err := s.Load(ctx, 0)
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

	// A restore before compaction keeps b1's record, and writes it again
	// after the replays: compaction then removes the replays, not it.
	s = restarted(inner)
	got, err = s.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[pipeline.RunKey("billing", "b1")]); st != pipeline.StateAborted || len(got) != 2 {
		t.Errorf("restored %v with b1 %s, want b1 aborted as lakewap left it, and b4", keys(got), st)
	}
	if n := setAside(t, s, ReasonReplayed); n != 3 {
		t.Errorf("set aside as replayed: %v, want 3", n)
	}
	inner.compact(0)
	s = restarted(inner)
	got, err = s.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[pipeline.RunKey("billing", "b1")]); st != pipeline.StateAborted || len(got) != 2 || !bytes.Equal(got[k4], live4) {
		t.Errorf("after compaction restored %v with b1 %s, want b1 aborted and b4 as lakewap wrote them", keys(got), st)
	}
	if n := setAside(t, s, ReasonReplayed); n != 0 {
		t.Errorf("after compaction %v records set aside as replayed, want the replays gone", n)
	}
}

// A store places its records after the newest it loaded (in the next
// epoch), so a restarted daemon's records are not taken for replays; and a
// forged record over a live run leaves the run its authentic record, which
// the restore writes again so that compaction keeps it.
func TestRestartedStoreNumbersOnAndForgeriesKeepTheRun(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = s.Load(ctx, 0)
	must(t, err)
	k, v := record(t, nil)
	must(t, s.Put(ctx, 0, k, v))

	s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
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
	// The restore wrote b1's record again after the forgery: compaction
	// leaves the run its record.
	inner.compact(0)
	s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, err = s.Load(ctx, 0)
	must(t, err)
	if len(got) != 2 || !bytes.Equal(got[k], v1) || !bytes.Equal(got[k2], v2) {
		t.Errorf("after compaction restored %v, want b1 published and b2 as written", keys(got))
	}
	if len(inner.latest(0)[k]) > len(v1)+Overhead {
		t.Errorf("a sealed record of %d bytes, the run's %d plus Overhead %d", len(inner.latest(0)[k]), len(v1), Overhead)
	}
}

// Read (the janitor's) judges a partition as Load does, its replays and
// forgeries set aside and counted, and writes nothing: a reader that is
// not the owner never takes the partition's epoch.
func TestReadJudgesAsLoadWithoutWriting(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = s.Load(ctx, 0)
	must(t, err)
	k, old := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
	must(t, s.Put(ctx, 0, k, old))
	replay := inner.latest(0)[k]
	_, v := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	must(t, s.Put(ctx, 0, k, v))
	must(t, inner.Put(ctx, 0, k, replay))
	forged, _ := json.Marshal(pipeline.Run{BatchID: "x", Dataset: "billing", State: pipeline.StateAborted})
	must(t, inner.Put(ctx, 0, "billing/x", forged))
	must(t, inner.Put(ctx, 0, "billing/y", []byte("not a run")))

	before := len(inner[0])
	reader, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, aside, err := reader.Read(ctx, 0)
	must(t, err)
	if len(inner[0]) != before {
		t.Errorf("Read wrote %d records", len(inner[0])-before)
	}
	if len(got) != 1 || stateOf(t, got[k]) != pipeline.StateAuditing {
		t.Errorf("Read gave %q, want only %s auditing", got, k)
	}
	if aside != 3 {
		t.Errorf("Read set aside %d records, want 3 (the replay, the unsealed and the unreadable one)", aside)
	}
	if _, err := reader.Load(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := setAside(t, reader, ReasonReplayed) + setAside(t, reader, ReasonUnsealed); n != 3 {
		t.Errorf("Load set aside %v replayed and unsealed records, want 3 (Read counts none)", n)
	}
}
