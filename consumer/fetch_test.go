package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// testRecord is a record of a batch written by encodeBatch: at the batch's
// base offset plus delta, its value the offset as text.
type testRecord struct {
	delta int64
	key   []byte
}

func appendField(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

// encodeBatch is a record batch (magic 2) as a broker stores it.
func encodeBatch(t testing.TB, base, pid int64, attrs int16, lastDelta int32, recs ...testRecord) []byte {
	t.Helper()
	var records []byte
	for _, r := range recs {
		body := []byte{0}
		body = binary.AppendVarint(body, r.delta) // timestamp delta: the offset delta, in ms
		body = binary.AppendVarint(body, r.delta)
		body = appendField(body, r.key)
		body = appendField(body, []byte(strconv.FormatInt(base+r.delta, 10)))
		body = binary.AppendVarint(body, 1)
		body = appendField(body, []byte("h"))
		body = appendField(body, []byte("v"))
		records = append(binary.AppendVarint(records, int64(len(body))), body...)
	}
	return rawBatch(t, base, pid, attrs, lastDelta, int32(len(recs)), records)
}

// rawBatch is a record batch (magic 2) holding records, count of them, as
// written (its bytes compressed here as attrs say).
func rawBatch(t testing.TB, base, pid int64, attrs int16, lastDelta, count int32, records []byte) []byte {
	t.Helper()
	if codec := kafkago.Compression(attrs & attrCompression); codec != 0 {
		var buf bytes.Buffer
		w := codec.Codec().NewWriter(&buf)
		if _, err := w.Write(records); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		records = buf.Bytes()
	}
	tail := binary.BigEndian.AppendUint16(nil, uint16(attrs))
	tail = binary.BigEndian.AppendUint32(tail, uint32(lastDelta))
	tail = binary.BigEndian.AppendUint64(tail, 1000) // first timestamp
	tail = binary.BigEndian.AppendUint64(tail, 5000) // max timestamp
	tail = binary.BigEndian.AppendUint64(tail, uint64(pid))
	tail = binary.BigEndian.AppendUint16(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, uint32(count))
	tail = append(tail, records...)
	b := binary.BigEndian.AppendUint64(nil, uint64(base))
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(tail)))
	b = binary.BigEndian.AppendUint32(b, 0) // leader epoch
	b = append(b, 2)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, tail...)
}

// TestReadCommitted reads fetch responses the way a read-committed Java
// consumer does: what is handed out ("m<offset>"), what is skipped (the
// last offset of each skipped batch, "s<offset>"), and where the next
// fetch starts.
func TestReadCommitted(t *testing.T) {
	const a, b, none = 7, 8, -1 // producer ids
	const txn, ctl = attrTransactional, attrTransactional | attrControl
	plain := func(base int64, n int) []byte {
		var recs []testRecord
		for i := range n {
			recs = append(recs, testRecord{delta: int64(i), key: []byte("k")})
		}
		return encodeBatch(t, base, none, 0, int32(n-1), recs...)
	}
	data := func(pid, base int64, n int) []byte {
		var recs []testRecord
		for i := range n {
			recs = append(recs, testRecord{delta: int64(i)})
		}
		return encodeBatch(t, base, pid, txn, int32(n-1), recs...)
	}
	marker := func(pid, offset int64, commit bool) []byte {
		key := []byte{0, 0, 0, 0}
		if commit {
			key[3] = 1
		}
		return encodeBatch(t, offset, pid, ctl, 0, testRecord{key: key})
	}
	tests := []struct {
		name     string
		from     int64
		batches  [][]byte
		aborted  []fetch.ResponseTransaction
		want     []string
		wantNext int64
	}{
		{name: "plain records", batches: [][]byte{plain(0, 2), plain(2, 1)},
			want: []string{"m0", "m1", "m2"}, wantNext: 3},
		{name: "committed transaction: its marker is skipped",
			batches: [][]byte{data(a, 0, 2), marker(a, 2, true)},
			want:    []string{"m0", "m1", "s2"}, wantNext: 3},
		{name: "aborted transaction",
			batches: [][]byte{plain(0, 1), data(a, 1, 2), marker(a, 3, false), plain(4, 1)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 1}},
			want:    []string{"m0", "s2", "s3", "m4"}, wantNext: 5},
		{name: "interleaved: one aborts, one commits",
			batches: [][]byte{data(a, 0, 1), data(b, 1, 1), data(a, 2, 1), marker(a, 3, false), data(b, 4, 1), marker(b, 5, true)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "m1", "s2", "s3", "m4", "s5"}, wantNext: 6},
		{name: "the producer's next transaction after its abort marker is not aborted",
			batches: [][]byte{data(a, 0, 1), marker(a, 1, false), data(a, 2, 1), marker(a, 3, true)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "s1", "m2", "s3"}, wantNext: 4},
		{name: "two aborted transactions of one producer",
			batches: [][]byte{data(a, 0, 1), marker(a, 1, false), data(a, 2, 1), marker(a, 3, false), plain(4, 1)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 2}, {ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "s1", "s2", "s3", "m4"}, wantNext: 5},
		{name: "a non-transactional batch of an aborting producer id is handed out",
			batches: [][]byte{data(a, 0, 1), plain(1, 1), marker(a, 2, false)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}},
			want:    []string{"s0", "m1", "s2"}, wantNext: 3},
		{name: "records before the fetch offset are neither handed out nor skipped", from: 2,
			batches: [][]byte{plain(0, 4)},
			want:    []string{"m2", "m3"}, wantNext: 4},
		{name: "fetched from inside an aborted transaction", from: 2,
			batches: [][]byte{data(a, 1, 2), marker(a, 3, false), plain(4, 1)},
			aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 1}},
			want:    []string{"s2", "s3", "m4"}, wantNext: 5},
		{name: "records compacted away at a batch's end: the position moves to its end",
			batches: [][]byte{encodeBatch(t, 0, none, 0, 5, testRecord{delta: 0}, testRecord{delta: 2})},
			want:    []string{"m0", "m2", "s5"}, wantNext: 6},
		{name: "an empty batch (compacted)", from: 5,
			batches: [][]byte{encodeBatch(t, 5, none, 0, 3)},
			want:    []string{"s8"}, wantNext: 9},
		{name: "a compressed batch", batches: [][]byte{encodeBatch(t, 0, none, int16(kafkago.Gzip), 1, testRecord{delta: 0}, testRecord{delta: 1})},
			want: []string{"m0", "m1"}, wantNext: 2},
		{name: "a batch cut off at the end of the response waits for the next fetch",
			batches: [][]byte{plain(0, 1), plain(1, 1)[:30]},
			want:    []string{"m0"}, wantNext: 1},
		{name: "no records", from: 5, want: nil, wantNext: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fetchedPartition{lastStable: -1, aborted: tt.aborted, records: bytes.Join(tt.batches, nil), highWater: 99}
			out := make(chan []entry, len(tt.batches))
			f := partitionFetch{topic: "in", offset: tt.from}
			if err := passOn(context.Background(), &f, p, out); err != nil {
				t.Fatal(err)
			}
			close(out)
			var got []string
			for entries := range out {
				for _, e := range entries {
					if e.skip {
						got = append(got, "s"+strconv.FormatInt(e.msg.Offset, 10))
						continue
					}
					m := e.msg
					if string(m.Value) != strconv.FormatInt(m.Offset, 10) || m.HighWaterMark != 99 || len(m.Headers) != 1 || m.Headers[0].Key != "h" {
						t.Errorf("message at offset %d: value %q, high watermark %d, headers %v", m.Offset, m.Value, m.HighWaterMark, m.Headers)
					}
					got = append(got, "m"+strconv.FormatInt(m.Offset, 10))
				}
			}
			if !slices.Equal(got, tt.want) || f.offset != tt.wantNext {
				t.Errorf("got %v, next %d; want %v, next %d", got, f.offset, tt.want, tt.wantNext)
			}
		})
	}
}

// A batch whose bytes do not match its checksum, or in a format before
// magic 2, is an error naming its offset: the partition waits.
func TestUnreadableBatchIsAnError(t *testing.T) {
	good := encodeBatch(t, 3, -1, 0, 0, testRecord{})
	bad := slices.Clone(good)
	bad[len(bad)-1] ^= 1
	old := slices.Clone(good)
	old[16] = 1
	for name, data := range map[string][]byte{"checksum": bad, "magic": old} {
		f := partitionFetch{topic: "in", offset: 3}
		err := passOn(context.Background(), &f, &fetchedPartition{lastStable: -1, records: data}, make(chan []entry, 1))
		if err == nil || !strings.Contains(err.Error(), "record batch at offset 3") {
			t.Errorf("%s: err %v, want one naming the batch at offset 3", name, err)
		}
		if f.offset != 3 {
			t.Errorf("%s: next offset %d, want 3", name, f.offset)
		}
	}
}

// A record's time is its batch's first timestamp plus its delta, or, in a
// topic with message.timestamp.type=LogAppendTime, the batch's max
// timestamp: the broker's time, as the Java consumer reads it.
func TestRecordTimes(t *testing.T) {
	for _, tt := range []struct {
		attrs int16
		want  []int64 // ms
	}{{0, []int64{1000, 1002}}, {attrLogAppendTime, []int64{5000, 5000}}} {
		p := &fetchedPartition{lastStable: -1, records: encodeBatch(t, 0, -1, tt.attrs, 2, testRecord{delta: 0}, testRecord{delta: 2})}
		out := make(chan []entry, 1)
		f := partitionFetch{topic: "in"}
		if err := passOn(context.Background(), &f, p, out); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range <-out {
			got = append(got, e.msg.Time.UnixMilli())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("attributes %#x: times %v, want %v", tt.attrs, got, tt.want)
		}
	}
}
