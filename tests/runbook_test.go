package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Every alert rule links to its runbook: a docs/operations.md section whose heading is
// the alert's name, under "Runbook", and the link's anchor is the one the
// heading gets. A renamed alert or a dropped section fails here.
func TestAlertsLinkTheirRunbook(t *testing.T) {
	b, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(alertRulesFile), "..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, runbook, ok := strings.Cut(string(readme), "\n## Runbook\n")
	if !ok {
		t.Fatal("docs/operations.md has no Runbook section")
	}
	runbook, _, _ = strings.Cut(runbook, "\n## ")
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\w+)$`).FindAllStringSubmatch(runbook, -1) {
		sections[m[1]] = true
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			want := "https://github.com/lakewap/lakewap/blob/main/docs/operations.md#" + strings.ToLower(r.Alert)
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
			}
			if !sections[r.Alert] {
				t.Errorf("%s: docs/operations.md's Runbook has no section \"### %s\"", r.Alert, r.Alert)
			}
		}
	}
	if n < 9 {
		t.Errorf("found %d alerts, want at least the 9 of deploy/prometheus", n)
	}
}
