package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

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
