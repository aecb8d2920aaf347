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

// TestVerifySaysAnUnsignedAttestationIsUnsigned: without
// audit.attestation_key an attestation is taken by its graph and its
// committer alone, so a commit record naming lakewap's lakeFS user
// (createCommitRecord names any committer) with one written to match it,
// moved onto the target, read "attested" like a publish, and nothing in
// lakewap verify's line said the signature went unchecked. The verdict
// stays (the graph holds), and the detail says it is unsigned; with a key,
// a signed one does not say so.
func TestVerifySaysAnUnsignedAttestationIsUnsigned(t *testing.T) {
	suite := diffSuite(0)
	digest := SuiteDigest(suite)
	a := NewAttestation("d", suite, schemas.AuditReport{}, "sealed1", "head0")
	key := []byte("0123456789abcdef")
	forged, err := a.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := a.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	c := CommitInfo{ID: "m", Parents: []string{"head0", "sealed1"}, Metadata: map[string]string{MetaAttestation: forged}}
	verdict, detail := Verify(c, "d", digest, nil)
	if verdict != VerifyAttested || !strings.Contains(detail, "unsigned") || !strings.Contains(detail, "audit.attestation_key") {
		t.Errorf("without a key: %s (%s); want attested, its detail saying unsigned and naming audit.attestation_key", verdict, detail)
	}
	if verdict, detail := Verify(c, "d", digest, key); verdict != VerifyUnattested {
		t.Errorf("the same commit with a key: %s (%s); want not attested", verdict, detail)
	}
	c.Metadata[MetaAttestation] = signed
	if verdict, detail := Verify(c, "d", digest, key); verdict != VerifyAttested || strings.Contains(detail, "unsigned") {
		t.Errorf("signed, with the key: %s (%s); want attested, not called unsigned", verdict, detail)
	}
}
