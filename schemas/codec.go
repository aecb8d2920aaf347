package schemas

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
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
	DecodeTruncated          = "truncated"
	DecodeUnknownMagic       = "unknown_magic"
	DecodeUnknownFingerprint = "unknown_fingerprint"
	DecodeUnknownSchemaID    = "unknown_schema_id"
	// DecodeSchemaIDRefused: the registry answered the schema id with a
	// client error other than 404 that asking again will not change (400,
	// 410, 422, ...; registryRefusesID).
	DecodeSchemaIDRefused     = "schema_id_refused"
	DecodeRegistryUnavailable = "registry_unavailable"
	DecodeMalformed           = "malformed"
	// DecodeIncompatibleSchema: the writer schema is known but is not a
	// lakewap event or cannot be resolved into the current reader schema.
	DecodeIncompatibleSchema = "incompatible_schema"
	// DecodeTooManySchemas is no longer given (a Codec keeps the schema
	// ids it used last, and lets go of the others); kept for readers of
	// older dead letters.
	DecodeTooManySchemas = "too_many_schemas"
)

// maxSchemaIDs bounds the schema ids a Codec keeps, readable or not, the
// most recently used: a producer that may register schemas could make one
// per message. An id let go is asked of the registry again when a message
// names it. It also bounds the decoders the Avro API keeps for writer
// schemas resolved since it was made (Codec.fresh).
const maxSchemaIDs = 1024

// missingFor is how long the registry's "no such schema id" is believed:
// messages naming that id in the meantime are dead-lettered without asking
// again (a producer sending junk ids, or another registry's, made one call
// per message). At most maxSchemaIDs such ids are kept. An id the registry
// gets later (a replica catching up) is read once this time is over; it is
// short because the records naming a new id in the meantime are
// dead-lettered too (a producer that registers a schema and sends at once,
// to a registry whose replica lags).
const missingFor = 2 * time.Second

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
	// api is the Avro configuration; it keeps a decoder per writer schema
	// it read, so it is made again after maxSchemaIDs new ones (fresh).
	api        atomic.Pointer[frozenAPI]
	set        *schemaSet
	reg        RegistryClient
	subject    func(topic, eventType string) string
	regTimeout time.Duration

	mu       sync.Mutex
	ids      map[string]int // subject -> schema id of the current schema, from Encode
	resolved *idCache       // schema id -> decoding plan, or why it cannot be read
	fresh    int            // writer schemas resolved since api was made
	missing  *idCache       // schema id -> the registry's "no such id", until its entry's until
	now      func() time.Time
}

type frozenAPI struct{ avro.API }

func newAPI() *frozenAPI {
	return &frozenAPI{avro.Config{
		TagKey:            "avro",
		MaxByteSliceSize:  DefaultMaxMessageSize,
		MaxSliceAllocSize: maxArrayItems,
	}.Freeze()}
}

// idCache holds the schema ids used last: at most max, the one used
// longest ago let go first.
type idCache struct {
	max   int
	m     map[int]*list.Element
	order *list.List // of *idEntry, most recently used first
}

type idEntry struct {
	id    int
	p     plan
	err   error     // the registry's schema for id cannot be read, or it has none
	until time.Time // for an id the registry has none of: when to ask again
}

func newIDCache(max int) *idCache {
	return &idCache{max: max, m: map[int]*list.Element{}, order: list.New()}
}

func (c *idCache) Len() int { return len(c.m) }

func (c *idCache) get(id int) (*idEntry, bool) {
	e, ok := c.m[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*idEntry), true
}

// readable is the id used last, other than not, whose schema was read.
func (c *idCache) readable(not int) (int, bool) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		if x := e.Value.(*idEntry); x.err == nil && x.id != not {
			return x.id, true
		}
	}
	return 0, false
}

func (c *idCache) put(x *idEntry) {
	if e, ok := c.m[x.id]; ok {
		e.Value = x
		c.order.MoveToFront(e)
		return
	}
	c.m[x.id] = c.order.PushFront(x)
	for len(c.m) > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.m, last.Value.(*idEntry).id)
	}
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
		resolved:   newIDCache(maxSchemaIDs),
		missing:    newIDCache(maxSchemaIDs),
		now:        time.Now,
	}
	if c.subject == nil {
		c.subject = func(topic, eventType string) string { return topic + "-" + Namespace + "." + eventType }
	}
	if c.regTimeout <= 0 {
		c.regTimeout = defaultRegistryTimeout
	}
	c.api.Store(newAPI())
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
	body, err := c.api.Load().Marshal(k.schema, ev)
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
	c.resolved.put(&idEntry{id: id, p: plan{kind: k, schema: k.schema}})
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
	e, ok := c.resolved.get(id)
	if !ok {
		if m, found := c.missing.get(id); found && c.now().Before(m.until) {
			e, ok = m, true
		}
	}
	c.mu.Unlock()
	switch {
	case ok && e.err != nil:
		return plan{}, e.err
	case ok:
		return e.p, nil
	case c.reg == nil:
		return plan{}, decodeErr(DecodeUnknownSchemaID, "schema id %d: no schema registry configured", id)
	}
	ctx, cancel := context.WithTimeout(ctx, c.regTimeout)
	defer cancel()
	w, err := c.reg.GetSchema(ctx, id)
	if err != nil {
		switch {
		case registryNotFound(err):
			missing := decodeErr(DecodeUnknownSchemaID, "schema id %d: %w", id, err)
			c.mu.Lock()
			c.missing.put(&idEntry{id: id, err: missing, until: c.now().Add(missingFor)})
			c.mu.Unlock()
			return plan{}, missing
		case registryRefusesID(err):
			// Remembered as a missing id is: a producer naming it again
			// within missingFor costs no registry call.
			status, _ := registryStatus(err)
			refused := decodeErr(DecodeSchemaIDRefused, "schema id %d: the registry refuses it (HTTP %d): %w", id, status, err)
			c.mu.Lock()
			c.missing.put(&idEntry{id: id, err: refused, until: c.now().Add(missingFor)})
			c.mu.Unlock()
			return plan{}, refused
		case registryForbidden(err):
			if known, served := c.servesAnother(ctx, id); served {
				refused := decodeErr(DecodeSchemaIDRefused, "schema id %d: the registry refuses it to lakewap (HTTP 403) while it serves schema id %d: %w", id, known, err)
				c.mu.Lock()
				c.missing.put(&idEntry{id: id, err: refused, until: c.now().Add(missingFor)})
				c.mu.Unlock()
				return plan{}, refused
			}
			return plan{}, decodeErr(DecodeRegistryUnavailable, "schema id %d: %w", id, err)
		case registryUnreachable(err):
			return plan{}, decodeErr(DecodeRegistryUnavailable, "schema id %d: %w", id, err)
		}
		// The registry answered, but with something that is not a schema;
		// its answer for an id does not change: not asked again.
		return plan{}, c.unreadable(id, err)
	}
	if w == nil {
		return plan{}, c.unreadable(id, errors.New("registry returned no schema"))
	}
	p, known := c.set.writers[Fingerprint(w)]
	if !known {
		if p, err = c.set.planFor(w); err != nil {
			return plan{}, c.unreadable(id, err)
		}
	}
	c.mu.Lock()
	c.resolved.put(&idEntry{id: id, p: p})
	if !known {
		// A writer schema of its own: the API keeps a decoder for it.
		if c.fresh++; c.fresh >= maxSchemaIDs {
			c.api.Store(newAPI())
			c.fresh = 0
		}
	}
	c.mu.Unlock()
	return p, nil
}

// servesAnother asks the registry again for the schema id read last
// other than id: whether it still serves lakewap. A registry with access
// control answers 403 for an id under a subject lakewap may not read, and
// a producer may name one (its own subject's); a 403 for every id is
// lakewap's credentials (being rotated), which may heal.
func (c *Codec) servesAnother(ctx context.Context, id int) (int, bool) {
	c.mu.Lock()
	known, ok := c.resolved.readable(id)
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	_, err := c.reg.GetSchema(ctx, known)
	return known, err == nil
}

// unreadable remembers that id's schema cannot be read, and why.
func (c *Codec) unreadable(id int, err error) error {
	bad := decodeErr(DecodeIncompatibleSchema, "schema id %d: %w", id, err)
	c.mu.Lock()
	c.resolved.put(&idEntry{id: id, err: bad})
	c.mu.Unlock()
	return bad
}

// decodeBody decodes an Avro body. hamba can panic on hostile input (e.g. a
// negative block count), so a panic becomes a malformed error.
func (c *Codec) decodeBody(p plan, body []byte) (ev Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, decodeErr(DecodeMalformed, "avro decoder panicked: %v", r)
		}
	}()
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(c.api.Load().API)).Reset(body)
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
