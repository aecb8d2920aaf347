package schemas

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/lakewap/lakewap/schemas/registrytest"
)

const topic = "wap.events"

// codecs returns a single-object codec and a Confluent codec backed by a
// fake registry, with the registry for inspection.
func codecs(t *testing.T) (soe, confluent *Codec, reg *registrytest.Server) {
	t.Helper()
	soe, err := NewCodec(Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg = registrytest.New(t)
	confluent = registryCodec(t, reg)
	return soe, confluent, reg
}

func registryCodec(t *testing.T, reg *registrytest.Server) *Codec {
	t.Helper()
	client, err := NewRegistryClient(reg.URL, reg.Client())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCodec(Options{Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTripEveryEventInBothFormats(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	events := append(sampleEvents(), minimalEvents()...)
	for _, tc := range []struct {
		name   string
		enc    *Codec
		magic  []byte
		decode func() *Codec
	}{
		{"single-object", soe, []byte{0xC3, 0x01}, func() *Codec { return soe }},
		// A fresh codec must fetch the writer schema by id from the registry.
		{"confluent", confluent, []byte{0x00}, func() *Codec { return registryCodec(t, reg) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := tc.decode()
			for _, ev := range events {
				b, err := tc.enc.Encode(ctx, topic, ev)
				if err != nil {
					t.Fatalf("encode %s: %v", ev.EventType(), err)
				}
				if !bytes.HasPrefix(b, tc.magic) {
					t.Fatalf("%s: encoded as % x..., want prefix % x", ev.EventType(), b[:min(len(b), 10)], tc.magic)
				}
				got, err := dec.Decode(ctx, b)
				if err != nil {
					t.Fatalf("decode %s: %v", ev.EventType(), err)
				}
				if !reflect.DeepEqual(got, ev) {
					t.Errorf("%s round trip:\n got %#v\nwant %#v", ev.EventType(), got, ev)
				}
			}
		})
	}
}

func TestSingleObjectHeaderIsFingerprintOfCanonicalForm(t *testing.T) {
	soe, _, _ := codecs(t)
	golden := readGolden(t)
	b, err := soe.Encode(context.Background(), topic, sampleEvents()[0])
	if err != nil {
		t.Fatal(err)
	}
	got := binary.LittleEndian.Uint64(b[2:10])
	if want := golden[TypeBatchLanded][0]; got != want {
		t.Fatalf("fingerprint in header %016x, want %016x (fastavro-checked golden)", got, want)
	}
}

func TestConfluentRegistersOncePerSubjectAndCachesIDs(t *testing.T) {
	ctx := context.Background()
	_, enc, reg := codecs(t)
	ev := sampleEvents()[0]
	var msgs [][]byte
	for range 3 {
		b, err := enc.Encode(ctx, topic, ev)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	if n := reg.Requests("register"); n != 1 {
		t.Errorf("3 encodes made %d registrations, want 1", n)
	}
	subjects := reg.Subjects()
	ids := subjects["wap.events-io.lakewap.events.BatchLanded"]
	if len(ids) != 1 || int(binary.BigEndian.Uint32(msgs[0][1:5])) != ids[0] {
		t.Fatalf("subjects %v; header id % x", subjects, msgs[0][1:5])
	}
	// The producing codec knows its own ids; a fresh one asks once.
	if _, err := enc.Decode(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if n := reg.Requests("get"); n != 0 {
		t.Errorf("decoding own message made %d registry look-ups", n)
	}
	dec := registryCodec(t, reg)
	for _, m := range msgs {
		if _, err := dec.Decode(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.Requests("get"); n != 1 {
		t.Errorf("3 decodes of one id made %d look-ups, want 1", n)
	}
}

func TestCustomSubject(t *testing.T) {
	reg := registrytest.New(t)
	client, _ := NewRegistryClient(reg.URL, reg.Client())
	c, err := NewCodec(Options{Registry: client, Subject: func(topic, typ string) string { return topic + "-value" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encode(context.Background(), "wap.results", sampleEvents()[4]); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Subjects()["wap.results-value"]; !ok {
		t.Fatalf("subjects %v", reg.Subjects())
	}
}

func TestRegistryOutages(t *testing.T) {
	ctx := context.Background()
	_, enc, reg := codecs(t)
	msg, err := enc.Encode(ctx, topic, sampleEvents()[1])
	if err != nil {
		t.Fatal(err)
	}
	dec := registryCodec(t, reg)
	reg.FailWith(http.StatusServiceUnavailable)

	_, err = dec.Decode(ctx, msg)
	var de *DecodeError
	if !errors.As(err, &de) || de.Reason != DecodeRegistryUnavailable || de.Permanent() {
		t.Fatalf("decode with registry down: %v, want transient registry_unavailable", err)
	}
	_, err = registryCodec(t, reg).Encode(ctx, "other", sampleEvents()[1])
	var ee *EncodeError
	if !errors.As(err, &ee) || ee.Reason != EncodeRegistryUnavailable || ee.Permanent() {
		t.Fatalf("encode with registry down: %v, want transient registry_unavailable", err)
	}

	// The failure must not be cached: once the registry is back it works.
	reg.FailWith(0)
	if got, err := dec.Decode(ctx, msg); err != nil || !reflect.DeepEqual(got, sampleEvents()[1]) {
		t.Fatalf("after recovery: %v %v", got, err)
	}
}

func TestRegistryStatusClassification(t *testing.T) {
	ctx := context.Background()
	_, enc, reg := codecs(t)
	msg, err := enc.Encode(ctx, topic, sampleEvents()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status          int
		encodeReason    string
		encodePermanent bool
		decodeReason    string
	}{
		{409, EncodeRegistryRejected, true, DecodeSchemaIDRefused},
		{422, EncodeRegistryRejected, true, DecodeSchemaIDRefused},
		{401, EncodeRegistryUnavailable, false, DecodeRegistryUnavailable},
		{429, EncodeRegistryUnavailable, false, DecodeRegistryUnavailable},
		{500, EncodeRegistryUnavailable, false, DecodeRegistryUnavailable},
		{404, EncodeRegistryUnavailable, false, DecodeUnknownSchemaID},
	} {
		reg.FailWith(tc.status)
		fresh := registryCodec(t, reg)
		_, err := fresh.Encode(ctx, topic, sampleEvents()[0])
		var ee *EncodeError
		if !errors.As(err, &ee) || ee.Reason != tc.encodeReason || ee.Permanent() != tc.encodePermanent {
			t.Errorf("encode on HTTP %d: %v, want %s", tc.status, err, tc.encodeReason)
		}
		_, err = fresh.Decode(ctx, msg)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != tc.decodeReason {
			t.Errorf("decode on HTTP %d: %v, want %s", tc.status, err, tc.decodeReason)
		}
	}
}

func TestRegistryUnreachable(t *testing.T) {
	reg := registrytest.New(t)
	client, _ := NewRegistryClient(reg.URL, reg.Client())
	c, _ := NewCodec(Options{Registry: client})
	reg.Close()
	_, err := c.Decode(context.Background(), []byte{0, 0, 0, 0, 101, 2})
	var de *DecodeError
	if !errors.As(err, &de) || de.Reason != DecodeRegistryUnavailable || de.Permanent() {
		t.Fatalf("closed registry: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	good, err := soe.Encode(ctx, topic, sampleEvents()[2]) // BatchCancelled ends with a long
	if err != nil {
		t.Fatal(err)
	}
	unknownFP := append([]byte{0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8}, good[10:]...)
	foreignID := reg.Register("other-value", `{"type":"record","name":"com.example.User","fields":[{"name":"id","type":"long"}]}`)
	brokenID := reg.Register("other-value", `{"type":"record","name":"io.lakewap.events.BatchCancelled","fields":[{"name":"batch_id","type":"long"}]}`)
	confluentFor := func(id int) []byte {
		return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, good[10:]...)
	}

	for _, tc := range []struct {
		name   string
		codec  *Codec
		value  []byte
		reason string
	}{
		{"empty", soe, nil, DecodeTruncated},
		{"lone C3", soe, []byte{0xC3}, DecodeTruncated},
		{"short single-object header", soe, good[:7], DecodeTruncated},
		{"body cut short", soe, good[:len(good)-1], DecodeTruncated},
		{"header only", soe, good[:10], DecodeTruncated},
		{"second magic byte wrong", soe, append([]byte{0xC3, 0x02}, good[2:]...), DecodeUnknownMagic},
		{"JSON", soe, []byte(`{"batch_id":"b1"}`), DecodeUnknownMagic},
		{"unknown fingerprint", soe, unknownFP, DecodeUnknownFingerprint},
		{"trailing bytes", soe, append(append([]byte{}, good...), 0), DecodeMalformed},
		{"too large", soe, append([]byte{0xC3, 0x01}, make([]byte, DefaultMaxMessageSize)...), DecodeMalformed},
		{"string longer than the message", soe, append(append([]byte{}, good[:10]...), 0x80, 0x01, 'a'), DecodeTruncated},
		{"string longer than the limit", soe, append(append([]byte{}, good[:10]...), 0xfe, 0xff, 0xff, 0x0f), DecodeMalformed},
		{"negative string length", soe, append(append([]byte{}, good[:10]...), 0x03), DecodeMalformed},
		{"short Confluent header", confluent, []byte{0, 0, 1}, DecodeTruncated},
		{"Confluent without registry", soe, confluentFor(100), DecodeUnknownSchemaID},
		{"unknown schema id", confluent, confluentFor(99999), DecodeUnknownSchemaID},
		{"schema id of a foreign record", confluent, confluentFor(foreignID), DecodeIncompatibleSchema},
		{"schema id of an incompatible version", confluent, confluentFor(brokenID), DecodeIncompatibleSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := tc.codec.Decode(ctx, tc.value)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, %v; want *DecodeError %s", ev, err, tc.reason)
			}
			if de.Reason != tc.reason || !de.Permanent() || ev != nil {
				t.Fatalf("got reason %q (permanent %v, event %v): %v; want %q", de.Reason, de.Permanent(), ev, err, tc.reason)
			}
		})
	}
}

// hamba can panic on hostile input; the decoder must turn any panic into a
// malformed error.
func TestDecodeRecoversFromDecoderPanics(t *testing.T) {
	soe, _, _ := codecs(t)
	boom := plan{kind: &kind{kindSpec: kindSpec{name: "Boom", decode: func(*avro.Reader, avro.Schema) Event {
		panic("boom")
	}}}}
	ev, err := soe.decodeBody(boom, []byte{0})
	var de *DecodeError
	if !errors.As(err, &de) || de.Reason != DecodeMalformed || !strings.Contains(err.Error(), "boom") || ev != nil {
		t.Fatalf("got %v, %v", ev, err)
	}
}

type bogusEvent struct{}

func (bogusEvent) EventType() string   { return "Bogus" }
func (bogusEvent) Batch() string       { return "b" }
func (bogusEvent) DatasetName() string { return "" }
func (bogusEvent) ID() string          { return "" }

func TestEncodeErrors(t *testing.T) {
	soe, _, _ := codecs(t)
	for _, ev := range []Event{nil, bogusEvent{}} {
		_, err := soe.Encode(context.Background(), topic, ev)
		var ee *EncodeError
		if !errors.As(err, &ee) || ee.Reason != EncodeInvalidEvent || !ee.Permanent() {
			t.Errorf("Encode(%v) = %v, want permanent invalid_event", ev, err)
		}
	}
}

func TestHeaders(t *testing.T) {
	for _, ev := range sampleEvents() {
		h := Headers(ev)
		if h[HeaderEventType] != ev.EventType() || h[HeaderBatchID] != ev.Batch() {
			t.Errorf("%T: headers %v", ev, h)
		}
	}
}

func TestConcurrentDecode(t *testing.T) {
	ctx := context.Background()
	_, enc, reg := codecs(t)
	var msgs [][]byte
	for _, ev := range sampleEvents() {
		b, err := enc.Encode(ctx, topic, ev)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	dec := registryCodec(t, reg)
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(msgs))
	for range 8 {
		wg.Go(func() {
			for i, m := range msgs {
				ev, err := dec.Decode(ctx, m)
				if err == nil && !reflect.DeepEqual(ev, sampleEvents()[i]) {
					err = errors.New("wrong event " + ev.EventType())
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Concurrent first look-ups may race; the cache bounds them per id.
	if n := reg.Requests("get"); n < len(msgs) || n > 8*len(msgs) {
		t.Errorf("%d look-ups for %d ids", n, len(msgs))
	}
}
