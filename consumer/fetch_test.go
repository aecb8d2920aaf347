package consumer

import (
	"encoding/binary"
	"slices"
	"strconv"
	"testing"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// batch is a record batch of producer pid (transactional when txn) whose
// records have the given offsets and the offset as value.
func batch(pid int64, txn bool, offsets ...int64) protocol.RecordReader {
	records := make([]protocol.Record, len(offsets))
	for i, off := range offsets {
		records[i] = protocol.Record{Offset: off, Value: protocol.NewBytes([]byte{byte(off)})}
	}
	b := &protocol.RecordBatch{ProducerID: pid, Records: protocol.NewRecordReader(records...)}
	if len(offsets) > 0 {
		b.BaseOffset = offsets[0]
	}
	if txn {
		b.Attributes = protocol.Transactional
	}
	return b
}

// marker is producer pid's transaction marker at offset: its abort marker,
// or with commit its commit marker.
func marker(pid int64, offset int64, commit bool) protocol.RecordReader {
	key := make([]byte, 4)
	if commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	return &protocol.ControlBatch{Attributes: protocol.Transactional | protocol.Control, BaseOffset: offset, ProducerID: pid,
		Records: protocol.NewRecordReader(protocol.Record{Offset: offset, Key: protocol.NewBytes(key), Value: protocol.NewBytes([]byte{0, 0, 0, 0, 0, 0})})}
}

// TestCommittedRecords reads fetch responses the way a read-committed
// Java consumer does: what is handed out, what is skipped (the last
// offset of each run of skipped ones, before the next message), and the
// next fetch offset.
func TestCommittedRecords(t *testing.T) {
	const a, b = 7, 8 // producer ids
	tests := []struct {
		name     string
		from     int64
		batches  []protocol.RecordReader
		aborted  []fetch.ResponseTransaction
		want     []string // "m<offset>" handed out, "s<offset>" skipped through
		wantNext int64
	}{
		{name: "plain records", from: 0, batches: []protocol.RecordReader{batch(-1, false, 0, 1), batch(-1, false, 2)},
			want: []string{"m0", "m1", "m2"}, wantNext: 3},
		{name: "committed transaction: the marker is skipped", from: 0,
			batches: []protocol.RecordReader{batch(a, true, 0, 1), marker(a, 2, true)},
			want:    []string{"m0", "m1", "s2"}, wantNext: 3},
		{name: "aborted transaction", from: 0,
			batches: []protocol.RecordReader{batch(-1, false, 0), batch(a, true, 1, 2), marker(a, 3, false), batch(-1, false, 4)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 1}},
			want:    []string{"m0", "s3", "m4"}, wantNext: 5},
		{name: "interleaved: one aborts, one commits", from: 0,
			batches: []protocol.RecordReader{batch(a, true, 0), batch(b, true, 1), batch(a, true, 2), marker(a, 3, false),
				batch(b, true, 4), marker(b, 5, true)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "m1", "s3", "m4", "s5"}, wantNext: 6},
		{name: "the producer's next transaction after its abort marker is not aborted", from: 0,
			batches: []protocol.RecordReader{batch(a, true, 0), marker(a, 1, false), batch(a, true, 2), marker(a, 3, true)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s1", "m2", "s3"}, wantNext: 4},
		{name: "aborted transactions listed out of order", from: 0,
			batches: []protocol.RecordReader{batch(b, true, 0), batch(a, true, 1), marker(b, 2, false), marker(a, 3, false), batch(-1, false, 4)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 1}, {ProducerID: b, FirstOffset: 0}},
			want:    []string{"s3", "m4"}, wantNext: 5},
		{name: "a non-transactional batch of an aborting producer id is handed out", from: 0,
			batches: []protocol.RecordReader{batch(a, true, 0), batch(a, false, 1), marker(a, 2, false)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "m1", "s2"}, wantNext: 3},
		{name: "records before the fetch offset are neither handed out nor skipped", from: 2,
			batches: []protocol.RecordReader{batch(-1, false, 0, 1, 2, 3)},
			want:    []string{"m2", "m3"}, wantNext: 4},
		{name: "fetched from inside an aborted transaction", from: 2,
			batches: []protocol.RecordReader{batch(a, true, 1, 2), marker(a, 3, false), batch(-1, false, 4)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 1}},
			want:    []string{"s3", "m4"}, wantNext: 5},
		{name: "only an aborted transaction: the position still moves", from: 10,
			batches: []protocol.RecordReader{batch(a, true, 10, 11), marker(a, 12, false)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 10}},
			want:    []string{"s12"}, wantNext: 13},
		{name: "an empty batch (compacted) at the end: one offset on", from: 5,
			batches: []protocol.RecordReader{batch(-1, false)},
			want:    nil, wantNext: 6},
		{name: "no records", from: 5, want: nil, wantNext: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fetch.ResponsePartition{AbortedTransactions: tt.aborted}
			if tt.batches != nil {
				p.RecordSet.Records = &protocol.RecordStream{Records: tt.batches}
			}
			entries, next, err := committedRecords("in", 0, p, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				kind := "m"
				if e.skip {
					kind = "s"
				} else if len(e.msg.Value) != 1 || int64(e.msg.Value[0]) != e.msg.Offset {
					t.Errorf("message at offset %d has value %v", e.msg.Offset, e.msg.Value)
				}
				got = append(got, kind+itoa(e.msg.Offset))
			}
			if !slices.Equal(got, tt.want) || next != tt.wantNext {
				t.Errorf("got %v, next %d; want %v, next %d", got, next, tt.want, tt.wantNext)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
