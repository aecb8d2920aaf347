package tests

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

var updateMetrics = flag.Bool("update-metrics", false, "rewrite testdata/metrics.txt from the daemon's registry")

const metricsInventory = "testdata/metrics.txt"

// TestMetricsInventory wires the daemon on the embedded stack, runs a good
// and a bad batch, gathers its registry and compares every lakewap_ family
// (type, label names, help) with testdata/metrics.txt, so that moving
// metrics between packages cannot drop, rename or relabel one unnoticed.
func TestMetricsInventory(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := startE2EWith(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
	}, daemon.Options{Registry: reg})
	if ev := e.runBatch(t, "inv-good-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good batch ended %s", ev.EventType())
	}
	if ev := e.runBatch(t, "inv-bad-1", harness.BadBillingRows); ev.EventType() != schemas.TypeBatchAborted {
		t.Fatalf("bad batch ended %s", ev.EventType())
	}
	fams, err := reg.Gather()
	must(t, err)
	var lines []string
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "lakewap_") {
			continue
		}
		seen := map[string]bool{}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				seen[l.GetName()] = true
			}
		}
		var labels []string
		for l := range seen {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		lines = append(lines, fmt.Sprintf("%s %s {%s} %s", f.GetName(), f.GetType(), strings.Join(labels, ","), f.GetHelp()))
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	if *updateMetrics {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(metricsInventory, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(metricsInventory)
	must(t, err)
	wantSet := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		wantSet[l] = true
	}
	for _, l := range lines {
		if !wantSet[l] {
			t.Errorf("registered but not in %s: %s", metricsInventory, l)
		}
		delete(wantSet, l)
	}
	for l := range wantSet {
		t.Errorf("in %s but not registered: %s", metricsInventory, l)
	}
}
