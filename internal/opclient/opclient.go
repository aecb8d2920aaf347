// Package opclient is the operator's client to lakewap's Kafka topics (lakewap
// emit, tail, retry, cancel, revert, janitor): it connects as a config or flags
// say, reads JSON events, checks and sends them as upstream does, reads topics,
// and asks the daemon (a request, then the result event carrying its id).
package opclient

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// Target is a connection to Kafka (and maybe a schema registry).
type Target struct {
	Config *config.Config // without a config file, the defaults and the brokers
	kafka  *kafka.Client
	codec  *schemas.Codec
	// signer signs the operator requests Send writes (SignAs).
	signer struct {
		name string
		key  []byte
	}
	cluster *string // the cluster's id, once asked (signatures name it)
}

// SignAs makes Send sign operator requests with the key of operator name
// (the wap.operator and wap.signature headers), as a daemon whose config
// lists operators requires.
func (t *Target) SignAs(name string, key []byte) {
	t.signer.name, t.signer.key = name, key
}

// Flags say where a command connects (lakewap emit, tail): flags, else a
// lakewap config.
type Flags struct {
	Brokers, Topic, Registry, Config string
}

// Register defines the flags on fs, with their values so far as defaults.
func (f *Flags) Register(fs *flag.FlagSet, topicHelp string) {
	fs.StringVar(&f.Brokers, "brokers", f.Brokers, "comma-separated Kafka `brokers` (default: the config's, else 127.0.0.1:9092)")
	fs.StringVar(&f.Topic, "topic", f.Topic, topicHelp)
	fs.StringVar(&f.Registry, "registry", f.Registry, "schema registry `URL` (default: the config's kafka.schema_registry_url)")
	fs.StringVar(&f.Config, "config", f.Config, "config `FILE` to take brokers, security, topics, registry and datasets from: the daemon's, or a client config with only a kafka section")
}

// Connect connects as the flags say.
func (f Flags) Connect() (*Target, error) { return Connect(f.Config, SplitList(f.Brokers), f.Registry) }

// Connect connects as the config file at path says (when path is not
// empty; a client config with only a kafka section will do, see
// config.LoadClient), with brokers and registry, when given, overriding it.
func Connect(path string, brokers []string, registry string) (*Target, error) {
	cfg := &config.Config{}
	if cfg.Defaults(); path != "" {
		var err error
		if cfg, err = config.LoadClient(path); err != nil {
			return nil, fmt.Errorf("config %s:\n%w", path, err)
		}
	}
	if len(brokers) > 0 {
		cfg.Kafka.Brokers = brokers
	}
	return Of(cfg, registry)
}

// Of connects to the Kafka (and registry, unless registry overrides it) of
// cfg, with its security settings.
func Of(cfg *config.Config, registry string) (*Target, error) {
	t := &Target{Config: cfg}
	brokers := cfg.Kafka.Brokers
	if len(brokers) == 0 {
		brokers = []string{"127.0.0.1:9092"}
	}
	s, err := cfg.Kafka.Security()
	if err != nil {
		return nil, err
	}
	if t.kafka, err = kafka.NewClient(brokers, s); err != nil {
		return nil, err
	}
	if t.codec, err = (config.Kafka{SchemaRegistry: cmp.Or(registry, cfg.Kafka.SchemaRegistry)}).Codec(); err != nil {
		return nil, err
	}
	return t, nil
}

// Close closes the idle connections.
func (t *Target) Close() { t.kafka.Close() }

// ReadEventsFile reads the JSON events of path ("-" is stdin).
func ReadEventsFile(path string, now time.Time) ([]schemas.Event, error) {
	if path == "-" {
		return ReadEvents(os.Stdin, now)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadEvents(f, now)
}

// ReadEvents reads concatenated JSON documents (one per line or spread over
// lines), each an event with a "type" field naming its type. An input event
// without occurred_at gets now.
func ReadEvents(r io.Reader, now time.Time) ([]schemas.Event, error) {
	dec := json.NewDecoder(r)
	fold := strings.NewReplacer("-", "", "_", "")
	var out []schemas.Event
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("JSON document %d: %w", n, err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("JSON document %d: want an object: %w", n, err)
		}
		var typ string
		if err := json.Unmarshal(fields["type"], &typ); err != nil || typ == "" {
			return nil, fmt.Errorf("JSON document %d: no \"type\" naming the event (BatchLanded, WriteComplete, BatchCancelled)", n)
		}
		delete(fields, "type")
		isInput := slices.ContainsFunc(schemas.InputTypes(), func(t string) bool { return strings.EqualFold(t, fold.Replace(typ)) })
		if _, ok := fields["occurred_at"]; !ok && isInput {
			fields["occurred_at"], _ = json.Marshal(now)
		}
		doc, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		ev, err := schemas.FromJSON(typ, doc)
		if err != nil {
			return nil, fmt.Errorf("JSON document %d: %w", n, err)
		}
		out = append(out, ev)
	}
}

// Check validates events as the daemon would: the dataset is checked
// against the config when there is one. Result events are refused on the
// input topic, where the daemon would dead-letter them.
func (t *Target) Check(events []schemas.Event, topic string, now time.Time) error {
	var known func(string) bool // without a config file, any dataset
	if len(t.Config.Datasets) > 0 {
		known = func(d string) bool { _, ok := t.Config.Datasets[d]; return ok }
	}
	var errs []error
	for i, ev := range events {
		if topic == t.Config.Kafka.InputTopic && !schemas.IsInput(ev) {
			errs = append(errs, fmt.Errorf("event %d: %s is a result event; lakewap reads only %s from %s",
				i+1, ev.EventType(), strings.Join(schemas.InputTypes(), ", "), topic))
			continue
		}
		if err := schemas.Validate(ev, known, now); err != nil {
			errs = append(errs, fmt.Errorf("event %d (%s %q): %w", i+1, ev.EventType(), ev.Batch(), err))
		}
	}
	return errors.Join(errs...)
}

// Emit sends events one by one, in order, and hands each to sent once the
// broker has acknowledged it.
func (t *Target) Emit(ctx context.Context, topic string, events []schemas.Event, sent func(Record) error) error {
	for i, ev := range events {
		msg, err := t.Send(ctx, topic, ev, -1)
		if err != nil {
			return fmt.Errorf("event %d (%s %q) not sent (%d sent before it): %w", i+1, ev.EventType(), ev.Batch(), i, err)
		}
		if err := sent(t.Record(ctx, msg, false)); err != nil {
			return err
		}
	}
	return nil
}

// Send writes ev as upstream writes inputs: key = batch id, type and
// batch id in headers, acknowledged by every in-sync replica; to the
// partition of its key, or to partition when that is not negative. It
// returns the message as written (with its partition and offset).
func (t *Target) Send(ctx context.Context, topic string, ev schemas.Event, partition int) (kafka.Message, error) {
	value, err := t.codec.Encode(ctx, topic, ev)
	if err != nil {
		return kafka.Message{}, err
	}
	msg := kafka.Message{Key: []byte(ev.Batch()), Value: value}
	for k, v := range schemas.Headers(ev) {
		msg.Headers = append(msg.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	if t.signer.key != nil && schemas.IsOperatorRequest(ev) {
		if t.cluster == nil {
			id, err := t.kafka.ClusterID(ctx)
			if err != nil {
				return kafka.Message{}, fmt.Errorf("signing the request: %w", err)
			}
			t.cluster = &id
		}
		scope := schemas.RequestScope{Cluster: *t.cluster, Topic: topic}
		if t.Config != nil {
			scope.Deployment = t.Config.Kafka.DeploymentID
		}
		if err := scope.Check(); err != nil {
			return kafka.Message{}, fmt.Errorf("signing the request: %w", err)
		}
		msg.Headers = append(msg.Headers, kafka.Header{Key: schemas.HeaderOperator, Value: []byte(t.signer.name)},
			kafka.Header{Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(t.signer.key, scope, string(msg.Key), value))})
	}
	return t.kafka.Send(ctx, topic, msg, partition)
}

// Record is one Kafka message as emit and tail print it.
type Record struct {
	Topic     string            `json:"topic"`
	Partition int               `json:"partition"`
	Offset    int64             `json:"offset"`
	Time      string            `json:"time,omitempty"`
	Key       string            `json:"key"`
	Type      string            `json:"type,omitempty"`
	Event     json.RawMessage   `json:"event,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// ValueBase64 is the raw value, for values that did not decode and for
	// dead letters (whose value is the original message's).
	ValueBase64 string `json:"value_base64,omitempty"`
	DecodeError string `json:"decode_error,omitempty"`
}

// Record decodes msg for printing, with its raw value when raw is set or
// the value does not decode.
func (t *Target) Record(ctx context.Context, msg kafka.Message, raw bool) Record {
	r := Record{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset, Key: string(msg.Key)}
	if !msg.Time.IsZero() {
		r.Time = msg.Time.UTC().Format(time.RFC3339Nano)
	}
	if len(msg.Headers) > 0 {
		r.Headers = make(map[string]string, len(msg.Headers))
		for _, h := range msg.Headers {
			r.Headers[h.Key] = string(h.Value)
		}
	}
	ev, err := t.codec.Decode(ctx, msg.Value)
	if err == nil {
		if r.Event, err = schemas.ToJSON(ev); err == nil {
			r.Type = ev.EventType()
		}
	}
	if err != nil {
		r.DecodeError = err.Error()
		r.Type = r.Headers[schemas.HeaderEventType]
		raw = true
	}
	if raw {
		r.ValueBase64 = base64.StdEncoding.EncodeToString(msg.Value)
	}
	return r
}
