package tests

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

var updateMetrics = flag.Bool("update-metrics", false, "rewrite testdata/metrics.txt from the daemon's registry")

const metricsInventory = "testdata/metrics.txt"

// TestMetricsInventory wires the daemon on the embedded stack (with a Slack
// sink), runs a good
// and a bad batch and a dead letter, gathers its registry and compares every lakewap_ family
// (type, label names, help) with testdata/metrics.txt, so that moving
// metrics between packages cannot drop, rename or relabel one unnoticed.
func TestMetricsInventory(t *testing.T) {
	reg := prometheus.NewRegistry()
	slackSrv := newSlackAPI(t) // the Slack sink's metrics exist only with one
	e := startE2EWith(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	}, daemon.Options{Registry: reg})
	if ev := e.runBatch(t, "inv-good-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good batch ended %s", ev.EventType())
	}
	if ev := e.runBatch(t, "inv-bad-1", harness.BadBillingRows); ev.EventType() != schemas.TypeBatchAborted {
		t.Fatalf("bad batch ended %s", ev.EventType())
	}
	// A dead letter too (alert LakewapDeadLetters watches it): await its
	// family, and the lag gauge's, whose series a rebalance drops until the
	// next fetch after it (on Apache Kafka the group can rebalance here).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("inv-junk"), Value: []byte("not an event")}))
	var fams []*dto.MetricFamily
	for {
		var err error
		fams, err = reg.Gather()
		must(t, err)
		has := func(name string) bool {
			return slices.ContainsFunc(fams, func(f *dto.MetricFamily) bool { return f.GetName() == name })
		}
		if has("lakewap_consumer_dead_letters_total") && has("lakewap_consumer_lag_messages") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no dead letter counted, or no lag measured, within 2m")
		case <-time.After(20 * time.Millisecond):
		}
	}
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
