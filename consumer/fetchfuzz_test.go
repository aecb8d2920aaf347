package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// FuzzFetchResponse reads fuzzed fetch responses (v4 to v11) and passes
// each partition's records on as the fetch loop does. Whatever the bytes:
// no panic; messages and skips come in increasing offsets from the fetch's
// offset on, each send within maxEntriesPerSend (and a skip), and the next
// fetch starts past every offset passed on. With fixCRC the batches'
// checksums are set to match their bytes first, so that mutations reach
// the records past the checksum. Run it with
// go test ./consumer -run '^$' -fuzz FuzzFetchResponse -fuzztime 60s -fuzzminimizetime 1x.
func FuzzFetchResponse(f *testing.F) {
	abort := []byte{0, 0, 0, 0}
	batches := bytes.Join([][]byte{
		encodeBatch(f, 0, -1, 0, 1, testRecord{delta: 0, key: []byte("k")}, testRecord{delta: 1}),
		encodeBatch(f, 2, 7, attrTransactional, 0, testRecord{delta: 0}),
		encodeBatch(f, 3, 7, attrTransactional|attrControl, 0, testRecord{key: abort}),
		encodeBatch(f, 4, -1, int16(kafkago.Gzip), 2, testRecord{delta: 0}, testRecord{delta: 2}),
		encodeBatch(f, 7, -1, int16(kafkago.Zstd), 0, testRecord{delta: 0}),
	}, nil)
	for _, v := range []int16{4, 7, 11} {
		for _, fix := range []bool{false, true} {
			f.Add(fetchResponseBody(v, batches, 7, 2), v, int64(0), fix)
			f.Add(fetchResponseBody(v, batches, 7, 2), v, int64(3), fix)
			f.Add(fetchResponseBody(v, batches[:40], -1, 0), v, int64(0), fix)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, version int16, from int64, fixCRC bool) {
		if version < minFetchVersion || version > maxFetchVersion || from < 0 {
			return
		}
		res, err := parseFetchResponse(body, version)
		if err != nil {
			return
		}
		for i := range res.partitions {
			p := &res.partitions[i]
			if fixCRC {
				fixChecksums(p.records)
			}
			out := make(chan []entry, 1<<16)
			pf := partitionFetch{topic: p.topic, partition: int(p.partition), offset: from}
			err := passOn(context.Background(), &pf, p, out)
			close(out)
			prev := from - 1
			for entries := range out {
				if len(entries) > maxEntriesPerSend+1 {
					t.Fatalf("a send of %d entries", len(entries))
				}
				for _, e := range entries {
					if e.msg.Offset <= prev {
						t.Fatalf("offset %d passed on after %d (from %d)", e.msg.Offset, prev, from)
					}
					prev = e.msg.Offset
				}
			}
			if pf.offset <= prev || pf.offset < from {
				t.Fatalf("next fetch at %d after offset %d passed on (from %d, err %v)", pf.offset, prev, from, err)
			}
		}
	})
}

// fixChecksums sets the CRC-32C of each whole record batch in data to
// match its bytes.
func fixChecksums(data []byte) {
	for len(data) >= 21 {
		length := int64(int32(binary.BigEndian.Uint32(data[8:])))
		if length < batchHeaderSize-12 || 12+length > int64(len(data)) {
			return
		}
		b := data[:12+length]
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
		data = data[12+length:]
	}
}

// fetchResponseBody is a fetch response body (after the correlation id) of
// version v with one partition holding records, and, with pid 0 or more,
// one aborted transaction of pid from offset first.
func fetchResponseBody(v int16, records []byte, pid, first int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // throttle time
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, 0) // error code
		b = binary.BigEndian.AppendUint32(b, 0) // session id
	}
	b = binary.BigEndian.AppendUint32(b, 1) // topics
	b = binary.BigEndian.AppendUint16(b, 2)
	b = append(b, "in"...)
	b = binary.BigEndian.AppendUint32(b, 1) // partitions
	b = binary.BigEndian.AppendUint32(b, 0) // partition
	b = binary.BigEndian.AppendUint16(b, 0) // error code
	b = binary.BigEndian.AppendUint64(b, 99)
	b = binary.BigEndian.AppendUint64(b, 99) // last stable offset
	if v >= 5 {
		b = binary.BigEndian.AppendUint64(b, 0) // log start offset
	}
	if pid < 0 {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // null
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint64(b, uint64(first))
	}
	if v >= 11 {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // preferred read replica
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)))
	return append(b, records...)
}

// The fuzz seeds read as the fetch loop would: a check of the seeds
// themselves, so that the fuzzer starts from responses that parse.
func TestFuzzSeedsParse(t *testing.T) {
	records := encodeBatch(t, 0, -1, 0, 0, testRecord{delta: 0})
	for _, v := range []int16{4, 7, 11} {
		res, err := parseFetchResponse(fetchResponseBody(v, records, 7, 2), v)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(res.partitions) != 1 || res.partitions[0].topic != "in" || len(res.partitions[0].aborted) != 1 || !bytes.Equal(res.partitions[0].records, records) {
			t.Errorf("v%d: read %+v", v, res.partitions)
		}
	}
}

// kafkaVarint is v as a zigzag varint of width bytes at most (5: an int32,
// 10: a long) in pad more bytes than it needs, as a producer may write it:
// when it takes all width bytes, the last byte's bits past the width
// are junk's, which Kafka drops.
func kafkaVarint(v int64, width, pad int, junk byte) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	if width == 5 {
		u = uint64(uint32(int32(v)<<1) ^ uint32(int32(v)>>31))
	}
	n := 1
	for x := u >> 7; x != 0; x >>= 7 {
		n++
	}
	n = min(n+pad, width)
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(u>>(7*i)) & 0x7f
		if i < n-1 {
			out[i] |= 0x80
		}
	}
	if n == width && width == 5 {
		out[4] |= (junk & 0x7) << 4 // bits 32 to 34
	}
	if n == width && width == 10 {
		out[9] |= (junk & 0x3f) << 1 // bits 64 to 69
	}
	return out
}

// FuzzRecordEncodings writes one record in any encoding Apache Kafka's
// broker stores (each varint padded up to its width, with junk past it; a
// null length any negative number) and checks that the fetch reads the
// fields written, as Kafka's DefaultRecord.readFrom reads them: before, a
// length below -1 or a padded varint was an error that stalled the
// partition, or moved the record out of its batch. Run it with
// go test ./consumer -run '^$' -fuzz FuzzRecordEncodings -fuzztime 60s.
func FuzzRecordEncodings(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), []byte("h"), []byte("x"), int32(3), int64(7), uint64(0), uint8(0), int32(-1), false)
	f.Add([]byte(nil), []byte("v"), []byte("h"), []byte(nil), int32(0), int64(-5), uint64(0o77777777), uint8(0xff), int32(-2), true)
	f.Fuzz(func(t *testing.T, key, value, hkey, hvalue []byte, delta int32, ts int64, pads uint64, junk uint8, neg int32, nullValue bool) {
		delta = int32(uint32(delta) % 1000)
		if neg >= 0 {
			neg = -1
		}
		pad := func(i int) int { return int(pads>>(3*i)) & 7 }
		length := func(b []byte, null bool, i int) []byte {
			if null {
				return kafkaVarint(int64(neg), 5, pad(i), junk)
			}
			return append(kafkaVarint(int64(len(b)), 5, pad(i), junk), b...)
		}
		nullKey := len(key) == 0 && nullValue
		body := []byte{0}
		body = append(body, kafkaVarint(ts, 10, pad(0), junk)...)
		body = append(body, kafkaVarint(int64(delta), 5, pad(1), junk)...)
		body = append(body, length(key, nullKey, 2)...)
		body = append(body, length(value, nullValue, 3)...)
		body = append(body, kafkaVarint(1, 5, pad(4), junk)...)
		body = append(body, length(hkey, false, 5)...)
		body = append(body, length(hvalue, len(hvalue) == 0 && nullValue, 6)...)
		records := append(kafkaVarint(int64(len(body)), 5, pad(7), junk), body...)

		out := make(chan []entry, 2)
		pf := partitionFetch{topic: "in"}
		p := &fetchedPartition{lastStable: -1, records: rawBatch(t, 0, -1, 0, delta, 1, records)}
		if err := passOn(context.Background(), &pf, p, out); err != nil {
			t.Fatalf("a record Kafka stores is an error: %v", err)
		}
		close(out)
		var got []kafkago.Message
		for entries := range out {
			for _, e := range entries {
				got = append(got, e.msg)
			}
		}
		want := javaRead{offset: int64(delta), key: key, value: value, ms: time.UnixMilli(1000 + ts).UnixMilli(),
			headers: []kafkago.Header{{Key: string(hkey), Value: hvalue}}}
		if want.key == nil && !nullKey {
			want.key = []byte{}
		}
		if nullKey {
			want.key = nil
		}
		if want.value == nil {
			want.value = []byte{}
		}
		if nullValue {
			want.value = nil
		}
		if want.headers[0].Value == nil {
			want.headers[0].Value = []byte{}
		}
		if len(hvalue) == 0 && nullValue {
			want.headers[0].Value = nil
		}
		if len(got) != 1 {
			t.Fatalf("read %d entries, want 1 message", len(got))
		}
		m := got[0]
		if r := (javaRead{offset: m.Offset, key: m.Key, value: m.Value, headers: m.Headers, ms: m.Time.UnixMilli()}); !sameRead(r, want) {
			t.Errorf("read %+v, want %+v", r, want)
		}
	})
}
