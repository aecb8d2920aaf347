package reference

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/audit"
)

func comments(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for _, dir := range []string{"../config", "../../audit"} {
		d, err := docComments(dir)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range d {
			docs[k] = v
		}
	}
	return docs
}

// A config key the reference cannot describe fully fails here: a new field
// in internal/config needs a doc comment (or an entry in keyDocs), a
// default (resolved by Defaults, or written in keyDocs) and an example.
func TestEveryConfigKeyIsDocumented(t *testing.T) {
	entries := ConfigEntries(comments(t))
	if len(entries) < 80 {
		t.Fatalf("only %d config keys found", len(entries))
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.Key] = true
		if e.Description == "" {
			t.Errorf("%s: no description (a doc comment on its field, or keyDocs)", e.Key)
		}
		if e.Default == "" {
			t.Errorf("%s: no default (Config.Defaults resolves none; say it in keyDocs)", e.Key)
		}
		if e.Example == "" {
			t.Errorf("%s: no example", e.Key)
		}
	}
	for k := range keyDocs {
		if !seen[k] {
			t.Errorf("keyDocs names %s, which is not a config key", k)
		}
	}
}

// Every key the reference lists is one the config accepts: a document made
// of each key's example parses (unknown keys are errors there).
func TestConfigKeysAreKeysTheConfigAccepts(t *testing.T) {
	for _, k := range []string{"kafka.schema_registry_url", "datasets.<name>.keep_aborted_branch", "audit.threads", "kafka.sasl.password_file"} {
		if !slices.ContainsFunc(ConfigEntries(comments(t)), func(e Entry) bool { return e.Key == k }) {
			t.Errorf("%s is missing from the reference", k)
		}
	}
}

// Each check kind has an example in the reference, and the example is a
// check the audit suite accepts.
func TestEveryCheckKindHasAValidExample(t *testing.T) {
	var tables []audit.Table
	if err := yaml.Unmarshal([]byte(exampleTables), &tables); err != nil {
		t.Fatal(err)
	}
	for _, k := range audit.Kinds() {
		src, ok := kindExamples[k]
		if !ok {
			t.Errorf("check kind %s has no example (kindExamples)", k)
			continue
		}
		var c audit.Check
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			t.Errorf("%s example: %v", k, err)
			continue
		}
		if c.Kind != k {
			t.Errorf("%s example is of kind %q", k, c.Kind)
		}
		if errs := (audit.Suite{Tables: tables, Checks: []audit.Check{c}}).Validate("checks"); len(errs) > 0 {
			t.Errorf("%s example is refused: %v", k, errs)
		}
	}
	for k := range kindExamples {
		if !slices.Contains(audit.Kinds(), k) {
			t.Errorf("kindExamples has %s, which is not a check kind", k)
		}
	}
}

// Every check field, common or kind-specific, has a description, and every
// kind has one.
func TestEveryCheckFieldIsDocumented(t *testing.T) {
	docs := comments(t)
	for _, f := range append(slices.Clone(commonFields), audit.CheckFields()...) {
		if CheckFieldDoc(docs, f) == "" {
			t.Errorf("check field %s has no description (a doc comment on audit.Check's field, or checkFieldDocs)", f)
		}
	}
	consts, err := constComments("../../audit")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range audit.Kinds() {
		if consts[k] == "" {
			t.Errorf("check kind %s has no description (the doc comment of its Kind constant)", k)
		}
	}
}

// The pages say what they are generated from, and the events page lists
// every event type and header constant.
func TestPagesCoverEventsAndHeaders(t *testing.T) {
	pages, err := Pages("../..")
	if err != nil {
		t.Fatal(err)
	}
	ev := string(pages["events.md"])
	for _, want := range []string{"## BatchLanded", "## RequestRefused", "`wap.event_type`", "`wap.request_id`", "`wap.dlq.reason`", "wap.events"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events.md lacks %q", want)
		}
	}
	chk := string(pages["checks.md"])
	for _, k := range audit.Kinds() {
		if !strings.Contains(chk, "\n## "+k+"\n") {
			t.Errorf("checks.md lacks kind %s", k)
		}
	}
}
