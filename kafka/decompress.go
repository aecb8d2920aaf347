package kafka

import (
	"fmt"
	"io"

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

// BatchTooLargeError is the error of reading a record batch that
// decompresses to more than MaxDecompressedBatchBytes. Its bytes past the
// limit are decompressed only to count its records, and dropped.
type BatchTooLargeError struct {
	Codec string // the batch's compression
	// Known says whether the decompressed bytes read as a record batch's
	// records (magic 2): then it holds Records, and its last record's
	// offset is its first offset plus LastOffsetDelta.
	Known           bool
	Records         int
	LastOffsetDelta int64
}

func (e *BatchTooLargeError) Error() string {
	return fmt.Sprintf("a %s-compressed record batch decompresses to more than %d bytes (kafka.MaxDecompressedBatchBytes)", e.Codec, MaxDecompressedBatchBytes)
}

// As makes the error a Kafka error to kafka-go's reader, the only kind it
// hands to FetchMessage: any other it logs, and reads the same batch again
// for ever.
func (e *BatchTooLargeError) As(target any) bool {
	if p, ok := target.(*kafkago.Error); ok {
		*p = kafkago.MessageSizeTooLarge
		return true
	}
	return false
}

// kafka-go looks every codec up in its one table (compress.Codecs): each
// reader every lakewap part uses (the consumer's, the changelog's, the
// commands') decompresses within the bound.
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
	return &boundedReader{rc: c.Codec.NewReader(r), left: MaxDecompressedBatchBytes, codec: c.Name()}
}

// boundedReader passes on at most left bytes of rc, reading what it passes
// as records (walk), so that a batch over the limit can say where it ends.
type boundedReader struct {
	rc    io.ReadCloser
	left  int64
	codec string
	walk  recordWalk
	err   error // the error once over the limit
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		return 0, b.over()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	b.walk.write(p[:n])
	return n, err
}

// over reads what is left of the batch, past the limit, only to walk its
// records (in bounded memory), and returns the error saying so; nil when
// nothing was left (the batch is exactly the limit).
func (b *boundedReader) over() error {
	buf := make([]byte, 64<<10)
	past := false
	for {
		n, err := b.rc.Read(buf)
		if n > 0 {
			past = true
			b.walk.write(buf[:n])
		}
		if err == io.EOF && !past {
			return io.EOF
		}
		if err != nil {
			e := &BatchTooLargeError{Codec: b.codec}
			if err == io.EOF && b.walk.complete() {
				e.Known, e.Records, e.LastOffsetDelta = true, b.walk.records, b.walk.lastDelta
			}
			b.err = e
			return e
		}
	}
}

func (b *boundedReader) Close() error { return b.rc.Close() }

// recordWalk reads the records of a record batch (magic 2) as their bytes
// stream by: each is a varint length, then attributes (one byte), a
// timestamp delta and an offset delta (varints), then the rest. It keeps
// only the record count and the highest offset delta.
type recordWalk struct {
	records   int
	lastDelta int64
	bad       bool
	phase     int    // walkLength, walkAttributes, walkTimestamp, walkOffset, walkRest
	v         uint64 // the varint being read
	shift     uint
	left      int64 // bytes of the current record after its length, not read yet
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
		if w.shift > 63 {
			w.bad = true
			return
		}
		w.v |= uint64(c&0x7f) << w.shift
		w.shift += 7
		if c&0x80 != 0 {
			continue
		}
		v := int64(w.v>>1) ^ -int64(w.v&1) // zigzag
		w.v, w.shift = 0, 0
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
	return !w.bad && w.records > 0 && w.phase == walkLength && w.shift == 0
}
