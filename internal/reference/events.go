package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// headerDirs are the packages whose Header* constants name Kafka headers.
var headerDirs = []string{"schemas", "consumer", "notify", "ingest"}

// Header is a Kafka header lakewap reads or writes.
type Header struct{ Name, Const, Doc string }

// Headers are the Header* string constants of headerDirs, by header name.
func Headers(root string) ([]Header, error) {
	var out []Header
	fset := token.NewFileSet()
	for _, dir := range headerDirs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					if len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Header") || !vs.Names[0].IsExported() {
						continue
					}
					lit, ok := vs.Values[0].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					doc := commentText(vs.Doc)
					if doc == "" {
						doc = commentText(vs.Comment)
					}
					if doc == "" && len(gd.Specs) == 1 {
						doc = commentText(gd.Doc)
					}
					if doc == "" {
						doc = commentText(gd.Doc) // the block's comment says what its headers are
					}
					out = append(out, Header{Name: strings.Trim(lit.Value, "`\""), Const: dir + "." + vs.Names[0].Name, Doc: doc})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

type avroField struct {
	Name    string          `json:"name"`
	Type    any             `json:"type"`
	Default json.RawMessage `json:"default"`
	Doc     string          `json:"doc"`
}

type avroRecord struct {
	Name   string      `json:"name"`
	Doc    string      `json:"doc"`
	Fields []avroField `json:"fields"`
}

// avroType writes an Avro type for a person: long (timestamp-millis),
// array of string, optional long.
func avroType(t any) string {
	switch v := t.(type) {
	case string:
		return strings.TrimPrefix(v, schemas.Namespace+".")
	case []any:
		var parts []string
		optional := false
		for _, x := range v {
			if x == "null" {
				optional = true
				continue
			}
			parts = append(parts, avroType(x))
		}
		s := strings.Join(parts, " or ")
		if optional {
			s = "optional " + s
		}
		return s
	case map[string]any:
		switch v["type"] {
		case "array":
			return "array of " + avroType(v["items"])
		case "map":
			return "map of " + avroType(v["values"])
		case "record", "enum":
			return fmt.Sprint(v["name"])
		}
		if lt, ok := v["logicalType"]; ok {
			return fmt.Sprintf("%s (%s)", avroType(v["type"]), lt)
		}
		return avroType(v["type"])
	}
	return fmt.Sprint(t)
}

func eventsPage(root string) ([]byte, error) {
	var c config.Config
	c.Defaults()
	k := c.Kafka
	headers, err := Headers(root)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(PageHeader)
	b.WriteString("# Events reference\n\n")
	b.WriteString("The contract between lakewap, its producers and its consumers: topics, keys, headers, encoding and\n")
	b.WriteString("every event's fields, from the Avro schemas in [`schemas/`](../../schemas) (namespace `" + schemas.Namespace + "`).\n\n")
	b.WriteString("## Topics\n\n| topic (default) | config key | key | events |\n| --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| `%s` | `kafka.input_topic` | batch id | BatchLanded, WriteComplete, BatchCancelled (a producer's: no request_id, no requested_by) |\n", k.InputTopic)
	fmt.Fprintf(&b, "| `%s` | `kafka.requests_topic` | batch id | operators' RetryRequested, RevertRequested, BatchCancelled (with request_id); signed when the config lists operators |\n", k.RequestsTopic)
	fmt.Fprintf(&b, "| `%s` | `kafka.results_topic` | batch id | BranchReady, BatchPublished, BatchAborted, BatchFailed, BatchReverted, RequestRefused, UnattestedChange |\n", k.ResultsTopic)
	fmt.Fprintf(&b, "| `%s` | `kafka.dead_letter_topic` | the input's key | the input's bytes as they came, with the `wap.dlq.*` headers (the input's own headers of that name left out) |\n", k.DeadLetterTopic)
	fmt.Fprintf(&b, "| `%s` | `kafka.changelog_topic` | dataset and batch id | run state (compacted; lakewap's own, not a contract) |\n", k.ChangelogTopic)
	b.WriteString("\nA batch's inputs must be keyed by its batch id, so that they land on one partition in order; an input\n")
	b.WriteString("whose key is not its batch id is dead-lettered. Result events carry a stable `event_id`: the same outcome\n")
	b.WriteString("sent again has the same id, so consumers drop duplicates by it.\n\n")
	b.WriteString("## Encoding\n\n")
	b.WriteString("Values are Avro. Without a schema registry: single-object encoding, `C3 01`, the 8-byte little-endian\n")
	b.WriteString("CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form (named types inlined), then the body.\n")
	b.WriteString("With `kafka.schema_registry_url`: the Confluent wire format, `00`, the 4-byte big-endian schema id, then\n")
	b.WriteString("the body. lakewap reads both either way. Fingerprints of the current schemas:\n\n| event | fingerprint (hex, as the bytes are sent) |\n| --- | --- |\n")
	for _, t := range schemas.EventTypes() {
		text, err := schemas.SchemaText(t)
		if err != nil {
			return nil, err
		}
		fp, err := fingerprintHex(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		fmt.Fprintf(&b, "| %s | `%s` |\n", t, fp)
	}
	b.WriteString("\n## Headers\n\n| header | constant | description |\n| --- | --- | --- |\n")
	for _, h := range headers {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", h.Name, h.Const, cell(h.Doc))
	}
	files, err := filepath.Glob(filepath.Join(root, "schemas", "*.avsc"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r avroRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| field | type | default | description |\n| --- | --- | --- | --- |\n", r.Name, r.Doc)
		for _, fl := range r.Fields {
			def := "required"
			if fl.Default != nil {
				def = "`" + string(fl.Default) + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", fl.Name, cell(avroType(fl.Type)), cell(def), cell(fl.Doc))
		}
	}
	return b.Bytes(), nil
}

// fingerprintHex is the fingerprint of a schema as single-object
// encoding's header carries it.
func fingerprintHex(text string) (string, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return "", err
	}
	fp := schemas.Fingerprint(s)
	var le [8]byte
	for i := range le {
		le[i] = byte(fp >> (8 * i))
	}
	return fmt.Sprintf("%x", le), nil
}
