package audit

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// Two instances loading the same suite must name it alike: the runner
// rechecks a batch whose recorded digest (Run.Suites) is not the one in
// force, and an attestation names the suite by it. A dbt or config meta
// mapping with a key that is not a string decodes (yaml.v3) to a
// map[any]any, which encoding/json refuses; SuiteDigest then hashed the
// suite's %#v, which prints the addresses of its pointers (min, max), so
// the digest differed between two loads of the same text.
func TestSuiteDigestIsTheSameForTheSameSuiteText(t *testing.T) {
	const text = `
tables: [{name: t, path: gold/t/}]
checks:
  - {name: small, kind: range, table: t, column: v, max: 10, meta: {owner: {1: data team}}}
`
	load := func() Suite {
		var s Suite
		if err := yaml.Unmarshal([]byte(text), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := SuiteDigest(load()), SuiteDigest(load())
	if a != b {
		t.Errorf("the same suite text digests to %s and to %s", a, b)
	}
	other := load()
	other.Checks[0].Max = f64(11)
	if SuiteDigest(other) == a {
		t.Errorf("a suite with another max digests as the first: %s", a)
	}
}
