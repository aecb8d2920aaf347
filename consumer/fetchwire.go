package consumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/lakewap/lakewap/kafka"
)

// The fetch's wire format, read by lakewap: kafka-go's own decoder of a
// fetch response decompresses every record batch of the response before it
// returns, which would hold up to MaxFetchBytes / (a few KB a batch) times
// kafka.MaxDecompressedBatchBytes in memory at once, and it does not keep a
// batch's last offset. Here a response is kept as it came (compressed), and
// each batch is decompressed only when its records are handed out, one at a
// time. The request is kafka-go's, written on the transport's connection
// (TLS, SASL, the partition leader's).

// fetchResponseSlack is how far a fetch response may exceed its request's
// bound: the broker returns the first record batch whole even when it is
// larger (up to the topic's max.message.bytes).
const fetchResponseSlack = 64 << 20

// Fetch response versions read here: 4 has the isolation level, the last
// stable offset and the aborted transactions; 12 is the first of the
// flexible encoding.
const (
	minFetchVersion = 4
	maxFetchVersion = 11
)

// correlationIDs numbers the fetch requests sent on the transport's
// connections; each waits for its own answer.
var correlationIDs atomic.Int32

// fetchExchange is a fetch request that writes itself to the connection and
// reads its response raw (kafka-go's RawExchanger), into a fetchResponse.
type fetchExchange struct {
	*fetch.Request
	version  int16
	maxBytes int // bound of the response's size
	// ctx and budget: a response's body waits for its bytes of budget
	// (all of it when larger), until ctx ends; waiting and roomTaken, if
	// set, are told when it starts waiting and when it has the room.
	ctx       context.Context
	budget    *byteBudget
	waiting   func()
	roomTaken func()
	// mu guards the bytes of budget the response holds, which the
	// exchange hands to its caller, unless the caller gave up on it first
	// (kafka-go then drops the response): taken is set by claim.
	mu    sync.Mutex
	held  int64
	taken bool
}

// claim returns the bytes of budget the response holds, now the caller's
// to free; an exchange still running after it frees its own.
func (x *fetchExchange) claim() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	held := x.held
	x.held = 0
	x.taken = true
	return held
}

// hold records n bytes of budget the response holds for the caller to
// claim; false (n freed) when the caller gave up on the exchange.
func (x *fetchExchange) hold(n int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.taken {
		x.budget.free(n)
		return false
	}
	x.held += n
	return true
}

// Required records the connection's fetch version; the exchange is always
// raw.
func (x *fetchExchange) Required(versions map[protocol.ApiKey]int16) bool {
	x.version = versions[protocol.Fetch]
	return true
}

// RawExchange writes the request and reads its response. An error closes
// the connection (kafka-go's transport drops a connection whose round trip
// failed), so a response left half read does not confuse the next one.
func (x *fetchExchange) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if x.version < minFetchVersion {
		return nil, fmt.Errorf("the broker speaks fetch v%d; read-committed fetches need v%d or later (Kafka 0.11+)", x.version, minFetchVersion)
	}
	conn, _ := rw.(deadliner)
	deadline(conn, fetchMaxWait+fetchIOTimeout) // the request, and the broker's wait for records
	defer deadline(conn, 0)
	version := min(x.version, maxFetchVersion)
	id := correlationIDs.Add(1)
	if err := protocol.WriteRequest(rw, version, id, "lakewap", x.Request); err != nil {
		return nil, fmt.Errorf("writing the fetch request: %w", err)
	}
	var head [8]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return nil, fmt.Errorf("reading the fetch response: %w", err)
	}
	size := int64(int32(binary.BigEndian.Uint32(head[:4]))) - 4
	if got := int32(binary.BigEndian.Uint32(head[4:])); got != id {
		return nil, fmt.Errorf("fetch response for request %d, want %d", got, id)
	}
	if size < 0 || size > int64(x.maxBytes) {
		return nil, fmt.Errorf("fetch response of %d bytes: over the %d bytes its request allows (MaxFetchBytes, plus 64 MiB for a first record batch larger than it)", size, x.maxBytes)
	}
	if x.budget != nil {
		n := min(size, x.budget.size)
		if err := x.budget.reserve(x.ctx, n, x.waiting); err != nil {
			return nil, fmt.Errorf("waiting for room for a fetch response of %d bytes (%d held over the partitions at most): %w", size, x.budget.size, err)
		}
		if !x.hold(n) {
			return nil, errors.New("fetch response given up on")
		}
		deadline(conn, fetchIOTimeout) // the body, once there is room for it
		if x.roomTaken != nil {
			x.roomTaken()
		}
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(rw, body); err != nil {
		return nil, fmt.Errorf("reading the fetch response: %w", err)
	}
	return parseFetchResponse(body, version)
}

// fetchIOTimeout bounds a fetch's writing and reading on its connection,
// besides the broker's wait for records (fetchMaxWait). A response's wait
// for room (fetchExchange.budget) is not bounded by it: one that waited
// past a deadline of the whole fetch failed, and the partition asked the
// broker for the same bytes again for as long as the room stayed taken.
const fetchIOTimeout = 10 * time.Second

// deadliner is the transport's connection, whose deadline the exchange sets.
type deadliner interface{ SetDeadline(time.Time) error }

// deadline sets conn's deadline d from now (0: none).
func deadline(conn deadliner, d time.Duration) {
	if conn == nil {
		return
	}
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	_ = conn.SetDeadline(t) // a failure shows as the read's or write's
}

// fetchResponse is the part of a fetch response the consumer reads.
type fetchResponse struct {
	// throttle is how long the broker, over a quota, mutes the connection
	// after this response (KIP-219): the client sends it nothing meanwhile.
	throttle   time.Duration
	errorCode  int16
	partitions []fetchedPartition
}

// ApiKey makes a fetchResponse a kafka-go protocol message.
func (*fetchResponse) ApiKey() protocol.ApiKey { return protocol.Fetch }

// fetchedPartition is one partition of a fetch response, its record
// batches as they came.
type fetchedPartition struct {
	topic     string
	partition int32
	errorCode int16
	highWater int64
	// lastStable is the last stable offset: a read-committed response's
	// records are below it (-1: not known).
	lastStable int64
	aborted    []fetch.ResponseTransaction
	records    []byte
	held       int64 // bytes of the consumer's fetchedBytes the response holds
}

// wire reads the big-endian fields of a response, remembering the first
// error (it reads nothing more after one).
type wire struct {
	b   []byte
	err error
}

func (w *wire) take(n int) []byte {
	if w.err != nil {
		return nil
	}
	if n < 0 || n > len(w.b) {
		w.err = fmt.Errorf("fetch response cut short: %d bytes wanted, %d left", n, len(w.b))
		return nil
	}
	out := w.b[:n]
	w.b = w.b[n:]
	return out
}

func (w *wire) int16() int16 {
	if b := w.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (w *wire) int32() int32 {
	if b := w.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (w *wire) int64() int64 {
	if b := w.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// count is an array's length: -1 (null) is none; a count that the bytes
// left cannot hold (each element at least min bytes) is an error.
func (w *wire) count(min int) int {
	n := int(w.int32())
	if n < 0 {
		return 0
	}
	if w.err == nil && n*min > len(w.b) {
		w.err = fmt.Errorf("fetch response cut short: %d elements of at least %d bytes in %d", n, min, len(w.b))
		return 0
	}
	return n
}

// parseFetchResponse reads a fetch response body (after the correlation
// id) of version 4 to 11.
func parseFetchResponse(body []byte, version int16) (*fetchResponse, error) {
	w := &wire{b: body}
	res := &fetchResponse{}
	res.throttle = time.Duration(max(w.int32(), 0)) * time.Millisecond
	if version >= 7 {
		res.errorCode = w.int16()
		w.int32() // session id
	}
	for range w.count(6) {
		topic := string(w.take(int(w.int16())))
		for range w.count(4 + 2 + 8*3) {
			p := fetchedPartition{topic: topic}
			p.partition = w.int32()
			p.errorCode = w.int16()
			p.highWater = w.int64()
			p.lastStable = w.int64()
			if version >= 5 {
				w.int64() // log start offset
			}
			for range w.count(16) {
				p.aborted = append(p.aborted, fetch.ResponseTransaction{ProducerID: w.int64(), FirstOffset: w.int64()})
			}
			if version >= 11 {
				w.int32() // preferred read replica
			}
			if n := w.int32(); n > 0 {
				p.records = w.take(int(n))
			}
			res.partitions = append(res.partitions, p)
		}
	}
	if w.err != nil {
		return nil, w.err
	}
	return res, nil
}

// Record batch attributes (magic 2).
const (
	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// batchHeaderSize is the size of a record batch (magic 2) up to its
// records: base offset (8), length (4), leader epoch (4), magic (1), CRC (4),
// attributes (2), last offset delta (4), first and max timestamp (8 each),
// producer id (8) and epoch (2), base sequence (4), record count (4).
const batchHeaderSize = 61

// recordBatch is one record batch of a fetch, its records as stored.
type recordBatch struct {
	baseOffset      int64
	lastOffsetDelta int32
	attributes      int16
	firstTimestamp  int64
	maxTimestamp    int64
	producerID      int64
	count           int32  // the records, as the header says (the broker's)
	records         []byte // compressed as attributes say
}

func (b *recordBatch) lastOffset() int64   { return b.baseOffset + int64(b.lastOffsetDelta) }
func (b *recordBatch) control() bool       { return b.attributes&attrControl != 0 }
func (b *recordBatch) transactional() bool { return b.attributes&attrTransactional != 0 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatches splits a partition's records into record batches. The
// last one may be cut off by the fetch's size bound: it is left for the
// next fetch. A batch in another format than magic 2 (Kafka before 0.11)
// or whose checksum does not match is an error.
func recordBatches(data []byte) ([]recordBatch, error) {
	var out []recordBatch
	for len(data) >= 17 { // up to the magic byte
		base := int64(binary.BigEndian.Uint64(data))
		length := int64(int32(binary.BigEndian.Uint32(data[8:])))
		if magic := data[16]; magic != 2 {
			return out, fmt.Errorf("record batch at offset %d has magic %d: only magic 2 (Kafka 0.11+) is read", base, magic)
		}
		if length < batchHeaderSize-12 {
			return out, fmt.Errorf("record batch at offset %d is %d bytes long, shorter than its header", base, length)
		}
		if 12+length > int64(len(data)) {
			break // cut off by the fetch
		}
		b := data[:12+length]
		data = data[12+length:]
		if got, want := crc32.Checksum(b[21:], castagnoli), binary.BigEndian.Uint32(b[17:]); got != want {
			return out, fmt.Errorf("record batch at offset %d: checksum %08x, want %08x", base, got, want)
		}
		if delta := int32(binary.BigEndian.Uint32(b[23:])); delta < 0 || base < 0 || base > math.MaxInt64-math.MaxInt32 {
			return out, fmt.Errorf("record batch at offset %d: last offset delta %d", base, delta)
		}
		out = append(out, recordBatch{
			baseOffset:      base,
			attributes:      int16(binary.BigEndian.Uint16(b[21:])),
			lastOffsetDelta: int32(binary.BigEndian.Uint32(b[23:])),
			firstTimestamp:  int64(binary.BigEndian.Uint64(b[27:])),
			maxTimestamp:    int64(binary.BigEndian.Uint64(b[35:])),
			producerID:      int64(binary.BigEndian.Uint64(b[43:])),
			count:           int32(binary.BigEndian.Uint32(b[57:])),
			records:         b[batchHeaderSize:],
		})
	}
	return out, nil
}

// record is one record of a batch; its key, value and headers point into
// the batch's bytes: the fetch response's, or (own) the batch's own
// decompressed ones.
type record struct {
	offset  int64
	time    time.Time
	key     []byte // nil: none
	value   []byte // nil: none
	headers []kafkago.Header
	own     bool
	// headerCount is the record's header count; over maxRecordHeaders,
	// headers is left empty.
	headerCount int
}

// maxRecordHeaders bounds the headers read of one record. Each takes two
// bytes on the wire (empty key and value) and 40 in a kafka-go Message, so
// a record of 2 MiB could hold a million of them, 40 MiB; lakewap's events
// carry a few. A record with more is dead-lettered (too_many_headers).
const maxRecordHeaders = 256

// decompress returns b's records, decompressed when b is compressed
// (kafka.DecompressRecords, bounded by kafka.MaxDecompressedBatchBytes: a
// batch over it reads as one stand-in record), and the bytes of budget
// they hold (reserved before decompressing, kafka.MaxDecompressingBytes,
// the rest given back after); the caller frees them once done with the
// records. Uncompressed records are the response's and hold none.
func (b *recordBatch) decompress(ctx context.Context, budget *byteBudget) (data []byte, held int64, err error) {
	c := protocol.Attributes(b.attributes).Compression()
	if c == 0 {
		return b.records, 0, nil
	}
	if err := budget.reserve(ctx, kafka.MaxDecompressingBytes, nil); err != nil {
		return nil, 0, err
	}
	data, err = kafka.DecompressRecords(c, b.records, b.lastOffsetDelta, b.count)
	if err != nil {
		budget.free(kafka.MaxDecompressingBytes)
		return nil, 0, fmt.Errorf("record batch at offset %d: decompressing (%s): %w", b.baseOffset, c, err)
	}
	held = min(int64(cap(data)), kafka.MaxDecompressedHeldBytes)
	budget.free(kafka.MaxDecompressingBytes - held)
	return data, held, nil
}

// eachRecord calls fn with each record of data, b's records (decompressed
// when own), in order. Records end where the bytes end: a stand-in record
// is one of the batch's many.
func (b *recordBatch) eachRecord(data []byte, own bool, fn func(record) error) error {
	w := &varints{b: data}
	for len(w.b) > 0 {
		body := w.take(int(w.varint()))
		if w.err != nil {
			return fmt.Errorf("record batch at offset %d: %w", b.baseOffset, w.err)
		}
		r, err := parseRecord(body, b)
		if err != nil {
			return fmt.Errorf("record batch at offset %d: %w", b.baseOffset, err)
		}
		r.own = own
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// parseRecord reads one record's bytes (after its length) as Apache
// Kafka's DefaultRecord.readFrom does, which its broker runs on every
// record a producer writes: a record it stores is one read here alike.
func parseRecord(body []byte, b *recordBatch) (record, error) {
	w := &varints{b: body}
	w.take(1) // attributes, unused
	ts := b.firstTimestamp + w.varlong()
	if b.attributes&attrLogAppendTime != 0 {
		ts = b.maxTimestamp // the broker's time, as the Java consumer reads it
	}
	r := record{offset: b.baseOffset + int64(w.varint()), time: time.UnixMilli(ts)}
	r.key = w.bytes()
	r.value = w.bytes()
	n := int(w.varint())
	if w.err == nil && (n < 0 || n > len(w.b)) {
		return record{}, fmt.Errorf("record of %d headers in %d bytes", n, len(w.b))
	}
	r.headerCount = n
	if n > maxRecordHeaders {
		return r, w.err // the headers are not read
	}
	if n > 0 {
		r.headers = make([]kafkago.Header, n)
		for i := range r.headers {
			k := w.bytes()
			r.headers[i] = kafkago.Header{Key: string(k), Value: w.bytes()}
		}
	}
	if w.err != nil {
		return record{}, w.err
	}
	return r, nil
}

// varints reads the zigzag varints and length-prefixed bytes of records as
// Kafka's ByteUtils does (kafka.Varint32): a producer may write a varint in
// more bytes than it needs, and a length below -1, which Kafka reads as
// null (kafka-go refused it). Reading them otherwise, a record the broker
// stored and a Java consumer reads was an error here, retried without end:
// one record any producer may write stalled the partition
// (TestRecordsKafkaAcceptsDoNotStallThePartition).
type varints struct {
	b   []byte
	err error
}

var (
	errRecordCut     = errors.New("record cut short")
	errVarintTooLong = errors.New("varint longer than its width")
)

// varint reads a zigzag int32 (ByteUtils.readVarint).
func (w *varints) varint() int32 {
	if w.err != nil {
		return 0
	}
	v, n := kafka.Varint32(w.b)
	return int32(w.advance(n, int64(v)))
}

// varlong reads a zigzag int64 (ByteUtils.readVarlong).
func (w *varints) varlong() int64 {
	if w.err != nil {
		return 0
	}
	v, n := kafka.Varint64(w.b)
	return w.advance(n, v)
}

// advance moves past a varint of n bytes (kafka.Varint32's n) and returns
// v, or records why it could not be read.
func (w *varints) advance(n int, v int64) int64 {
	switch {
	case n == 0:
		w.err = errRecordCut
		return 0
	case n < 0:
		w.err = errVarintTooLong
		return 0
	}
	w.b = w.b[n:]
	return v
}

func (w *varints) take(n int) []byte {
	if w.err != nil {
		return nil
	}
	if n < 0 || n > len(w.b) {
		w.err = errRecordCut
		return nil
	}
	out := w.b[:n:n]
	w.b = w.b[n:]
	return out
}

// bytes reads a length-prefixed field: a negative length is nil (no key,
// no value), as Kafka reads it.
func (w *varints) bytes() []byte {
	n := int(w.varint())
	if w.err != nil || n < 0 {
		return nil
	}
	if n > len(w.b) {
		w.err = fmt.Errorf("length %d with %d bytes left", n, len(w.b))
		return nil
	}
	return w.take(n)
}
