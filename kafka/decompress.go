package kafka

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// MaxDecompressedBatchBytes bounds what one compressed record batch read
// from Kafka may decompress to. The broker holds a batch to the topic's
// max.message.bytes as compressed, and kafka-go decompresses a batch whole
// before it hands out any of its records: 9 KB of zstd hold 80 MiB of
// zeros, and 1 MiB holds tens of gigabytes, so one batch a producer wrote
// to the input topic ran every lakewap that took its partition out of
// memory, one after the other. A legitimate batch of events (at most 1 MiB
// each, schemas.DefaultMaxMessageSize) is far below it.
const MaxDecompressedBatchBytes = 64 << 20

// MaxDecompressedRecordBytes bounds one record of a compressed record
// batch, decompressed (its bytes after its length). kafka-go's reader
// (the commands' ReadPartitions; the consumer's own fetch holds one batch
// ahead) queues 100 records ahead of the one handed out: within
// MaxDecompressedBatchBytes a batch of a few KiB may hold one record of
// nearly 64 MiB, and a producer's run of such batches made a consumer hold
// 60 MiB per queued record (6 GiB for a full queue) while its handler
// held the record before them. Nothing lakewap reads is near it: an
// event's value is at most 1 MiB (schemas.DefaultMaxMessageSize), a run
// record at most 900 KiB (runner.max_run_bytes).
const MaxDecompressedRecordBytes = 2 << 20

// MaxDecompressedHeldBytes bounds the memory the bytes DecompressRecords
// returns hold (their capacity): a batch within MaxDecompressedBatchBytes,
// and room its reading grew. The consumer counts it against its bound of
// the batches decompressed at once.
const MaxDecompressedHeldBytes = MaxDecompressedBatchBytes + MaxDecompressedBatchBytes/4 + 1<<20

// MaxDecompressingBytes bounds what DecompressRecords holds while it
// decompresses a batch: a zstd batch is decompressed whole, up to
// maxZstdWindow and room its bytes grew, before it is known to be over
// MaxDecompressedBatchBytes. The consumer counts it until it has the
// batch's bytes (MaxDecompressedHeldBytes at most).
const MaxDecompressingBytes = maxZstdWindow + maxZstdWindow/4 + 1<<20

// BatchTooLarge describes a record batch that decompresses to more than
// MaxDecompressedBatchBytes: its records (counted by decompressing the rest
// and dropping it) and its last record's offset less its first. With
// RecordBytes set it describes one record of a batch within the limit
// that decompresses to RecordBytes, more than MaxDecompressedRecordBytes
// (Records 1, LastOffsetDelta 0): it alone is read as the stand-in, at its
// own offset.
type BatchTooLarge struct {
	Codec           string // the batch's compression
	Records         int
	LastOffsetDelta int64
	RecordBytes     int64
}

// HeaderBatchTooLarge names the header of the one record a batch over
// MaxDecompressedBatchBytes is read as: its value is a token that
// TooLargeBatch takes back (drawn at random, so a producer cannot write
// such a record itself).
const HeaderBatchTooLarge = "lakewap.batch_too_large"

// A batch over the limit is read as one record, at the batch's last
// offset, with no key or value and the HeaderBatchTooLarge header: kafka-go
// (and the consumer's own fetch, with DecompressRecords) reads the batch's
// other records as cut off by the fetch and reads on past its last offset. The readers of the consumer take it back by its token
// (TooLargeBatch); any other reader (the changelog's, the commands') sees a
// record without key or value.
var overLimit = struct {
	sync.Mutex
	batches map[string]BatchTooLarge
	order   []string // tokens, oldest first
}{batches: map[string]BatchTooLarge{}}

// maxOverLimit bounds the batches over the limit remembered and not taken
// back yet (a reader other than the consumer never takes its own).
const maxOverLimit = 1024

func rememberOverLimit(b BatchTooLarge) string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	token := hex.EncodeToString(id[:])
	overLimit.Lock()
	defer overLimit.Unlock()
	if len(overLimit.order) >= maxOverLimit {
		delete(overLimit.batches, overLimit.order[0])
		overLimit.order = overLimit.order[1:]
	}
	overLimit.batches[token] = b
	overLimit.order = append(overLimit.order, token)
	return token
}

// TooLargeBatch says whether a record read from Kafka stands for a batch
// over MaxDecompressedBatchBytes (its headers hold a token this process
// drew), and describes the batch; the token is then forgotten.
func TooLargeBatch(headers []Header) (BatchTooLarge, bool) {
	token, ok := HeaderValue(headers, HeaderBatchTooLarge)
	if !ok {
		return BatchTooLarge{}, false
	}
	overLimit.Lock()
	defer overLimit.Unlock()
	b, ok := overLimit.batches[token]
	if ok {
		delete(overLimit.batches, token)
		overLimit.order = slices.DeleteFunc(overLimit.order, func(t string) bool { return t == token })
	}
	return b, ok
}

// BatchTooLargeError is the error of reading a record batch over
// MaxDecompressedBatchBytes whose bytes do not read as records (the
// reader cannot tell which offsets it holds): the partition waits.
type BatchTooLargeError struct{ Codec string }

func (e *BatchTooLargeError) Error() string {
	return fmt.Sprintf("a %s-compressed record batch decompresses to more than %d bytes (kafka.MaxDecompressedBatchBytes), and not to records", e.Codec, MaxDecompressedBatchBytes)
}

// As makes the error a Kafka error to kafka-go's reader, the only kind it
// hands to FetchMessage (any other it only logs).
func (e *BatchTooLargeError) As(target any) bool {
	if p, ok := target.(*kafkago.Error); ok {
		*p = kafkago.MessageSizeTooLarge
		return true
	}
	return false
}

// kafka-go looks every codec up in its one table (compress.Codecs): each
// kafka-go reader lakewap uses (the changelog's, the commands')
// decompresses within the bound; the consumer's fetch uses
// DecompressRecords.
func init() {
	for i, c := range compress.Codecs {
		if c != nil {
			compress.Codecs[i] = boundedCodec{c}
		}
	}
}

// boundedCodec is a kafka-go codec whose readers stop at
// MaxDecompressedBatchBytes; it writes as the codec it wraps.
type boundedCodec struct{ compress.Codec }

func (c boundedCodec) NewReader(r io.Reader) io.ReadCloser {
	if c.Code() == int8(compress.Zstd) {
		return &boundedReader{src: r, codec: c.Name()} // decompressed whole (zstdWithin)
	}
	return &boundedReader{rc: c.Codec.NewReader(r), codec: c.Name()}
}

// boundedReader decompresses the whole batch (at most the limit) before it
// passes any of it on, so that a batch over the limit can be passed on as
// another record instead.
type boundedReader struct {
	rc    io.ReadCloser // the decompressing reader; for zstd, set only to walk a batch over the limit
	src   io.Reader     // zstd: the compressed batch
	codec string
	out   io.Reader // what is passed on, once read
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.out == nil {
		data, err := b.decompress()
		if err != nil {
			b.out = errReader{err}
		} else {
			b.out = bytes.NewReader(data)
		}
	}
	return b.out.Read(p)
}

// DecompressRecords decompresses the records of a record batch compressed
// with c, as kafka-go's codecs do here: within MaxDecompressedBatchBytes,
// each record over MaxDecompressedRecordBytes coming back as one at its
// offset. A batch over it comes back as its stand-in record (TooLargeBatch)
// at lastOffsetDelta, of count records, the batch's header's (which the
// broker checks); the rest of it is not decompressed. For the consumer's
// fetches, which read batches themselves; the bytes returned are the
// caller's.
func DecompressRecords(c compress.Compression, records []byte, lastOffsetDelta, count int32) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return nil, fmt.Errorf("unknown compression %d", c)
	}
	if bc, ok := codec.(boundedCodec); ok {
		codec = bc.Codec
	}
	var data []byte
	within := false
	if c == compress.Zstd {
		var err error
		if data, within, err = zstdWithin(records); err != nil {
			return nil, err
		}
	} else {
		rc := codec.NewReader(bytes.NewReader(records))
		defer rc.Close()
		var err error
		if data, err = io.ReadAll(io.LimitReader(rc, MaxDecompressedBatchBytes+1)); err != nil {
			return nil, err
		}
		within = len(data) <= MaxDecompressedBatchBytes
	}
	if !within {
		token := rememberOverLimit(BatchTooLarge{Codec: codec.Name(), Records: int(count), LastOffsetDelta: int64(lastOffsetDelta)})
		return standIn(0, int64(lastOffsetDelta), token), nil
	}
	return withinLimit(data, codec.Name()), nil
}

// maxZstdWindow is the largest window a zstd frame Apache Kafka stores
// declares: its decoder's (zstd-jni) windowLogMax is 27 (4.4 refuses 28).
const maxZstdWindow = 1 << 27

// zstdWhole decompresses a zstd batch whole (DecodeAll), into bytes that
// grow with what it decodes and are its history, up to maxZstdWindow.
// kafka-go's streaming decoder allocated the window a frame declares
// before decoding a byte: a batch of a few bytes declaring 128 MiB cost
// 128 MiB (TestZstdWindowIsNotAllocatedUpFront).
var zstdWhole = func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxZstdWindow),
		zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		panic(err) // the options are valid
	}
	return d
}()

// zstdWithin decompresses a zstd batch whole if it is within
// MaxDecompressedBatchBytes (within); false when it is not, having
// decompressed up to maxZstdWindow of it.
func zstdWithin(compressed []byte) (data []byte, within bool, err error) {
	data, err = zstdWhole.DecodeAll(compressed, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return data, len(data) <= MaxDecompressedBatchBytes, nil
}

// withinLimit is the records of a batch within MaxDecompressedBatchBytes,
// each record over MaxDecompressedRecordBytes replaced by its stand-in,
// held in at most MaxDecompressedHeldBytes.
func withinLimit(data []byte, codec string) []byte {
	if out, ok := withoutOversizedRecords(data, codec); ok {
		data = out
	}
	if cap(data) > MaxDecompressedHeldBytes {
		data = bytes.Clone(data)
	}
	return data
}

// decompress reads the batch, and returns its bytes, or the record that
// stands for it when it is over the limit.
func (b *boundedReader) decompress() ([]byte, error) {
	var data []byte
	if b.src != nil {
		compressed, err := io.ReadAll(b.src)
		if err != nil {
			return nil, err
		}
		whole, within, err := zstdWithin(compressed)
		if err != nil {
			return nil, err
		}
		if within {
			return withinLimit(whole, b.codec), nil
		}
		// Over the limit: walked as it streams by, within the window Kafka takes.
		d, err := zstd.NewReader(bytes.NewReader(compressed), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, err
		}
		b.rc = d.IOReadCloser()
	} else {
		// io.ReadAll grows its slice as append does (by a quarter, for a
		// large one); a bytes.Buffer doubled it: a batch of 64 MiB held 128.
		var err error
		if data, err = io.ReadAll(io.LimitReader(b.rc, MaxDecompressedBatchBytes+1)); err != nil {
			return nil, err
		}
		if len(data) <= MaxDecompressedBatchBytes {
			return withinLimit(data, b.codec), nil
		}
	}
	var walk recordWalk
	walk.write(data)
	data = nil
	chunk := make([]byte, 64<<10)
	for {
		m, err := b.rc.Read(chunk)
		walk.write(chunk[:m])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if !walk.complete() {
		return nil, &BatchTooLargeError{Codec: b.codec}
	}
	token := rememberOverLimit(BatchTooLarge{Codec: b.codec, Records: walk.records, LastOffsetDelta: walk.lastDelta})
	return standIn(0, walk.lastDelta, token), nil
}

// withoutOversizedRecords is records, the decompressed records of a batch
// within MaxDecompressedBatchBytes, with each record over
// MaxDecompressedRecordBytes replaced by a stand-in at its own offset and
// timestamp (its token describes it: BatchTooLarge.RecordBytes); false
// when none is over it, or the bytes are not records (kafka-go reads them
// as they are, and says so).
func withoutOversizedRecords(records []byte, codec string) ([]byte, bool) {
	type oversized struct {
		at, end        int
		tsDelta, delta int64
		size           int64
	}
	var over []oversized
	for i := 0; i < len(records); {
		size32, n := Varint32(records[i:])
		size := int64(size32)
		if n <= 0 || size <= 0 || size > int64(len(records)-i-n) {
			return nil, false
		}
		end := i + n + int(size)
		if size > MaxDecompressedRecordBytes {
			body := records[i+n+1 : end] // after the attributes
			ts, m := Varint64(body)
			if m <= 0 {
				return nil, false
			}
			delta, m2 := Varint32(body[m:])
			if m2 <= 0 || delta < 0 {
				return nil, false
			}
			over = append(over, oversized{at: i, end: end, tsDelta: ts, delta: int64(delta), size: size})
		}
		i = end
	}
	if len(over) == 0 {
		return nil, false
	}
	var out []byte
	last := 0
	for _, o := range over {
		out = append(out, records[last:o.at]...)
		token := rememberOverLimit(BatchTooLarge{Codec: codec, Records: 1, RecordBytes: o.size})
		out = append(out, standIn(o.tsDelta, o.delta, token)...)
		last = o.end
	}
	return append(out, records[last:]...), true
}

// standIn is the records of a batch (magic 2) holding one record at offset
// delta and timestamp delta ts with no key or value and the header
// HeaderBatchTooLarge: token.
func standIn(ts, delta int64, token string) []byte {
	body := []byte{0}                    // attributes
	body = binary.AppendVarint(body, ts) // timestamp delta
	body = binary.AppendVarint(body, delta)
	body = binary.AppendVarint(body, -1) // no key
	body = binary.AppendVarint(body, -1) // no value
	body = binary.AppendVarint(body, 1)  // one header
	body = binary.AppendVarint(body, int64(len(HeaderBatchTooLarge)))
	body = append(body, HeaderBatchTooLarge...)
	body = binary.AppendVarint(body, int64(len(token)))
	body = append(body, token...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (b *boundedReader) Close() error {
	if b.rc == nil {
		return nil
	}
	return b.rc.Close()
}

// recordWalk reads the records of a record batch (magic 2) as their bytes
// stream by: each is a varint length, then attributes (one byte), a
// timestamp delta and an offset delta (varints, read as Kafka reads them:
// Varint32, Varint64), then the rest. It keeps only the record count and
// the highest offset delta.
type recordWalk struct {
	records   int
	lastDelta int64
	bad       bool
	phase     int    // walkLength, walkAttributes, walkTimestamp, walkOffset, walkRest
	v         uint64 // the varint being read
	n         int    // its bytes read
	left      int64  // bytes of the current record after its length, not read yet
}

const (
	walkLength = iota
	walkAttributes
	walkTimestamp
	walkOffset
	walkRest
)

func (w *recordWalk) write(p []byte) {
	for len(p) > 0 && !w.bad {
		if w.phase == walkRest {
			n := min(int64(len(p)), w.left)
			p = p[n:]
			w.left -= n
			if w.left == 0 {
				w.phase = walkLength
			}
			continue
		}
		c := p[0]
		p = p[1:]
		if w.phase != walkLength {
			if w.left--; w.left < 0 {
				w.bad = true
				return
			}
		}
		if w.phase == walkAttributes {
			w.phase = walkTimestamp
			continue
		}
		width := 5 // an int32's bytes at most
		if w.phase == walkTimestamp {
			width = 10 // a long's
		}
		w.v |= uint64(c&0x7f) << (7 * w.n)
		w.n++
		if c&0x80 != 0 {
			if w.n == width {
				w.bad = true
				return
			}
			continue
		}
		v := int64(w.v>>1) ^ -int64(w.v&1) // zigzag
		if width == 5 {
			u := uint32(w.v) // the bits past 32 dropped
			v = int64(int32(u>>1) ^ -int32(u&1))
		}
		w.v = 0
		w.n = 0
		switch w.phase {
		case walkLength:
			if v <= 0 {
				w.bad = true
				return
			}
			w.left, w.phase = v, walkAttributes
			w.records++
		case walkTimestamp:
			w.phase = walkOffset
		case walkOffset:
			if v < 0 {
				w.bad = true
				return
			}
			w.lastDelta = max(w.lastDelta, v)
			w.phase = walkRest
			if w.left == 0 {
				w.phase = walkLength
			}
		}
	}
}

// complete says whether the bytes walked were whole records.
func (w *recordWalk) complete() bool {
	return !w.bad && w.records > 0 && w.phase == walkLength && w.n == 0
}
