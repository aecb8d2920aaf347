package schemas

import (
	"regexp"
	"strings"
	"testing"
)

// TestBranchNameHashResistsSecondPreimages: a batch id that is not a plain
// word (a date with dots or colons, a long id) gets a branch named by its
// mapped prefix and a hash of the dataset and batch id. With 48 bits of
// SHA-256, a producer could search, for a legitimate batch id it can
// foresee ("2026-12-07.nightly"), another id of the same dataset with the
// same branch: about 2^47 hashes, hours on one GPU (5.2 million a second on
// one core of this machine). Landing it next to the legitimate batch, from
// the same head of the source, made the two runs share one branch (a
// branch is resumed when it points at the run's source commit with nothing
// staged, for a run that crashed after making it), so the producer's run,
// completed at once, sealed and published the other batch's writes so far:
// part of a batch on the target, announced as another batch. The hash now
// has 96 bits: a second preimage is out of reach, and a collision (2^48)
// only ever pairs two ids the producer chose itself.
func TestBranchNameHashResistsSecondPreimages(t *testing.T) {
	suffix := regexp.MustCompile(`--([0-9a-f]+)$`)
	for _, tc := range [][2]string{
		{"billing", "2026-12-07.nightly"},
		{"billing", "2026-12-07T00:00:00Z"},
		{"web-logs", "b1"},
		{"billing", strings.Repeat("x", 190)},
		{strings.Repeat("d", 120), strings.Repeat("b", 190)},
	} {
		name := BranchName(tc[0], tc[1])
		m := suffix.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("BranchName(%q, %q) = %q: want a hash suffix", tc[0], tc[1], name)
		}
		if bits := 4 * len(m[1]); bits < 96 {
			t.Errorf("BranchName(%q, %q) = %q: a hash of %d bits, want at least 96", tc[0], tc[1], name, bits)
		}
		if len(name) > MaxBranchNameLen {
			t.Errorf("BranchName(%q, %q) has %d characters, more than %d", tc[0], tc[1], len(name), MaxBranchNameLen)
		}
	}
}

// Runs stored before the hash grew hold the 48-bit name: still the batch's
// (a restore sets aside a run whose branch is not its batch's), and no
// other name is.
func TestIsBranchOfTakesTheOlderName(t *testing.T) {
	const dataset, batch = "billing", "2026-12-07.nightly"
	older := branchName(dataset, batch, 6)
	for _, tc := range []struct {
		branch string
		want   bool
	}{
		{BranchName(dataset, batch), true},
		{older, true},
		{"wap-billing-b1", false},
		{BranchName(dataset, "2026-12-08.nightly"), false},
		{branchName(dataset, batch, 8), false},
	} {
		if got := IsBranchOf(tc.branch, dataset, batch); got != tc.want {
			t.Errorf("IsBranchOf(%q) = %v, want %v", tc.branch, got, tc.want)
		}
	}
	if IsBranchOf(BranchName("orders", "b1"), "orders", "b2") || !IsBranchOf("wap-orders-b1", "orders", "b1") {
		t.Error("plain names: want only the batch's own")
	}
}
