package runstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// A partition holds one run. lakewap takes it from awaiting writes to
// auditing to aborted (cancelled) and writes nothing more in the partition.
// Someone who kept lakewap's sealed "auditing" record writes it again, and
// compaction leaves only the latest record of each key: the replay. It is
// set aside at the next restore: the batch is not audited (and published)
// after its cancellation, though no record of lakewap's that dates it is
// left before it.
func TestReplayAfterCompactionInAQuietPartitionIsSetAside(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	for _, end := range []string{"aborted", "deleted"} {
		t.Run(end, func(t *testing.T) {
			inner := logStore{}
			s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
			must(t, err)
			_, err = s.Load(ctx, 0)
			must(t, err)
			k, v := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
			must(t, s.Put(ctx, 0, k, v))
			_, v = record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
			must(t, s.Put(ctx, 0, k, v))
			auditing := inner.latest(0)[k]
			if end == "aborted" {
				_, v = record(t, func(r *pipeline.Run) { r.State, r.Reason = pipeline.StateAborted, schemas.ReasonCancelled })
				must(t, s.Put(ctx, 0, k, v))
			} else {
				must(t, s.Delete(ctx, 0, k))
			}

			must(t, inner.Put(ctx, 0, k, auditing)) // the attacker's copy
			inner.compact(0)

			s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
			must(t, err)
			got, err := s.Load(ctx, 0)
			must(t, err)
			if v, ok := got[k]; ok {
				t.Errorf("restored the run %s, from lakewap's old record written again after it was %s", stateOf(t, v), end)
			}
			if n := setAside(t, s, ReasonReplayed); n != 1 {
				t.Errorf("set aside as replayed: %v, want 1", n)
			}
		})
	}
}

// An old owner of a partition keeps writing after a handover (a zombie:
// it has not learnt it lost the partition), its sequence numbers far ahead
// of the new owner's (numbered from a clock hours ahead, as they were, or
// from many more records). The new owner loaded the partition and writes
// after the zombie. At the next restore the new owner's records are the
// run's, and the zombie's later ones are set aside, not the other way round.
func TestZombieOwnerWithAFastClockDoesNotOvertakeTheNewOwner(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	old, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = old.Load(ctx, 0)
	must(t, err)
	b2 := func(st pipeline.State) (string, []byte) {
		return record(t, func(r *pipeline.Run) { r.BatchID, r.Branch, r.State = "b2", schemas.BranchName("billing", "b2"), st })
	}
	k1, v := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAwaitingWrites })
	must(t, old.Put(ctx, 0, k1, v))
	k2, v := b2(pipeline.StateAwaitingWrites)
	must(t, old.Put(ctx, 0, k2, v))

	// The handover: the new owner restores the partition.
	owner, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	_, err = owner.Load(ctx, 0)
	must(t, err)

	// The zombie moves both runs on; the new owner, later, b1 only.
	_, zombie1 := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	must(t, old.Put(ctx, 0, k1, zombie1))
	_, zombie2 := b2(pipeline.StateAuditing)
	for range 100 {
		must(t, old.Put(ctx, 0, k2, zombie2))
	}
	_, mine := record(t, func(r *pipeline.Run) { r.State, r.Reason = pipeline.StateAborted, schemas.ReasonCancelled })
	must(t, owner.Put(ctx, 0, k1, mine))

	// Compaction first: only the latest record of each key is left, the
	// zombie's of b2 among them, after the new owner's epoch mark and
	// before its last mark. b2's record, which the new owner never wrote
	// again, is gone with it: the run is forgotten, not moved on.
	compacted := logStore{0: slices.Clone(inner[0])}
	compacted.compact(0)
	next, err := New(Config{Inner: compacted, Key: key, Datasets: specs})
	must(t, err)
	got, err := next.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[k1]); st != pipeline.StateAborted || len(got) != 1 {
		t.Errorf("after compaction restored %v with b1 %s, want b1 aborted alone", keys(got), st)
	}
	if n := setAside(t, next, ReasonReplayed); n != 1 {
		t.Errorf("after compaction set aside as replayed: %v, want the zombie's last record of b2", n)
	}

	next, err = New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, err = next.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[k1]); st != pipeline.StateAborted {
		t.Errorf("b1 restored %s, want aborted as the new owner wrote it", st)
	}
	if st := stateOf(t, got[k2]); st != pipeline.StateAwaitingWrites {
		t.Errorf("b2 restored %s, want awaiting_writes as the new owner found it (the zombie's auditing set aside)", st)
	}
	if n := setAside(t, next, ReasonReplayed); n != 101 {
		t.Errorf("set aside as replayed: %v, want the zombie's 101 records", n)
	}
}

// Records sealed before epochs were (no "wap_epoch": epoch 0) are
// restored, and the store's own records come after them; the marks are no
// runs to a store without a key, nor to readers of runs, and a partition
// holds one live mark however often it was loaded.
func TestOlderRecordsMarksAndUnsealedStores(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	k, v := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	if err := s.Put(ctx, 0, k, v); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("Put before Load: %v, want ErrNotLoaded", err)
	}
	// As the version before epochs sealed it: its number from the clock.
	numbered := fmt.Appendf(bytes.Clone(v[:len(v)-1]), `,"wap_seq":%d}`, time.Now().UnixMicro())
	legacy := fmt.Appendf(numbered[:len(numbered)-1], `,"wap_seal":"%s"}`, s.seal(k, numbered))
	must(t, inner.Put(ctx, 0, k, legacy))

	for range 5 {
		s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
		must(t, err)
		got, err := s.Load(ctx, 0)
		must(t, err)
		if !bytes.Equal(got[k], v) {
			t.Fatalf("the record sealed before epochs restored as %q, want %q", got[k], v)
		}
	}
	_, v2 := record(t, func(r *pipeline.Run) { r.State = pipeline.StatePublishing })
	must(t, s.Put(ctx, 0, k, v2))
	s, err = New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, err := s.Load(ctx, 0)
	must(t, err)
	if !bytes.Equal(got[k], v2) || setAside(t, s, ReasonReplayed) != 0 {
		t.Errorf("restored %q (%v replayed), want the store's own later record", got[k], setAside(t, s, ReasonReplayed))
	}
	var marks []string
	for mk, mv := range inner.latest(0) {
		if IsMark(mk) {
			marks = append(marks, mk)
			if len(mk)+len(mv) > MaxMarkBytes {
				t.Errorf("mark %s of %d bytes, more than MaxMarkBytes %d", mk, len(mk)+len(mv), MaxMarkBytes)
			}
		}
	}
	if len(marks) != 1 || !strings.HasPrefix(marks[0], EpochMarkPrefix+"6.") {
		t.Errorf("live marks after 6 loads: %v, want %s6.<owner> alone", marks, EpochMarkPrefix)
	}

	open, err := New(Config{Inner: inner, Datasets: specs})
	must(t, err)
	got, err = open.Load(ctx, 0)
	must(t, err)
	var aside dto.Metric
	_ = open.setAside.WithLabelValues(ReasonDataset).Write(&aside)
	if len(got) != 1 || !bytes.Equal(got[k], inner.latest(0)[k]) || aside.GetCounter().GetValue() != 0 {
		t.Errorf("a store without a key restored %v (%v set aside), want the run alone", keys(got), aside.GetCounter().GetValue())
	}
	must(t, open.Put(ctx, 3, k, v)) // nothing to load first without a key
}

// Records of the build before epochs (numbered by its writer's clock,
// without an epoch; never released) restore as that build left them, and
// rank below every epoch: one written after a load of this version (an
// old-version owner still writing, or a replay) is set aside, and this
// version's owner's runs written after it are kept (second review: with
// epoch-0 records ranked by sequence across epochs, such a zombie's clock
// numbers set aside the current owner's new run and the Load deleted it).
func TestRecordsOfTheVersionBeforeEpochsRankBelowEveryEpoch(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ctx := context.Background()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	k, _ := record(t, nil)
	legacy := func(v []byte) []byte { // as the build before epochs sealed it
		numbered := fmt.Appendf(bytes.Clone(v[:len(v)-1]), `,"wap_seq":%d}`, time.Now().UnixMicro())
		return fmt.Appendf(numbered[:len(numbered)-1], `,"wap_seal":"%s"}`, s.seal(k, numbered))
	}
	_, auditing := record(t, func(r *pipeline.Run) { r.State = pipeline.StateAuditing })
	old := legacy(auditing)
	must(t, inner.Put(ctx, 0, k, old))
	_, aborted := record(t, func(r *pipeline.Run) { r.State, r.Reason = pipeline.StateAborted, schemas.ReasonCancelled })
	must(t, inner.Put(ctx, 0, k, legacy(aborted)))

	got, err := s.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[k]); st != pipeline.StateAborted || setAside(t, s, ReasonReplayed) != 0 {
		t.Errorf("restored %s (%v replayed), want aborted as the older build left it", st, setAside(t, s, ReasonReplayed))
	}

	must(t, inner.Put(ctx, 0, k, legacy(auditing))) // an old-build owner still writing after this load
	k2, v2 := record(t, func(r *pipeline.Run) {
		r.BatchID, r.Branch, r.State = "b2", schemas.BranchName("billing", "b2"), pipeline.StateAwaitingWrites
	})
	must(t, s.Put(ctx, 0, k2, v2)) // this version's owner's new run

	next, err := New(Config{Inner: inner, Key: key, Datasets: specs})
	must(t, err)
	got, err = next.Load(ctx, 0)
	must(t, err)
	if st := stateOf(t, got[k]); st != pipeline.StateAborted {
		t.Errorf("b1 restored %s, want aborted: the old build's record after this version's load ranks below it", st)
	}
	if _, ok := got[k2]; !ok {
		t.Errorf("this version's new run b2 is not restored (%v replayed)", setAside(t, next, ReasonReplayed))
	}
	if _, ok := inner.latest(0)[k2]; !ok {
		t.Errorf("b2's record was deleted from the changelog by the Load")
	}
	if setAside(t, next, ReasonReplayed) == 0 {
		t.Errorf("the old build's record written after this version's load was not set aside")
	}
}
