package daemon

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lakewap/lakewap/internal/config"
)

// TestSigningKeysLeftUnsetAreExported: a daemon without
// audit.attestation_key (or runner.state_key_file) said so in its log at
// start at most; lakewap_signing_key_unset{key} is 1 for each, so that an
// alert sees it where nobody reads the log, and 0 once it is set.
func TestSigningKeysLeftUnsetAreExported(t *testing.T) {
	const base = `kafka: {brokers: ["127.0.0.1:9092"]}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {kind: not_null, table: billing_fact, column: billing_id}
`
	for _, tc := range []struct {
		name, extra string
		want        string
	}{
		{"neither", "", "lakewap_signing_key_unset{key=\"audit.attestation_key\"} 1\nlakewap_signing_key_unset{key=\"operators\"} 1\nlakewap_signing_key_unset{key=\"runner.state_key_file\"} 1\n"},
		{"attestation key set", "audit: {attestation_key: 0123456789abcdef}\n", "lakewap_signing_key_unset{key=\"audit.attestation_key\"} 0\nlakewap_signing_key_unset{key=\"operators\"} 1\nlakewap_signing_key_unset{key=\"runner.state_key_file\"} 1\n"},
		{"every audit full", "audit: {incremental: false}\n", "lakewap_signing_key_unset{key=\"audit.attestation_key\"} 0\nlakewap_signing_key_unset{key=\"operators\"} 1\nlakewap_signing_key_unset{key=\"runner.state_key_file\"} 1\n"},
		{"operators listed", "operators: [{name: alice, key: 0123456789abcdef0123}]\n", "lakewap_signing_key_unset{key=\"audit.attestation_key\"} 1\nlakewap_signing_key_unset{key=\"operators\"} 0\nlakewap_signing_key_unset{key=\"runner.state_key_file\"} 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.ParseIn([]byte(base+tc.extra), func(string) (string, bool) { return "", false }, "")
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			if err := registerSigningKeys(reg, cfg); err != nil {
				t.Fatal(err)
			}
			want := "# HELP lakewap_signing_key_unset " + strings.SplitN(helpOf(t, reg), "\n", 2)[0] + "\n# TYPE lakewap_signing_key_unset gauge\n" + tc.want
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "lakewap_signing_key_unset"); err != nil {
				t.Error(err)
			}
		})
	}
}

func helpOf(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil || len(fams) == 0 {
		t.Fatalf("gather: %v", err)
	}
	return fams[0].GetHelp()
}
