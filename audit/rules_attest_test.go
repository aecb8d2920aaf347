package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// An attestation is a promise that the table passed the suite under the
// rules of the build that made it. Builds change those rules (review 38:
// an incremental unique passed a repeated (NULL, x) key that a full audit
// fails), and a table an earlier build passed is not one this build
// would: its attestation must not make this build's audit incremental.
// Before review 48 the digest held the suite's declaration alone, so an
// attestation made by any earlier build of the same suite was taken.
func TestAttestationOfEarlierRulesIsNotTaken(t *testing.T) {
	s := Suite{Tables: []Table{{Name: "t", Path: "gold/t/"}}, Checks: []Check{{Name: "id_unique", Kind: KindUnique, Table: "t", Column: "id"}}}
	// The digest as builds before review 48 made it.
	b, err := json.Marshal(struct {
		Tables  []Table   `json:"tables"`
		Checks  []Check   `json:"checks"`
		Skipped []Skipped `json:"skipped"`
	}{s.Tables, s.Checks, s.Skipped})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	earlier := hex.EncodeToString(sum[:16])
	head, sealed := strings.Repeat("1", 64), strings.Repeat("2", 64)
	text, err := Attestation{Dataset: "d", Suite: earlier, Sealed: sealed, Against: head, Mode: ModeFull}.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := CommitInfo{ID: strings.Repeat("3", 64), Parents: []string{head, sealed}, Metadata: map[string]string{MetaAttestation: text}}
	if _, err := Attested(c, "d", SuiteDigest(s), nil); err == nil {
		t.Errorf("an attestation of the same suite made under an earlier build's rules is taken (digest %s)", earlier)
	}
	now, err := Attestation{Dataset: "d", Suite: SuiteDigest(s), Sealed: sealed, Against: head, Mode: ModeFull}.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Metadata[MetaAttestation] = now
	if _, err := Attested(c, "d", SuiteDigest(s), nil); err != nil {
		t.Errorf("this build's attestation is not taken: %v", err)
	}
}
