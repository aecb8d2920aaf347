package kafka

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/segmentio/kafka-go/compress"
)

// zstdFrame is content as one zstd frame of one raw block, declaring a
// window of 2^windowLog bytes.
func zstdFrame(windowLog int, content []byte) []byte {
	f := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, byte((windowLog - 10) << 3)}
	h := len(content)<<3 | 1 // last block, raw
	f = append(f, byte(h), byte(h>>8), byte(h>>16))
	return append(f, content...)
}

// A zstd frame declares the window its decoder keeps, and Apache Kafka
// stores frames declaring up to 128 MiB (its decoder's windowLogMax 27;
// 4.4 refuses 28). kafka-go's streaming decoder allocated the declared
// window before decoding a byte: a batch of a few bytes cost 128 MiB, each
// time any reader decompressed it, and a pooled decoder kept it. A batch
// is decompressed whole into its own bytes (DecodeAll), which are its
// history: what it allocates follows what it holds.
func TestZstdWindowIsNotAllocatedUpFront(t *testing.T) {
	record := []byte{0} // attributes
	record = binary.AppendVarint(record, 0)
	record = binary.AppendVarint(record, 0)
	record = binary.AppendVarint(record, -1)
	record = binary.AppendVarint(record, 1)
	record = append(record, 'v')
	record = binary.AppendVarint(record, 0)
	content := append(binary.AppendVarint(nil, int64(len(record))), record...)
	frame := zstdFrame(27, content)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 10 {
		var out []byte
		var err error
		if i%2 == 0 {
			out, err = DecompressRecords(compress.Zstd, frame, 0, 1)
		} else { // kafka-go's readers, through the codec wrapped here
			r := compress.Zstd.Codec().NewReader(bytes.NewReader(frame))
			out, err = io.ReadAll(r)
			r.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(content) {
			t.Fatalf("decompressed %x, want %x", out, content)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("10 batches of %d bytes, declaring a window of 128 MiB, allocated %d MiB", len(frame), got>>20)
	}
}
