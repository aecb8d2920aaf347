package audit

import (
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestAttestationIsTakenOnlyWhereItHolds: an attestation is the commit's
// only when its graph matches it (parents: the commit it was checked
// against, then the sealed commit), it names the dataset and the suite
// configured now, and, with a key, its signature matches.
func TestAttestationIsTakenOnlyWhereItHolds(t *testing.T) {
	suite := diffSuite(0)
	rep := schemas.AuditReport{Mode: ModeIncremental}
	for _, c := range suite.Checks {
		rep.Checks = append(rep.Checks, schemas.CheckResult{Name: c.ID(), Status: schemas.StatusPass})
	}
	rep.Checks[3].Status = schemas.StatusWarn
	a := NewAttestation("billing", suite, rep, "sealed1", "head0")
	key := []byte("k3y")
	signed, err := a.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := a.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(signed) > maxAttestationBytes {
		t.Fatalf("%d bytes", len(signed))
	}
	commit := func(text string, parents ...string) CommitInfo {
		return CommitInfo{ID: "m1", Parents: parents, Metadata: map[string]string{MetaAttestation: text}}
	}
	digest := SuiteDigest(suite)
	got, err := Attested(commit(signed, "head0", "sealed1"), "billing", digest, key)
	if err != nil || got.passed(3) || !got.passed(0) || got.Mode != ModeIncremental {
		t.Fatalf("%+v %v", got, err)
	}
	for name, tc := range map[string]struct {
		c       CommitInfo
		dataset string
		digest  string
		key     []byte
		want    string
	}{
		"no attestation":       {CommitInfo{ID: "m1", Parents: []string{"head0", "sealed1"}}, "billing", digest, nil, "no lakewap attestation"},
		"direct commit copy":   {commit(unsigned, "head0"), "billing", digest, nil, "its parents are"},
		"merged onto another":  {commit(unsigned, "head9", "sealed1"), "billing", digest, nil, "its parents are"},
		"another sealed":       {commit(unsigned, "head0", "sealed2"), "billing", digest, nil, "its parents are"},
		"another dataset":      {commit(unsigned, "head0", "sealed1"), "orders", digest, nil, "dataset billing"},
		"suite changed":        {commit(unsigned, "head0", "sealed1"), "billing", SuiteDigest(diffSuite(1)), nil, "another suite"},
		"unsigned with a key":  {commit(unsigned, "head0", "sealed1"), "billing", digest, key, "not signed"},
		"signed by another":    {commit(signed, "head0", "sealed1"), "billing", digest, []byte("other"), "signature"},
		"signed, then altered": {commit(strings.Replace(signed, "not_passed=3", "not_passed=", 1), "head0", "sealed1"), "billing", digest, key, "signature"},
		"garbage":              {commit("v=1 hello", "head0", "sealed1"), "billing", digest, nil, "wrong fields"},
	} {
		if _, err := Attested(tc.c, tc.dataset, tc.digest, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	// Without a key an attestation is taken unsigned (and a signed one too:
	// the signature is not checked).
	if _, err := Attested(commit(signed, "head0", "sealed1"), "billing", digest, nil); err != nil {
		t.Fatal(err)
	}
	if SuiteDigest(diffSuite(0)) != digest || SuiteDigest(diffSuite(2)) == digest {
		t.Fatal("suite digest is not a function of the suite")
	}
}

// TestVerifyNamesEachCommit: lakewap verify's verdict of each kind of commit.
func TestVerifyNamesEachCommit(t *testing.T) {
	suite := diffSuite(0)
	digest := SuiteDigest(suite)
	attest := func(dataset string, s Suite) string {
		text, err := NewAttestation(dataset, s, schemas.AuditReport{}, "sealed1", "head0").Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	for _, tc := range []struct {
		name string
		c    CommitInfo
		want string
	}{
		{"root", CommitInfo{ID: "c0"}, VerifyRoot},
		{"publish", CommitInfo{ID: "m", Parents: []string{"head0", "sealed1"}, Metadata: map[string]string{MetaAttestation: attest("d", suite)}}, VerifyAttested},
		{"earlier suite", CommitInfo{ID: "m", Parents: []string{"head0", "sealed1"}, Metadata: map[string]string{MetaAttestation: attest("d", diffSuite(1))}}, VerifyAttested},
		{"other dataset", CommitInfo{ID: "m", Parents: []string{"head0", "sealed1"}, Metadata: map[string]string{MetaAttestation: attest("orders", diffSuite(2))}}, VerifyAttested},
		{"direct commit", CommitInfo{ID: "m", Parents: []string{"head0"}}, VerifyUnattested},
		{"copied attestation", CommitInfo{ID: "m", Parents: []string{"head0"}, Metadata: map[string]string{MetaAttestation: attest("d", suite)}}, VerifyUnattested},
		{"revert", CommitInfo{ID: "m", Parents: []string{"m0"}, Metadata: map[string]string{}}, VerifyUnattested},
	} {
		if got, detail := Verify(tc.c, "d", digest, nil); got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, detail, tc.want)
		}
	}
}
