package kafka

// Varint32 and Varint64 read a zigzag varint of a record (magic 2) as Apache
// Kafka's ByteUtils.readVarint and readVarlong do, which its broker runs on
// the records a producer writes: an int32 of at most five bytes, a long of
// at most ten, the bits of the last byte past the width dropped. Go's
// binary.Varint keeps those bits (or refuses the long), so a record the
// broker stored and a Java consumer reads was, to lakewap, another length
// or offset, or not a record. n is the bytes read: 0 when b ends first, -1
// when the varint is longer than its width allows.
func Varint32(b []byte) (v int32, n int) {
	u, n := uvarint(b, 5)
	u32 := uint32(u)
	return int32(u32>>1) ^ -int32(u32&1), n
}

// Varint64 reads a long; see Varint32.
func Varint64(b []byte) (v int64, n int) {
	u, n := uvarint(b, 10)
	return int64(u>>1) ^ -int64(u&1), n
}

// uvarint reads an unsigned varint of at most max bytes.
func uvarint(b []byte, max int) (uint64, int) {
	var u uint64
	for i := range max {
		if i == len(b) {
			return 0, 0
		}
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return u, i + 1
		}
	}
	return 0, -1
}
