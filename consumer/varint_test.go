package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// kafkaRecord is one record's bytes as a producer may write them: its
// attributes, then fields as given, its length (canonical) before them.
func kafkaRecord(fields ...[]byte) []byte {
	body := append([]byte{0}, bytes.Join(fields, nil)...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// vi is v as a canonical zigzag varint.
func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

// javaRead is a record as Apache Kafka's Java client reads it (and its
// broker accepts it: DefaultRecord.readFrom, ByteUtils.readVarint and
// readVarlong).
type javaRead struct {
	offset     int64
	key, value []byte // nil: null
	headers    []kafkago.Header
	ms         int64
}

// varintCases are record batches (base offset 0, first timestamp 1000,
// two records) that Apache Kafka's broker accepts and its Java consumer
// reads, each with a field a canonical encoder would not write: a negative
// length other than -1 (read as null), a varint of more bytes than needed
// whose last byte carries bits past the field's width (an int32's fifth
// byte shifted by 28, a long's tenth by 63: the bits past the width are
// dropped).
func varintCases() []struct {
	name    string
	records []byte
	want    []javaRead
} {
	second := kafkaRecord(vi(1), vi(1), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
	secondRead := javaRead{offset: 1, key: []byte("k"), value: []byte("v"), ms: 1001}
	return []struct {
		name    string
		records []byte
		want    []javaRead
	}{
		{name: "key length -2",
			records: append(kafkaRecord(vi(0), vi(0), vi(-2), vi(1), []byte("v"), vi(0)), second...),
			want:    []javaRead{{offset: 0, value: []byte("v"), ms: 1000}, secondRead}},
		{name: "value length -7",
			records: append(kafkaRecord(vi(0), vi(0), vi(1), []byte("k"), vi(-7), vi(0)), second...),
			want:    []javaRead{{offset: 0, key: []byte("k"), ms: 1000}, secondRead}},
		{name: "header value length -2",
			records: append(kafkaRecord(vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("h"), vi(-2)), second...),
			want:    []javaRead{{offset: 0, headers: []kafkago.Header{{Key: "h"}}, ms: 1000}, secondRead}},
		{name: "key length 1 in five bytes, bit 32 set",
			records: append(kafkaRecord(vi(0), vi(0), []byte{0x82, 0x80, 0x80, 0x80, 0x10}, []byte("k"), vi(-1), vi(0)), second...),
			want:    []javaRead{{offset: 0, key: []byte("k"), ms: 1000}, secondRead}},
		{name: "offset delta 0 in five bytes, bits 32 to 34 set",
			records: append(kafkaRecord(vi(0), []byte{0x80, 0x80, 0x80, 0x80, 0x70}, vi(-1), vi(-1), vi(0)), second...),
			want:    []javaRead{{offset: 0, ms: 1000}, secondRead}},
		{name: "timestamp delta 3 in ten bytes, bits 64 to 69 set",
			records: append(kafkaRecord([]byte{0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7e}, vi(0), vi(-1), vi(-1), vi(0)), second...),
			want:    []javaRead{{offset: 0, ms: 1003}, secondRead}},
		{name: "header count 1 in five bytes, bit 33 set",
			records: append(kafkaRecord(vi(0), vi(0), vi(-1), vi(-1), []byte{0x82, 0x80, 0x80, 0x80, 0x20}, vi(1), []byte("h"), vi(1), []byte("x")), second...),
			want:    []javaRead{{offset: 0, headers: []kafkago.Header{{Key: "h", Value: []byte("x")}}, ms: 1000}, secondRead}},
	}
}

// A record a producer wrote with a length of -2 (or any below -1), or a
// varint of more bytes than needed, is one Apache Kafka's broker stores and
// its Java consumer reads (a negative length is null; an int32 varint
// keeps 32 bits of its five bytes, a long's 64 of ten): the fetch read the
// varints as Go's 64-bit ones and refused lengths below -1, so the record
// was an error, retried without end (the partition stalled behind one
// record any producer may write), or, an offset delta read past its
// batch's end, silently not handed out.
func TestRecordsAreReadAsKafkaReadsThem(t *testing.T) {
	for _, tt := range varintCases() {
		for _, codec := range []kafkago.Compression{0, kafkago.Gzip} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, codec), func(t *testing.T) {
				batch := rawBatch(t, 0, -1, int16(codec), 1, 2, tt.records)
				if dir := os.Getenv("DUMP_BATCHES"); dir != "" {
					os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.bin", tt.name, codec)), batch, 0o644)
				}
				out := make(chan []entry, 4)
				f := partitionFetch{topic: "in"}
				if err := passOn(context.Background(), &f, &fetchedPartition{lastStable: -1, records: batch}, out); err != nil {
					t.Fatal(err)
				}
				close(out)
				var got []javaRead
				for entries := range out {
					for _, e := range entries {
						if e.skip {
							got = append(got, javaRead{offset: e.msg.Offset, key: []byte("skipped")})
							continue
						}
						got = append(got, javaRead{offset: e.msg.Offset, key: e.msg.Key, value: e.msg.Value, headers: e.msg.Headers, ms: e.msg.Time.UnixMilli()})
					}
				}
				if !slices.EqualFunc(got, tt.want, sameRead) || f.offset != 2 {
					t.Errorf("read %+v, next %d; want %+v, next 2", got, f.offset, tt.want)
				}
			})
		}
	}
}

func sameRead(a, b javaRead) bool {
	sameBytes := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return a.offset == b.offset && a.ms == b.ms && sameBytes(a.key, b.key) && sameBytes(a.value, b.value) &&
		slices.EqualFunc(a.headers, b.headers, func(x, y kafkago.Header) bool { return x.Key == y.Key && sameBytes(x.Value, y.Value) })
}

// produceBatch writes batch (base offset 0, as a producer sends it) to
// partition 0 of k's input topic as it is, with a produce request of its
// own (the cluster's one broker leads it), and fails the test unless the
// broker accepts it.
func produceBatch(t *testing.T, k *kafkatest.Cluster, batch []byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.MaxVersions(kversion.V3_9_0())) // produce v12 at most: v13 names topics by id
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = k.Topic(inTopic)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := res.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("the broker refused the batch: %v", kerr.ErrorForCode(code))
	}
}

// The same records on the wire: written by a producer, accepted by the
// broker (Apache Kafka 4.4 as kfake), each read as the Java consumer reads
// it, and the partition goes on past them. Before, the first stalled the
// partition: the fetch failed on it without end.
func TestRecordsKafkaAcceptsDoNotStallThePartition(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	var want []javaRead
	var next int64
	for _, tt := range varintCases() {
		for _, codec := range []kafkago.Compression{0, kafkago.Gzip} {
			produceBatch(t, k, rawBatch(t, 0, -1, int16(codec), 1, 2, tt.records))
			for _, r := range tt.want {
				r.offset += next
				want = append(want, r)
			}
			next += 2
		}
	}
	produce(t, k, inTopic, 0, values("last")...)
	var mu sync.Mutex
	var got []javaRead
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m.Offset < next {
			r := javaRead{offset: m.Offset, key: m.Key, value: m.Value, ms: m.Time.UnixMilli()}
			for _, h := range m.Headers {
				r.headers = append(r.headers, kafkago.Header{Key: h.Key, Value: h.Value})
			}
			got = append(got, r)
		}
		return nil
	}
	startConsumer(t, testConfig(k, "varints"), rec)
	eventually(t, "the record after them handled", func() bool { return slices.Contains(handledValues(rec, 0), "last") })
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(got, want, sameRead) {
		t.Errorf("handled\n%+v\nwant\n%+v", got, want)
	}
}

// longLength is the record of fields after its attributes, its length
// written in five bytes, the fifth carrying bit 32, which Kafka drops.
func longLength(fields ...[]byte) []byte {
	body := append([]byte{0}, bytes.Join(fields, nil)...)
	z := uint32(len(body)) << 1 // zigzag of a length below 2^27
	return append([]byte{byte(z) | 0x80, byte(z>>7) | 0x80, byte(z>>14) | 0x80, byte(z>>21) | 0x80, 0x10}, body...)
}

// A compressed batch's records are also read by kafka.DecompressRecords,
// which replaces a record over kafka.MaxDecompressedRecordBytes, or a
// batch over kafka.MaxDecompressedBatchBytes, by a record that the
// consumer dead-letters: written with a record length in five bytes (bit
// 32 set, which Kafka drops), the record of 3 MiB reached the handler
// whole, not read by the bound, and the batch of 80 MiB was a fetch error
// retried without end (its records "not records" to Go's varints): the
// partition stalled.
func TestOversizedRecordsOfLongVarintsAreDeadLettered(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	small := func(delta int64, v string) []byte {
		return kafkaRecord(vi(0), vi(delta), vi(-1), vi(int64(len(v))), []byte(v), vi(0))
	}
	large := func(delta int64, n int) []byte {
		return longLength(vi(0), vi(delta), vi(-1), vi(int64(n)), make([]byte, n), vi(0))
	}
	produceBatch(t, k, rawBatch(t, 0, -1, int16(kafkago.Zstd), 1, 2, append(small(0, "small"), large(1, 3<<20)...)))
	produceBatch(t, k, rawBatch(t, 0, -1, int16(kafkago.Zstd), 1, 2, append(small(0, "lost"), large(1, 80<<20)...)))
	produce(t, k, inTopic, 0, values("last")...)
	rec := newRecorder()
	var mu sync.Mutex
	largest := 0
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		largest = max(largest, len(m.Value))
		return nil
	}
	startConsumer(t, testConfig(k, "longvarints"), rec)
	eventually(t, "the record after them handled", func() bool { return slices.Contains(handledValues(rec, 0), "last") })
	if got, want := handledValues(rec, 0), []string{"small", "last"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	mu.Lock()
	if largest > kafka.MaxDecompressedRecordBytes {
		t.Errorf("a handler was given a value of %d bytes, over kafka.MaxDecompressedRecordBytes", largest)
	}
	mu.Unlock()
	var reasons []string
	for _, d := range readPartition(t, k, dlqTopic, 0) {
		r, _ := header(d, HeaderDLQReason)
		o, _ := header(d, HeaderDLQOffset)
		reasons = append(reasons, r+"@"+o)
	}
	if want := []string{ReasonRecordTooLarge + "@1", ReasonBatchTooLarge + "@2"}; !slices.Equal(reasons, want) {
		t.Errorf("dead letters %q, want %q", reasons, want)
	}
}

// A zstd batch declaring the largest window Apache Kafka takes (128 MiB;
// 4.4 refuses a larger one) is read: the consumer's decoder, which no
// longer allocates the window up front, takes that window too.
func TestZstdBatchOfKafkasLargestWindowIsRead(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	rec := kafkaRecord(vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(0))
	frame := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, (27 - 10) << 3} // window 2^27
	h := len(rec)<<3 | 1                                          // one raw block, the last
	frame = append(append(frame, byte(h), byte(h>>8), byte(h>>16)), rec...)
	batch := rawBatch(t, 0, -1, 0, 0, 1, frame)
	binary.BigEndian.PutUint16(batch[21:], uint16(kafkago.Zstd)) // the attributes: records compressed as they are
	fixChecksums(batch)
	produceBatch(t, k, batch)
	produce(t, k, inTopic, 0, values("last")...)
	rec2 := newRecorder()
	startConsumer(t, testConfig(k, "zstdwindow"), rec2)
	eventually(t, "the record after it handled", func() bool { return slices.Contains(handledValues(rec2, 0), "last") })
	if got, want := handledValues(rec2, 0), []string{"v", "last"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
}
