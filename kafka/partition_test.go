package kafka

import "testing"

// PartitionOf answers as the Java client's default partitioner does for a
// keyed record: toPositive(murmur2(key)) % n. The answers below came from
// Apache Kafka 4.4.0's own org.apache.kafka.common.utils.Utils (kafka-clients
// jar) for these keys; dead-lettering wrong_partition and the changelog's
// wrong_partition rest on agreeing with it.
func TestPartitionOfAgreesWithTheJavaClient(t *testing.T) {
	for _, c := range []struct {
		key     string
		n, want int
	}{
		{"b1", 1, 0}, {"b1", 3, 2}, {"b1", 12, 11}, {"b1", 64, 23},
		{"2026-11-29T02", 3, 2}, {"2026-11-29T02", 12, 11}, {"2026-11-29T02", 64, 35},
		{"batch-0000042", 3, 1}, {"batch-0000042", 12, 4}, {"batch-0000042", 64, 16},
		{"é-ü", 3, 2}, {"é-ü", 12, 8}, {"é-ü", 64, 32},
		{"", 3, 0}, {"", 12, 9}, {"", 64, 25},
	} {
		if got := PartitionOf([]byte(c.key), c.n); got != c.want {
			t.Errorf("PartitionOf(%q, %d) = %d, the Java client's partition is %d", c.key, c.n, got, c.want)
		}
	}
}
