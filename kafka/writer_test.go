package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

// Every writer lakewap builds waits for all in-sync replicas (a result or
// dead letter acknowledged by one broker only can be lost) and picks a
// key's partition as the Java client does, so lakewap and upstream agree on
// a batch's partition.
func TestWritersAreBuiltOneWay(t *testing.T) {
	c, err := NewClient([]string{"127.0.0.1:9"}, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Writer(WriterConfig{Topic: "t"})
	if w.w.RequiredAcks != kafkago.RequireAll || w.w.MaxAttempts != 1 || w.Topic() != "t" {
		t.Errorf("writer acks %v attempts %d topic %q, want all replicas, 1, t", w.w.RequiredAcks, w.w.MaxAttempts, w.Topic())
	}
	if _, ok := w.w.Balancer.(*kafkago.Murmur2Balancer); !ok {
		t.Errorf("writer balancer %T, want murmur2 (the Java client's)", w.w.Balancer)
	}
}

func TestMessageCrossesTheWire(t *testing.T) {
	m := Message{Topic: "t", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}}}
	back := FromWire(Wire(m))
	if back.Topic != m.Topic || back.Partition != 2 || back.Offset != 7 || string(back.Key) != "k" || string(back.Value) != "v" ||
		len(back.Headers) != 1 || back.Headers[0].Key != "h" || string(back.Headers[0].Value) != "x" {
		t.Errorf("FromWire(Wire(m)) = %+v, want %+v", back, m)
	}
	if v, ok := HeaderValue(back.Headers, "h"); !ok || v != "x" {
		t.Errorf("HeaderValue = %q %v", v, ok)
	}
}
