package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// The AsyncAPI 3.0 document of lakewap's topics (docs/reference/asyncapi.yaml),
// written from the same sources as events.md: the topics' config defaults,
// the Header* constants and the self-contained Avro schemas. It describes
// lakewap the application: it receives on the input and requests topics and
// sends on the results, dead-letter and changelog topics.

// asyncChannel is one topic of the document.
type asyncChannel struct {
	id, configKey, description string
	action                     string   // lakewap's: receive or send
	events                     []string // Avro event types; none for the dead letters and the changelog
	headers                    []string // header names its messages may carry
	key                        string   // what the Kafka key is
}

// asyncChannels are lakewap's topics; every Header* constant of headerDirs
// must be on at least one of them (asyncapiDoc fails otherwise).
func asyncChannels() []asyncChannel {
	trace := []string{schemas.HeaderTraceParent, schemas.HeaderTraceState}
	input := append([]string{schemas.HeaderEventType, schemas.HeaderBatchID}, trace...)
	return []asyncChannel{
		{id: "input", configKey: "kafka.input_topic", action: "receive",
			description: "Producers' events. Keyed by batch id, so that a batch's events land on one partition in order; an input whose key is not its batch id is dead-lettered.",
			events:      []string{schemas.TypeBatchLanded, schemas.TypeWriteComplete, schemas.TypeBatchCancelled},
			headers:     input, key: "The batch id."},
		{id: "requests", configKey: "kafka.requests_topic", action: "receive",
			description: "Operators' requests (lakewap retry, revert, cancel), signed with wap.signature and wap.operator when the config lists operators.",
			events:      []string{schemas.TypeRetryRequested, schemas.TypeRevertRequested, schemas.TypeBatchCancelled},
			headers:     append(slices.Clone(input), schemas.HeaderSignature, schemas.HeaderOperator), key: "The batch id."},
		{id: "results", configKey: "kafka.results_topic", action: "send",
			description: "lakewap's outcomes. Every event has a stable event_id (also in the wap.event_id and ce_id headers): the same outcome sent again has the same id, so consumers drop duplicates by it.",
			events: []string{schemas.TypeBranchReady, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed,
				schemas.TypeBatchReverted, schemas.TypeRequestRefused, schemas.TypeUnattestedChange},
			headers: append([]string{"ce_id", "ce_source", "ce_specversion", "ce_subject", "ce_time", "ce_type", "content-type",
				"wap.event_id", schemas.HeaderEventType, schemas.HeaderBatchID, schemas.HeaderRequestID}, trace...),
			key: "The batch id."},
		{id: "deadLetters", configKey: "kafka.dead_letter_topic", action: "send",
			description: "Inputs lakewap could not take: the original key, value and headers as they came (but headers named wap.dlq.*, which are lakewap's alone), with the wap.dlq.* headers added.",
			headers: []string{"wap.dlq.topic", "wap.dlq.partition", "wap.dlq.offset", "wap.dlq.time", "wap.dlq.reason",
				"wap.dlq.error", "wap.dlq.dropped"},
			key: "The original message's key."},
		{id: "changelog", configKey: "kafka.changelog_topic", action: "send",
			description: "lakewap's run state, a compacted topic read back at start-up. lakewap's own, not a contract: do not produce to it or depend on its values.",
			key:         "Dataset and batch id."},
	}
}

var releaseRE = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`)

// asyncapiDoc is docs/reference/asyncapi.yaml.
func asyncapiDoc(root string) ([]byte, error) {
	var c config.Config
	c.Defaults()
	k := c.Kafka
	topics := map[string]string{"kafka.input_topic": k.InputTopic, "kafka.requests_topic": k.RequestsTopic,
		"kafka.results_topic": k.ResultsTopic, "kafka.dead_letter_topic": k.DeadLetterTopic, "kafka.changelog_topic": k.ChangelogTopic}
	headers, err := Headers(root)
	if err != nil {
		return nil, err
	}
	doc := map[string]string{}
	for _, h := range headers {
		doc[h.Name] = h.Doc
	}
	// The version is the latest release of CHANGELOG.md.
	changes, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return nil, err
	}
	m := releaseRE.FindSubmatch(changes)
	if m == nil {
		return nil, fmt.Errorf("CHANGELOG.md names no release (## [x.y.z])")
	}

	channels, operations := node(), node()
	messages := node()
	used := map[string]bool{}
	seenMsg := map[string]bool{}
	for _, ch := range asyncChannels() {
		topic, ok := topics[ch.configKey]
		if !ok {
			return nil, fmt.Errorf("asyncapi: no topic config key %s", ch.configKey)
		}
		msgs := node()
		var opMsgs []any
		names := ch.events
		if len(names) == 0 {
			names = []string{map[string]string{"deadLetters": "DeadLetter", "changelog": "RunState"}[ch.id]}
		}
		for _, n := range names {
			msgs.set(n, ref("#/components/messages/"+ch.id+n))
			opMsgs = append(opMsgs, ref("#/channels/"+ch.id+"/messages/"+n))
			msg, err := asyncMessage(ch, n, doc)
			if err != nil {
				return nil, err
			}
			messages.set(ch.id+n, msg)
			seenMsg[n] = true
		}
		for _, h := range ch.headers {
			if _, ok := doc[h]; !ok {
				return nil, fmt.Errorf("asyncapi: channel %s lists header %s, which no Header constant names", ch.id, h)
			}
			used[h] = true
		}
		channels.set(ch.id, node().
			set("address", topic).
			set("title", topic).
			set("description", ch.description+" Topic set by "+ch.configKey+" (default "+topic+").").
			set("messages", msgs).
			set("bindings", node().set("kafka", node().set("topic", topic).set("bindingVersion", "0.5.0"))))
		verb := map[string]string{"receive": "Receives", "send": "Sends"}[ch.action]
		operations.set(ch.action+upper(ch.id), node().
			set("action", ch.action).
			set("channel", ref("#/channels/"+ch.id)).
			set("summary", verb+" on "+topic+".").
			set("messages", opMsgs))
	}
	for _, h := range headers {
		if !used[h.Name] {
			return nil, fmt.Errorf("asyncapi: header %s (%s) is on no channel: add it to asyncChannels", h.Name, h.Const)
		}
	}
	for _, t := range schemas.EventTypes() {
		if !seenMsg[t] {
			return nil, fmt.Errorf("asyncapi: event %s is on no channel: add it to asyncChannels", t)
		}
	}

	top := node().
		set("asyncapi", "3.0.0").
		set("info", node().
			set("title", "lakewap").
			set("version", string(m[1])).
			set("description", "Write-Audit-Publish for lakeFS, driven by Kafka: the topics lakewap reads and writes, with their keys, headers and Avro schemas (namespace "+schemas.Namespace+").\n\n"+
				"Values are Avro. Without a schema registry: single-object encoding (C3 01, the 8-byte little-endian CRC-64-AVRO fingerprint of the schema, the body). "+
				"With kafka.schema_registry_url: the Confluent wire format (00, the 4-byte big-endian schema id, the body). lakewap reads both either way.\n\n"+
				"Generated by `go run ./cmd/lakewap reference` from the code; do not edit. See docs/reference/events.md.").
			set("license", node().set("name", "Apache-2.0").set("url", "https://www.apache.org/licenses/LICENSE-2.0"))).
		set("defaultContentType", "application/avro").
		set("channels", channels).
		set("operations", operations).
		set("components", node().set("messages", messages))
	var b bytes.Buffer
	b.WriteString("# Generated by `go run ./cmd/lakewap reference` from the code; do not edit.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(top.n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// asyncMessage is the message of event (or DeadLetter, RunState) on ch.
func asyncMessage(ch asyncChannel, event string, doc map[string]string) (*ynode, error) {
	props := node()
	for _, h := range ch.headers {
		props.set(h, node().set("type", "string").set("description", doc[h]))
	}
	msg := node().set("name", event).set("title", event)
	if len(ch.headers) > 0 {
		msg.set("headers", node().set("type", "object").set("properties", props))
	}
	msg.set("bindings", node().set("kafka", node().
		set("key", node().set("type", "string").set("description", ch.key)).
		set("bindingVersion", "0.5.0")))
	switch ch.id {
	case "deadLetters":
		return msg.set("summary", "An input as it came (any bytes), with the reason it was dead-lettered in the headers.").
			set("contentType", "application/octet-stream").
			set("payload", node().set("type", "string").set("format", "binary")), nil
	case "changelog":
		return msg.set("summary", "A run's state (a tombstone deletes it); internal to lakewap.").
			set("contentType", "application/octet-stream").
			set("payload", node().set("type", "string").set("format", "binary")), nil
	}
	text, err := schemas.SchemaText(event)
	if err != nil {
		return nil, err
	}
	var schema any
	if err := json.Unmarshal([]byte(text), &schema); err != nil {
		return nil, fmt.Errorf("asyncapi: %s: %w", event, err)
	}
	summary := ""
	if s, ok := schema.(map[string]any); ok {
		summary, _ = s["doc"].(string)
	}
	return msg.set("summary", summary).
		set("contentType", "application/avro").
		set("payload", node().
			set("schemaFormat", "application/vnd.apache.avro;version=1.9.0").
			set("schema", schema)), nil
}

// ynode is a YAML mapping that keeps its keys in the order they are set.
type ynode struct{ n *yaml.Node }

func node() *ynode { return &ynode{&yaml.Node{Kind: yaml.MappingNode}} }

func ref(to string) *ynode { return node().set("$ref", to) }

func (y *ynode) set(key string, v any) *ynode {
	var val *yaml.Node
	switch x := v.(type) {
	case *ynode:
		val = x.n
	default:
		val = &yaml.Node{}
		if err := val.Encode(toNodes(v)); err != nil {
			panic(err) // only values built here
		}
	}
	y.n.Content = append(y.n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, val)
	return y
}

// toNodes turns the *ynode values inside slices into yaml.Nodes.
func toNodes(v any) any {
	if s, ok := v.([]any); ok {
		out := make([]any, len(s))
		for i, x := range s {
			if y, ok := x.(*ynode); ok {
				out[i] = y.n
			} else {
				out[i] = toNodes(x)
			}
		}
		return out
	}
	return v
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
