package schemas

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
)

const (
	// Wire format markers.
	singleObjectMagic0 = 0xC3
	singleObjectMagic1 = 0x01
	confluentMagic     = 0x00
	singleObjectHeader = 10 // C3 01 + 8-byte fingerprint
	confluentHeader    = 5  // 00 + 4-byte schema id

	// DefaultMaxMessageSize bounds the values Decode accepts.
	DefaultMaxMessageSize = 1 << 20
	// maxArrayItems bounds the elements of one decoded array, so that a
	// corrupt block count cannot make the decoder allocate gigabytes.
	maxArrayItems = 1 << 16
	// defaultRegistryTimeout bounds one registry call when the caller's
	// context has a longer (or no) deadline.
	defaultRegistryTimeout = 10 * time.Second
)

// HeaderBatchID is the Kafka header carrying the batch id (also the key).
const HeaderBatchID = "wap.batch_id"

// Decode error reasons, carried by DecodeError.Reason (and by dead letters).
const (
	DecodeTruncated           = "truncated"
	DecodeUnknownMagic        = "unknown_magic"
	DecodeUnknownFingerprint  = "unknown_fingerprint"
	DecodeUnknownSchemaID     = "unknown_schema_id"
	DecodeRegistryUnavailable = "registry_unavailable"
	DecodeMalformed           = "malformed"
	// DecodeIncompatibleSchema: the writer schema is known but is not a
	// lakewap event or cannot be resolved into the current reader schema.
	DecodeIncompatibleSchema = "incompatible_schema"
	// DecodeTooManySchemas: the value names a schema id past the most a
	// codec resolves (maxSchemaIDs).
	DecodeTooManySchemas = "too_many_schemas"
)

// maxSchemaIDs bounds the schema ids a Codec resolves with the registry
// in its life, readable or not: each one is kept (its plan, the registry
// client's copy, the Avro parser's named types), and a producer that may
// register schemas could make one per message.
const maxSchemaIDs = 1024

// DecodeError says why a value could not be decoded. Only
// registry_unavailable is transient: the consumer retries the message rather
// than dead-lettering it.
type DecodeError struct {
	Reason string
	Err    error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("decode event: %s: %v", e.Reason, e.Err) }
func (e *DecodeError) Unwrap() error { return e.Err }

// Permanent reports whether retrying the same bytes can never succeed.
func (e *DecodeError) Permanent() bool { return e.Reason != DecodeRegistryUnavailable }

func decodeErr(reason string, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Encode error reasons, carried by EncodeError.Reason.
const (
	EncodeInvalidEvent        = "invalid_event"
	EncodeRegistryUnavailable = "registry_unavailable"
	EncodeRegistryRejected    = "registry_rejected"
)

// EncodeError says why an event could not be encoded. Only
// registry_unavailable is transient.
type EncodeError struct {
	Reason string
	Err    error
}

func (e *EncodeError) Error() string { return fmt.Sprintf("encode event: %s: %v", e.Reason, e.Err) }
func (e *EncodeError) Unwrap() error { return e.Err }

// Permanent reports whether retrying the same event can never succeed.
func (e *EncodeError) Permanent() bool { return e.Reason != EncodeRegistryUnavailable }

// Options configure a Codec.
type Options struct {
	// Registry, when set, selects the Confluent wire format for Encode
	// (schemas registered on first use). Nil selects Avro single-object
	// encoding. Decode accepts both formats either way, but needs a registry
	// for Confluent-framed values it did not produce itself.
	Registry RegistryClient
	// Subject names the registry subject of an event type on a topic. The
	// default is TopicRecordNameStrategy: "<topic>-io.lakewap.events.<Type>".
	Subject func(topic, eventType string) string
	// WriterSchemas are extra self-contained writer schemas (Avro JSON), e.g.
	// a newer producer's, that Decode accepts besides the embedded ones: a
	// single-object value carries only a fingerprint. Each must resolve into
	// the current schema of its event type.
	WriterSchemas []string
	// RegistryTimeout bounds one registry call; 0 means 10s.
	RegistryTimeout time.Duration
}

// Codec encodes and decodes lakewap events. It is safe for concurrent use.
type Codec struct {
	api        avro.API
	set        *schemaSet
	reg        RegistryClient
	subject    func(topic, eventType string) string
	regTimeout time.Duration

	mu    sync.Mutex
	ids   map[string]int // subject -> schema id of the current schema, from Encode
	byID  map[int]plan   // schema id -> decoding plan
	badID map[int]error  // schema id the registry gave a schema for that cannot be read -> its error
}

// NewCodec returns a Codec over the embedded schemas.
func NewCodec(opts Options) (*Codec, error) {
	set, err := defaultSchemaSet(opts.WriterSchemas)
	if err != nil {
		return nil, err
	}
	return newCodec(opts, set), nil
}

func newCodec(opts Options, set *schemaSet) *Codec {
	c := &Codec{
		set:        set,
		reg:        opts.Registry,
		subject:    opts.Subject,
		regTimeout: opts.RegistryTimeout,
		ids:        map[string]int{},
		byID:       map[int]plan{},
		badID:      map[int]error{},
	}
	if c.subject == nil {
		c.subject = func(topic, eventType string) string { return topic + "-" + Namespace + "." + eventType }
	}
	if c.regTimeout <= 0 {
		c.regTimeout = defaultRegistryTimeout
	}
	c.api = avro.Config{
		TagKey:            "avro",
		MaxByteSliceSize:  DefaultMaxMessageSize,
		MaxSliceAllocSize: maxArrayItems,
	}.Freeze()
	return c
}

// Headers returns the Kafka headers to send with ev.
func Headers(ev Event) map[string]string {
	return map[string]string{HeaderEventType: ev.EventType(), HeaderBatchID: ev.Batch()}
}

// Encode serialises ev in the codec's wire format. With a registry the
// current schema is registered under Subject(topic, type) on first use and
// its id cached.
func (c *Codec) Encode(ctx context.Context, topic string, ev Event) ([]byte, error) {
	if ev == nil {
		return nil, &EncodeError{Reason: EncodeInvalidEvent, Err: errors.New("nil event")}
	}
	k, ok := c.set.kinds[ev.EventType()]
	if !ok {
		return nil, &EncodeError{Reason: EncodeInvalidEvent, Err: fmt.Errorf("unknown event type %q", ev.EventType())}
	}
	body, err := c.api.Marshal(k.schema, ev)
	if err != nil {
		return nil, &EncodeError{Reason: EncodeInvalidEvent, Err: err}
	}
	if c.reg == nil {
		out := append(make([]byte, 0, singleObjectHeader+len(body)), singleObjectMagic0, singleObjectMagic1)
		return append(binary.LittleEndian.AppendUint64(out, k.fp), body...), nil
	}
	id, err := c.schemaID(ctx, topic, k)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, confluentHeader+len(body)), confluentMagic)
	return append(binary.BigEndian.AppendUint32(out, uint32(id)), body...), nil
}

func (c *Codec) schemaID(ctx context.Context, topic string, k *kind) (int, error) {
	subject := c.subject(topic, k.name)
	c.mu.Lock()
	id, ok := c.ids[subject]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.regTimeout)
	defer cancel()
	id, _, err := c.reg.CreateSchema(ctx, subject, k.text)
	if err != nil {
		reason := EncodeRegistryUnavailable
		if registryRejected(err) {
			reason = EncodeRegistryRejected
		}
		return 0, &EncodeError{Reason: reason, Err: fmt.Errorf("register %s: %w", subject, err)}
	}
	c.mu.Lock()
	c.ids[subject] = id
	c.byID[id] = plan{kind: k, schema: k.schema}
	c.mu.Unlock()
	return id, nil
}

// Decode reads a value in either wire format, finds its writer schema (by
// fingerprint among the known schemas, or by id from the registry) and
// decodes it with schema resolution into the current Go type, returned as a
// value (BatchLanded, not *BatchLanded). Errors are *DecodeError.
func (c *Codec) Decode(ctx context.Context, value []byte) (Event, error) {
	if len(value) > DefaultMaxMessageSize {
		return nil, decodeErr(DecodeMalformed, "value of %d bytes exceeds the %d-byte limit", len(value), DefaultMaxMessageSize)
	}
	if len(value) == 0 {
		return nil, decodeErr(DecodeTruncated, "empty value")
	}
	switch value[0] {
	case singleObjectMagic0:
		if len(value) < 2 {
			return nil, decodeErr(DecodeTruncated, "%d-byte value", len(value))
		}
		if value[1] != singleObjectMagic1 {
			return nil, decodeErr(DecodeUnknownMagic, "magic %02x %02x", value[0], value[1])
		}
		if len(value) < singleObjectHeader {
			return nil, decodeErr(DecodeTruncated, "single-object header needs %d bytes, got %d", singleObjectHeader, len(value))
		}
		fp := binary.LittleEndian.Uint64(value[2:singleObjectHeader])
		p, ok := c.set.writers[fp]
		if !ok {
			return nil, decodeErr(DecodeUnknownFingerprint, "no known schema has fingerprint %016x", fp)
		}
		return c.decodeBody(p, value[singleObjectHeader:])
	case confluentMagic:
		if len(value) < confluentHeader {
			return nil, decodeErr(DecodeTruncated, "Confluent header needs %d bytes, got %d", confluentHeader, len(value))
		}
		id := int(binary.BigEndian.Uint32(value[1:confluentHeader]))
		p, err := c.planByID(ctx, id)
		if err != nil {
			return nil, err
		}
		return c.decodeBody(p, value[confluentHeader:])
	default:
		return nil, decodeErr(DecodeUnknownMagic, "first byte %02x is neither single-object (c3 01) nor Confluent (00)", value[0])
	}
}

func (c *Codec) planByID(ctx context.Context, id int) (plan, error) {
	c.mu.Lock()
	p, ok := c.byID[id]
	bad := c.badID[id]
	full := len(c.byID)+len(c.badID) >= maxSchemaIDs
	c.mu.Unlock()
	switch {
	case ok:
		return p, nil
	case bad != nil:
		return plan{}, bad
	case c.reg == nil:
		return plan{}, decodeErr(DecodeUnknownSchemaID, "schema id %d: no schema registry configured", id)
	case full:
		return plan{}, decodeErr(DecodeTooManySchemas, "schema id %d: this process has resolved %d schema ids, the most it takes (a producer registering a schema per message?)", id, maxSchemaIDs)
	}
	ctx, cancel := context.WithTimeout(ctx, c.regTimeout)
	defer cancel()
	w, err := c.reg.GetSchema(ctx, id)
	if err != nil {
		reason := DecodeIncompatibleSchema // the registry answered, but with something that is not a schema
		switch {
		case registryNotFound(err):
			reason = DecodeUnknownSchemaID
		case registryUnreachable(err):
			reason = DecodeRegistryUnavailable
		}
		return plan{}, decodeErr(reason, "schema id %d: %w", id, err)
	}
	if w == nil {
		return plan{}, decodeErr(DecodeIncompatibleSchema, "schema id %d: registry returned no schema", id)
	}
	if known, ok := c.set.writers[Fingerprint(w)]; ok {
		p = known
	} else if p, err = c.set.planFor(w); err != nil {
		// The registry's answer for an id does not change: not asked again.
		bad := decodeErr(DecodeIncompatibleSchema, "schema id %d: %w", id, err)
		c.mu.Lock()
		c.badID[id] = bad
		c.mu.Unlock()
		return plan{}, bad
	}
	c.mu.Lock()
	c.byID[id] = p
	c.mu.Unlock()
	return p, nil
}

// decodeBody decodes an Avro body. hamba can panic on hostile input (e.g. a
// negative block count), so a panic becomes a malformed error.
func (c *Codec) decodeBody(p plan, body []byte) (ev Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, decodeErr(DecodeMalformed, "avro decoder panicked: %v", r)
		}
	}()
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(c.api)).Reset(body)
	if p.decode != nil {
		ev = p.decode(r, p.schema)
	} else {
		ev = p.kind.decode(r, p.schema)
	}
	if r.Error != nil {
		// hamba's Unmarshal treats running out of bytes as success; here it
		// is an error.
		reason := DecodeMalformed
		if errors.Is(r.Error, io.EOF) || errors.Is(r.Error, io.ErrUnexpectedEOF) {
			reason = DecodeTruncated
		}
		return nil, decodeErr(reason, "%s body: %w", p.kind.name, r.Error)
	}
	if r.Peek(); r.Error == nil {
		return nil, decodeErr(DecodeMalformed, "%s body: trailing bytes after the record", p.kind.name)
	}
	return ev, nil
}
