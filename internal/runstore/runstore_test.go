package runstore

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// logStore is Inner over an in-memory log per partition, as the changelog
// topic before compaction: every record appended, read back in order.
type logStore map[int][]entry

type entry struct {
	key   string
	value []byte // nil: a tombstone
}

func (l logStore) Write(_ context.Context, p int, records ...consumer.ChangelogRecord) error {
	for _, r := range records {
		l[p] = append(l[p], entry{r.Key, bytes.Clone(r.Value)})
	}
	return nil
}

// Put and Delete write as anyone else with access to the topic.
func (l logStore) Put(_ context.Context, p int, k string, v []byte) error {
	l[p] = append(l[p], entry{k, bytes.Clone(v)})
	return nil
}
func (l logStore) Delete(_ context.Context, p int, k string) error {
	l[p] = append(l[p], entry{k, nil})
	return nil
}
func (l logStore) Scan(_ context.Context, p int, fn func(string, []byte)) error {
	for _, e := range l[p] {
		fn(e.key, bytes.Clone(e.value))
	}
	return nil
}

// latest is the partition's latest value of each key, as a reader of the
// compacted topic sees it.
func (l logStore) latest(p int) map[string][]byte {
	out := map[string][]byte{}
	for _, e := range l[p] {
		if e.value == nil {
			delete(out, e.key)
			continue
		}
		out[e.key] = e.value
	}
	return out
}

// compact drops every record but the latest of each key (tombstones too),
// as Kafka's log cleaner does in its own time.
func (l logStore) compact(p int) {
	last := map[string]int{}
	for i, e := range l[p] {
		last[e.key] = i
	}
	var kept []entry
	for i, e := range l[p] {
		if last[e.key] == i && e.value != nil {
			kept = append(kept, e)
		}
	}
	l[p] = kept
}

func specs(name string) (pipeline.DatasetSpec, bool) {
	return pipeline.DatasetSpec{Repository: "lake", Target: "main"}, name == "billing"
}

func record(t *testing.T, mut func(*pipeline.Run)) (string, []byte) {
	r := pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Branch: schemas.BranchName("billing", "b1"),
		Source: "main", Target: "main", State: pipeline.StatePublishing, SealedCommit: strings.Repeat("a", 64)}
	if mut != nil {
		mut(&r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return r.Key(), b
}

// Records lakewap sealed come back as they were written; records written
// by anyone else, altered ones, and those the config does not allow are set
// aside and counted by reason; lakewap's own are left where they are, the
// others deleted (TestJunkKeysAreDeletedFromTheChangelog).
func TestRecordsAreSealedAndChecked(t *testing.T) {
	inner, s, ctx := loadedStore(t)
	var err error
	key, good := record(t, nil)
	if err := s.Put(ctx, 0, key, good); err != nil {
		t.Fatal(err)
	}
	var run pipeline.Run
	if err := json.Unmarshal(inner.latest(0)[key], &run); err != nil || run.BatchID != "b1" {
		t.Fatalf("a sealed record is not a run record to its readers: %v", err)
	}
	sealed := func(mut func(*pipeline.Run)) []byte { // a record lakewap itself sealed
		k, v := record(t, mut)
		if err := s.Put(ctx, 0, k, v); err != nil {
			t.Fatal(err)
		}
		return inner.latest(0)[k]
	}
	altered := bytes.Replace(inner.latest(0)[key], []byte(`"publishing"`), []byte(`"published"`), 1)
	other := sealed(func(r *pipeline.Run) { r.BatchID = "b2"; r.Branch = schemas.BranchName("billing", "b2") })
	_, unsealed := record(t, func(r *pipeline.Run) { r.BatchID = "b3"; r.Branch = schemas.BranchName("billing", "b3") })
	must(t, inner.Put(ctx, 0, "billing/b4", altered))
	must(t, inner.Put(ctx, 0, "billing/b5", unsealed))
	must(t, inner.Put(ctx, 0, "billing/b6", other)) // moved under another key
	_ = sealed(func(r *pipeline.Run) { r.BatchID = "b7"; r.Branch = "main"; r.Target = "main" })
	_ = sealed(func(r *pipeline.Run) {
		r.BatchID = "b8"
		r.Branch = schemas.BranchName("billing", "b8")
		r.Repository = "other"
	})
	_ = sealed(func(r *pipeline.Run) {
		r.BatchID = "b9"
		r.Branch = schemas.BranchName("billing", "b9")
		r.Target = "release"
	})
	_ = sealed(func(r *pipeline.Run) {
		r.Dataset = "gone"
		r.BatchID = "b10"
		r.Branch = schemas.BranchName("gone", "b10")
	})
	got, err := s.Load(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[key], good) || got["billing/b2"] == nil {
		t.Errorf("restored %d records (%v), want b1 as written and b2", len(got), keys(got))
	}
	for reason, want := range map[string]float64{ReasonBadSeal: 2, ReasonUnsealed: 1, ReasonMismatch: 3, ReasonDataset: 1} {
		var m dto.Metric
		_ = s.setAside.WithLabelValues(reason).Write(&m)
		if n := m.GetCounter().GetValue(); n != want {
			t.Errorf("set aside for %s: %v, want %v", reason, n, want)
		}
	}
	runs := 0
	for k := range inner.latest(0) {
		if !IsMark(k) {
			runs++
		}
	}
	if runs != 6 {
		t.Errorf("the changelog holds %d run records, want the 6 lakewap sealed (b1, b2, and the 4 the config refuses) left for inspection, the 3 others deleted", runs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
