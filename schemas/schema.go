package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/pkg/crc64"
)

// files holds the current schemas (*.avsc) and the older versions the decoder
// still accepts (history/*.avsc).
//
//go:embed *.avsc history
var files embed.FS

// kindSpec ties an event type to the Go type its records decode into.
type kindSpec struct {
	name     string
	goType   reflect.Type
	decode   func(r *avro.Reader, s avro.Schema) Event
	fromJSON func(doc []byte) (Event, error)
}

// kindOf returns the spec of event type name decoded into Go type T.
func kindOf[T Event](name string) kindSpec {
	return kindSpec{name: name, goType: reflect.TypeFor[T](), fromJSON: fromJSON[T], decode: func(r *avro.Reader, s avro.Schema) Event {
		var v T
		r.ReadVal(s, &v)
		return v
	}}
}

// currentKinds lists every event with the Go type it decodes into.
func currentKinds() []kindSpec {
	return []kindSpec{
		kindOf[BatchLanded](TypeBatchLanded),
		kindOf[WriteComplete](TypeWriteComplete),
		kindOf[BatchCancelled](TypeBatchCancelled),
		kindOf[RetryRequested](TypeRetryRequested),
		kindOf[RevertRequested](TypeRevertRequested),
		kindOf[BranchReady](TypeBranchReady),
		kindOf[BatchPublished](TypeBatchPublished),
		kindOf[BatchAborted](TypeBatchAborted),
		kindOf[BatchFailed](TypeBatchFailed),
		kindOf[BatchReverted](TypeBatchReverted),
		kindOf[RequestRefused](TypeRequestRefused),
		kindOf[UnattestedChange](TypeUnattestedChange),
	}
}

// EventTypes returns the names of all event types, inputs first.
func EventTypes() []string {
	var out []string
	for _, k := range currentKinds() {
		out = append(out, k.name)
	}
	return out
}

// kind is one event type with its current (reader) schema.
type kind struct {
	kindSpec
	schema avro.Schema // current schema: what Encode writes and Decode reads into
	text   string      // self-contained schema JSON with docs, as registered
	fp     uint64      // CRC-64-AVRO fingerprint of the parsing canonical form
}

// plan says how to decode a body written with one writer schema.
type plan struct {
	kind   *kind
	schema avro.Schema // reader schema itself, or the resolution of writer into reader
	// decode, when set, replaces kind.decode: the writer has plain fields
	// where the reader has ["null", X] (see plainFields).
	decode func(r *avro.Reader, s avro.Schema) Event
}

// schemaSet is the immutable set of schemas a Codec works with.
type schemaSet struct {
	kinds   map[string]*kind // by event type
	byFull  map[string]*kind // by record full name
	writers map[uint64]plan  // by writer fingerprint: current, history and extra schemas
}

// loadSchemaSet parses the current schemas from root (one <Type>.avsc per
// kind, plus shared records referenced by full name) and the writer schemas
// from history (self-contained), and plans the decoding of each writer.
func loadSchemaSet(root fs.FS, kinds []kindSpec, history []string) (*schemaSet, error) {
	docs, err := readSchemaDocs(root)
	if err != nil {
		return nil, err
	}
	set := &schemaSet{kinds: map[string]*kind{}, byFull: map[string]*kind{}, writers: map[uint64]plan{}}
	for _, spec := range kinds {
		full := Namespace + "." + spec.name
		doc, ok := docs[full]
		if !ok {
			return nil, fmt.Errorf("schemas: no schema for %s", full)
		}
		inlined, err := inlineNamed(doc, docs, Namespace, map[string]bool{})
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", full, err)
		}
		text, err := json.Marshal(inlined)
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", full, err)
		}
		s, err := parseSchema(string(text))
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", full, err)
		}
		k := &kind{kindSpec: spec, schema: s, text: string(text), fp: Fingerprint(s)}
		set.kinds[spec.name] = k
		set.byFull[full] = k
		set.writers[k.fp] = plan{kind: k, schema: s}
	}
	for _, text := range history {
		w, err := parseSchema(text)
		if err != nil {
			return nil, fmt.Errorf("schemas: writer schema: %w", err)
		}
		p, err := set.planFor(w)
		if err != nil {
			return nil, err
		}
		if _, dup := set.writers[Fingerprint(w)]; !dup {
			set.writers[Fingerprint(w)] = p
		}
	}
	return set, nil
}

// planFor resolves writer schema w into the reader schema of its event type.
func (s *schemaSet) planFor(w avro.Schema) (plan, error) {
	named, ok := w.(avro.NamedSchema)
	if !ok || w.Type() != avro.Record {
		return plan{}, fmt.Errorf("writer schema is a %s, not an event record", w.Type())
	}
	k, ok := s.byFull[named.FullName()]
	if !ok {
		return plan{}, fmt.Errorf("writer schema %s is not a lakewap event", named.FullName())
	}
	if Fingerprint(w) == k.fp {
		return plan{kind: k, schema: k.schema}, nil
	}
	resolved, err := avro.NewSchemaCompatibility().Resolve(k.schema, w)
	if err != nil {
		return plan{}, fmt.Errorf("writer schema %s (fingerprint %016x) cannot be read as the current one: %w",
			named.FullName(), Fingerprint(w), err)
	}
	p := plan{kind: k, schema: resolved}
	if plain := plainFields(k.schema, w); plain != nil && k.goType != nil && k.goType.Kind() == reflect.Struct {
		p.decode = plainDecoder(k.goType, plain)
	}
	return p, nil
}

// readSchemaDocs reads every *.avsc at the top of root, keyed by full name.
func readSchemaDocs(root fs.FS) (map[string]map[string]any, error) {
	names, err := fs.Glob(root, "*.avsc")
	if err != nil {
		return nil, err
	}
	docs := map[string]map[string]any{}
	for _, name := range names {
		b, err := fs.ReadFile(root, name)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
		full := fullName(doc, "")
		if want := strings.TrimSuffix(path.Base(name), ".avsc"); !strings.HasSuffix(full, "."+want) {
			return nil, fmt.Errorf("schemas: %s defines %s", name, full)
		}
		docs[full] = doc
	}
	return docs, nil
}

func fullName(doc map[string]any, enclosingNS string) string {
	name, _ := doc["name"].(string)
	if strings.Contains(name, ".") {
		return name
	}
	ns, ok := doc["namespace"].(string)
	if !ok {
		ns = enclosingNS
	}
	if ns == "" {
		return name
	}
	return ns + "." + name
}

// inlineNamed replaces the first reference to each shared record by its
// definition, so that every event schema is self-contained: a registry or a
// foreign decoder gets the whole schema from one document.
func inlineNamed(v any, defs map[string]map[string]any, ns string, defined map[string]bool) (any, error) {
	switch t := v.(type) {
	case string:
		full := t
		if !strings.Contains(t, ".") {
			full = ns + "." + t
		}
		def, ok := defs[full]
		if !ok || defined[full] {
			return t, nil
		}
		return inlineNamed(def, defs, ns, defined)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := inlineNamed(e, defs, ns, defined)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := maps.Clone(t)
		switch t["type"] {
		case "record", "error", "enum", "fixed":
			full := fullName(t, ns)
			if defined[full] {
				return nil, fmt.Errorf("%s defined twice", full)
			}
			defined[full] = true
			ns = full[:max(strings.LastIndex(full, "."), 0)]
		}
		// A field is an object whose type is inlined like any other.
		for _, key := range []string{"type", "items", "values", "fields"} {
			if e, ok := t[key]; ok {
				r, err := inlineNamed(e, defs, ns, defined)
				if err != nil {
					return nil, err
				}
				out[key] = r
			}
		}
		return out, nil
	default:
		return v, nil
	}
}

// parseSchema parses text with a private cache, so that versions of the same
// record never see each other through hamba's process-wide default cache.
func parseSchema(text string) (avro.Schema, error) {
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}

// CanonicalForm returns the Avro Parsing Canonical Form of s as the
// specification defines it: only type, name, fields, symbols, items, values
// and size are kept, so doc, default and logicalType are dropped. hamba's own
// String() keeps logicalType, which would give fingerprints that differ from
// the Java and Python implementations.
func CanonicalForm(s avro.Schema) string {
	var b strings.Builder
	writeCanonical(&b, s, map[string]bool{})
	return b.String()
}

func writeCanonical(b *strings.Builder, s avro.Schema, seen map[string]bool) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		if seen[n.FullName()] {
			b.WriteString(strconv.Quote(n.FullName()))
			return
		}
		seen[n.FullName()] = true
		b.WriteString(`{"name":` + strconv.Quote(n.FullName()) + `,"type":"` + string(s.Type()) + `"`)
	}
	switch t := s.(type) {
	case *avro.RecordSchema:
		b.WriteString(`,"fields":[`)
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":` + strconv.Quote(f.Name()) + `,"type":`)
			writeCanonical(b, f.Type(), seen)
			b.WriteByte('}')
		}
		b.WriteString("]}")
	case *avro.EnumSchema:
		b.WriteString(`,"symbols":[`)
		for i, sym := range t.Symbols() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(sym))
		}
		b.WriteString("]}")
	case *avro.FixedSchema:
		b.WriteString(`,"size":` + strconv.Itoa(t.Size()) + "}")
	case *avro.ArraySchema:
		b.WriteString(`{"type":"array","items":`)
		writeCanonical(b, t.Items(), seen)
		b.WriteByte('}')
	case *avro.MapSchema:
		b.WriteString(`{"type":"map","values":`)
		writeCanonical(b, t.Values(), seen)
		b.WriteByte('}')
	case *avro.UnionSchema:
		b.WriteByte('[')
		for i, u := range t.Types() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, u, seen)
		}
		b.WriteByte(']')
	default:
		b.WriteString(`"` + string(s.Type()) + `"`)
	}
}

// Fingerprint returns the CRC-64-AVRO fingerprint of the parsing canonical
// form of s, the number single-object encoding carries (little-endian).
func Fingerprint(s avro.Schema) uint64 {
	h := crc64.New()
	_, _ = h.Write([]byte(CanonicalForm(s)))
	return h.Sum64()
}

// SchemaText returns the self-contained current schema of an event type, with
// docs: the text Encode registers and the one to copy into history/ before
// changing a schema.
func SchemaText(eventType string) (string, error) {
	set, err := defaultSchemaSet(nil)
	if err != nil {
		return "", err
	}
	k, ok := set.kinds[eventType]
	if !ok {
		return "", fmt.Errorf("schemas: unknown event type %q", eventType)
	}
	return k.text, nil
}

// defaultSchemaSet loads the embedded schemas plus the writer schemas kept
// in history/ and extra ones.
func defaultSchemaSet(extra []string) (*schemaSet, error) {
	names, err := fs.Glob(files, "history/*.avsc") // sorted
	if err != nil {
		return nil, err
	}
	var history []string
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		history = append(history, string(b))
	}
	return loadSchemaSet(files, currentKinds(), append(history, extra...))
}
