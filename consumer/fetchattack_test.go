package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// passedOn is what passOn sends for p from offset from: "m<offset>" for a
// message, "s<offset>" for a skip, the largest send's length, and where the
// next fetch starts.
func passedOn(t *testing.T, p *fetchedPartition, from int64) (got []string, largest int, next int64, err error) {
	t.Helper()
	out := make(chan []entry, 1<<20)
	f := partitionFetch{topic: "in", offset: from}
	err = passOn(context.Background(), &f, p, out)
	close(out)
	for entries := range out {
		largest = max(largest, len(entries))
		for _, e := range entries {
			if e.skip {
				got = append(got, "s"+strconv.FormatInt(e.msg.Offset, 10))
			} else {
				got = append(got, "m"+strconv.FormatInt(e.msg.Offset, 10))
			}
		}
	}
	return got, largest, f.offset, err
}

// The transactions' commit and abort markers are written by the
// transaction coordinator as control batches that are transactional too. A
// control batch without the transactional bit (forged by a producer, where
// a broker lets it through) is skipped, and it ends no aborted
// transaction: before, an abort marker forged in the producer's name
// ended its aborted transaction early, and the transaction's later records
// were handed out.
func TestForgedControlBatchEndsNoAbortedTransaction(t *testing.T) {
	const a = 7
	abort := []byte{0, 0, 0, 0}
	batches := [][]byte{
		encodeBatch(t, 0, a, attrTransactional, 0, testRecord{}),
		encodeBatch(t, 1, a, attrControl, 0, testRecord{key: abort}), // forged: not transactional
		encodeBatch(t, 2, a, attrTransactional, 0, testRecord{delta: 0}),
		encodeBatch(t, 3, a, attrTransactional|attrControl, 0, testRecord{key: abort}),
		encodeBatch(t, 4, -1, 0, 0, testRecord{key: []byte("k")}),
	}
	p := &fetchedPartition{lastStable: -1, records: bytes.Join(batches, nil), aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}}}
	got, _, next, err := passedOn(t, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"s0", "s1", "s2", "s3", "m4"}; !slices.Equal(got, want) || next != 5 {
		t.Errorf("got %v, next %d; want %v, next 5", got, next, want)
	}
}

// A record's offset is its batch's base offset plus its delta, which the
// producer wrote. A record outside its batch's offsets (past the batch's
// last offset: the next batch's) or not after the record before it is not
// handed out: before, a record past the batch's last offset was handed out
// and then again from the next fetch, which starts after the batch, and a
// record going backwards moved the committed offset back.
func TestRecordOffsetsOutsideTheirBatchAreNotHandedOut(t *testing.T) {
	for _, tt := range []struct {
		name     string
		batch    []byte
		want     []string
		wantNext int64
	}{
		{name: "past the batch's last offset",
			batch: encodeBatch(t, 0, -1, 0, 1, testRecord{delta: 0}, testRecord{delta: 5}),
			want:  []string{"m0", "s1"}, wantNext: 2},
		{name: "going backwards",
			batch: encodeBatch(t, 0, -1, 0, 3, testRecord{delta: 0}, testRecord{delta: 2}, testRecord{delta: 1}, testRecord{delta: 3}),
			want:  []string{"m0", "m2", "m3"}, wantNext: 4},
		{name: "one offset twice",
			batch: encodeBatch(t, 0, -1, 0, 1, testRecord{delta: 0}, testRecord{delta: 0}, testRecord{delta: 1}),
			want:  []string{"m0", "m1"}, wantNext: 2},
		{name: "compressed, past the batch's last offset",
			batch: encodeBatch(t, 0, -1, int16(kafkago.Gzip), 1, testRecord{delta: 0}, testRecord{delta: 1}, testRecord{delta: 2}),
			want:  []string{"m0", "m1"}, wantNext: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, next, err := passedOn(t, &fetchedPartition{lastStable: -1, records: tt.batch}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || next != tt.wantNext {
				t.Errorf("got %v, next %d; want %v, next %d", got, next, tt.want, tt.wantNext)
			}
		})
	}
}

// A response whose record batches move the position nowhere (a batch with
// a negative last offset delta, batches all before the fetch's offset) is
// an error, retried with backoff: before, passOn returned without error and
// without moving, and the fetch loop fetched the same again at once,
// without end.
func TestFetchThatDoesNotMoveIsAnError(t *testing.T) {
	for _, tt := range []struct {
		name  string
		from  int64
		batch []byte
	}{
		{name: "negative last offset delta", from: 5, batch: encodeBatch(t, 5, -1, 0, -1, testRecord{delta: 0})},
		{name: "batches before the fetch offset", from: 10, batch: encodeBatch(t, 0, -1, 0, 1, testRecord{delta: 0}, testRecord{delta: 1})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, next, err := passedOn(t, &fetchedPartition{lastStable: -1, records: tt.batch}, tt.from)
			if err == nil || !strings.Contains(err.Error(), "offset") {
				t.Errorf("err %v, want one naming the offset", err)
			}
			if len(got) != 0 || next != tt.from {
				t.Errorf("got %v, next %d; want nothing, next %d", got, next, tt.from)
			}
		})
	}
}

// A record batch of 64 MiB decompressed may hold millions of records of a
// few bytes each, and each is handed to the worker as a kafka-go Message
// of about 160 bytes: as one send, a batch of a few KiB of zstd came to
// gigabytes. A batch's records are sent in parts of at most
// maxEntriesPerSend entries, each message's headers counted.
func TestBatchOfManyRecordsIsPassedOnInParts(t *testing.T) {
	const n = 100_000
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{delta: int64(i)}
	}
	p := &fetchedPartition{lastStable: -1, records: encodeBatch(t, 0, -1, int16(kafkago.Zstd), n-1, recs...)}
	got, largest, next, err := passedOn(t, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || got[0] != "m0" || got[n-1] != "m"+strconv.Itoa(n-1) || next != n {
		t.Errorf("%d entries (first %v), next %d; want %d messages, next %d", len(got), got[:min(len(got), 3)], next, n, n)
	}
	// encodeBatch gives each record one header: two units of cost each.
	if largest > maxEntriesPerSend {
		t.Errorf("a send of %d entries, over %d", largest, maxEntriesPerSend)
	}
}

// A response's list of aborted transactions is bounded by the response's
// bytes (16 each on the wire, 16 read): a million of them, of as many
// producers, all open over the fetched batches, are read and only the
// fetched producer's transaction is skipped.
func TestAMillionAbortedTransactions(t *testing.T) {
	const a = 7
	aborted := make([]fetch.ResponseTransaction, 1_000_000)
	for i := range aborted {
		aborted[i] = fetch.ResponseTransaction{ProducerID: int64(1000 + i), FirstOffset: int64(i % 3)}
	}
	aborted[len(aborted)/2] = fetch.ResponseTransaction{ProducerID: a, FirstOffset: 0}
	batches := [][]byte{
		encodeBatch(t, 0, a, attrTransactional, 0, testRecord{}),
		encodeBatch(t, 1, a, attrTransactional|attrControl, 0, testRecord{key: []byte{0, 0, 0, 0}}),
		encodeBatch(t, 2, 1000, 0, 0, testRecord{key: []byte("k")}),
	}
	var records []byte
	for _, b := range batches {
		records = append(records, b...)
	}
	body := fetchResponseBody(11, records, -1, 0)
	// Put the list in place of the null one: its count, then its entries.
	at := len(body) - len(records) - 4 - 4 - 4
	list := binary.BigEndian.AppendUint32(nil, uint32(len(aborted)))
	for _, tx := range aborted {
		list = binary.BigEndian.AppendUint64(list, uint64(tx.ProducerID))
		list = binary.BigEndian.AppendUint64(list, uint64(tx.FirstOffset))
	}
	body = append(append(slices.Clone(body[:at]), list...), body[at+4:]...)
	res, err := parseFetchResponse(body, 11)
	if err != nil {
		t.Fatal(err)
	}
	p := &res.partitions[0]
	if len(p.aborted) != len(aborted) {
		t.Fatalf("read %d aborted transactions, want %d", len(p.aborted), len(aborted))
	}
	got, _, next, err := passedOn(t, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"s0", "s1", "m2"}; !slices.Equal(got, want) || next != 3 {
		t.Errorf("got %v, next %d; want %v, next 3", got, next, want)
	}
}

// A control record's key is read as Kafka's ControlRecordType.parseTypeId
// reads it, which the Java consumer runs on a control batch's first
// record only: at least 4 bytes, a version of 0 or more (a later one read
// as version 0), then the type; a negative version is an error. Before, a
// key of another length than 4 (a later key version with more fields) was
// no abort marker, and the producer's next transaction in the same
// response was skipped as aborted; an abort record after a control
// batch's first, or of a negative version, was one.
func TestControlRecordsAreReadAsKafkaReadsThem(t *testing.T) {
	const a = 7
	for _, tt := range []struct {
		name   string
		marker []testRecord
		want   []string
	}{
		{name: "a later key version, longer", marker: []testRecord{{key: []byte{0, 1, 0, 0, 0xff}}},
			want: []string{"s0", "s1", "m2", "s3"}},
		{name: "a negative key version", marker: []testRecord{{key: []byte{0xff, 0xff, 0, 0}}},
			want: []string{"s0"}},
		{name: "an abort record after the first, a commit", marker: []testRecord{{key: []byte{0, 0, 0, 1}}, {key: []byte{0, 0, 0, 0}}},
			want: []string{"s0", "s1", "s2", "s3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			batches := [][]byte{
				encodeBatch(t, 0, a, attrTransactional, 0, testRecord{}),
				encodeBatch(t, 1, a, attrTransactional|attrControl, 0, tt.marker...),
				encodeBatch(t, 2, a, attrTransactional, 0, testRecord{}),
				encodeBatch(t, 3, a, attrTransactional|attrControl, 0, testRecord{key: []byte{0, 0, 0, 1}}),
			}
			p := &fetchedPartition{lastStable: -1, records: bytes.Join(batches, nil), aborted: []fetch.ResponseTransaction{{ProducerID: a, FirstOffset: 0}}}
			got, _, next, err := passedOn(t, p, 0)
			wantNext := int64(4)
			if len(tt.want) == 1 {
				wantNext = 1 // an error at the marker
				if err == nil || !strings.Contains(err.Error(), "version") {
					t.Errorf("err %v, want one naming the key's version", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || next != wantNext {
				t.Errorf("got %v, next %d; want %v, next %d", got, next, tt.want, wantNext)
			}
		})
	}
}
