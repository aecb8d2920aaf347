package runstore

import (
	"bytes"
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/kafka"
)

// A record lakewap sealed, copied to another partition of the changelog,
// is set aside there: the run of a batch lives in the partition of its
// batch id (murmur2, as its input events), and a copy elsewhere would give
// the run a second owner, on another instance.
func TestSealedRecordOnAnotherPartitionIsSetAside(t *testing.T) {
	const partitions = 3
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: bytes.Repeat([]byte("k"), 32), Datasets: specs, Partitions: func() int { return partitions }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, good := record(t, nil)
	home := kafka.PartitionOf([]byte("b1"), partitions)
	_, err = s.Load(ctx, home)
	must(t, err)
	if err := s.Put(ctx, home, key, good); err != nil {
		t.Fatal(err)
	}
	elsewhere := (home + 1) % partitions
	must(t, inner.Put(ctx, elsewhere, key, inner.latest(home)[key])) // the attacker's copy
	if got, err := s.Load(ctx, elsewhere); err != nil || len(got) != 0 {
		t.Errorf("partition %d restored %v (err %v), want the copy set aside", elsewhere, keys(got), err)
	}
	if got, err := s.Load(ctx, home); err != nil || !bytes.Equal(got[key], good) {
		t.Errorf("home partition %d restored %v (err %v), want the record", home, keys(got), err)
	}
	var m dto.Metric
	_ = s.setAside.WithLabelValues(ReasonPartition).Write(&m)
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Errorf("set aside for %s: %v, want 1", ReasonPartition, n)
	}
}
