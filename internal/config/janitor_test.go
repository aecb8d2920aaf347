package config

import (
	"strings"
	"testing"
	"time"
)

const janitorBase = `
kafka: {brokers: ["k:9092"]}
lakefs: {endpoint: "http://lakefs:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing: {repository: lake}
`

func TestJanitorDefaults(t *testing.T) {
	c, err := ParseIn([]byte(janitorBase), func(string) (string, bool) { return "", false }, "")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Janitor.On() || c.Janitor.DryRun {
		t.Errorf("janitor on=%v dry_run=%v, want on and not dry", c.Janitor.On(), c.Janitor.DryRun)
	}
	if got := time.Duration(c.Janitor.Interval); got != time.Hour {
		t.Errorf("interval %v, want 1h", got)
	}
	if got := time.Duration(c.Janitor.AbandonedAfter); got != 24*time.Hour {
		t.Errorf("abandoned_after %v, want 24h", got)
	}
	if got := time.Duration(c.Datasets["billing"].AbortedRetention); got != 72*time.Hour {
		t.Errorf("aborted_retention %v, want 72h", got)
	}
}

func TestJanitorErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"janitor: {interval: 10s}", "janitor.interval"},
		{"janitor: {interval: -1h}", "janitor.interval"},
		{"janitor: {abandoned_after: -1h}", "janitor.abandoned_after"},
		{"janitor: {intervall: 1h}", "intervall"},
	} {
		_, err := ParseIn([]byte(janitorBase+tc.yaml+"\n"), func(string) (string, bool) { return "", false }, "")
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.field)
		}
	}
	bad := strings.Replace(janitorBase, "{repository: lake}", "{repository: lake, aborted_retention: -2h}", 1)
	if _, err := ParseIn([]byte(bad), func(string) (string, bool) { return "", false }, ""); err == nil ||
		!strings.Contains(err.Error(), "datasets.billing.aborted_retention") {
		t.Errorf("negative retention: %v", err)
	}
}
