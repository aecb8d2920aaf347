package runstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/lakewap/lakewap/consumer"
)

// batchSizes is an Inner that keeps, for each write, the size of the
// Kafka record batch it makes (v2, uncompressed: what a broker holds
// against max.message.bytes).
type batchSizes struct {
	logStore
	sizes []int
}

func (b *batchSizes) Write(ctx context.Context, p int, records ...consumer.ChangelogRecord) error {
	varint := func(n int64) int {
		u := uint64((n << 1) ^ (n >> 63))
		size := 1
		for u >= 0x80 {
			u >>= 7
			size++
		}
		return size
	}
	size := 61 // the batch header
	for i, r := range records {
		body := 1 + varint(0) + varint(int64(i)) + varint(int64(len(r.Key))) + len(r.Key) + 1
		if r.Value == nil {
			body += varint(-1)
		} else {
			body += varint(int64(len(r.Value))) + len(r.Value)
		}
		size += varint(int64(body)) + body
	}
	b.sizes = append(b.sizes, size)
	return b.logStore.Write(ctx, p, records...)
}

// A restore that deletes many short keys (each holding only lakewap's own
// older record written again, under every run key of a partition's
// history) writes them in Kafka batches of at most MaxWriteBytes as the
// broker counts them, framing included: it counted keys and values only,
// so 100,000 tombstones of 3-byte keys made one batch of 1.5 MB, which a
// changelog taking 1 MiB refuses on every attempt, and the partition is
// never restored.
func TestRestoreWritesFitMaxWriteBytes(t *testing.T) {
	inner := &batchSizes{logStore: logStore{}}
	s, err := New(Config{Inner: inner, Key: []byte("0123456789abcdef0123456789abcdef"), Datasets: specs})
	must(t, err)
	var gone []string
	for i := range 100000 {
		gone = append(gone, fmt.Sprintf("d/%x", i))
	}
	must(t, s.takeEpoch(context.Background(), 0, 0, nil, nil, nil, gone, nil))
	if len(inner.logStore[0]) != len(gone)+2 {
		t.Fatalf("%d records written, want the epoch mark, %d tombstones and the last mark", len(inner.logStore[0]), len(gone))
	}
	for i, n := range inner.sizes {
		if n > MaxWriteBytes {
			t.Errorf("write %d of %d makes a batch of %d bytes, more than %d", i, len(inner.sizes), n, MaxWriteBytes)
		}
	}
}
