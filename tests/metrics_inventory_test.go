package tests

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
// sink and an OpenLineage endpoint, whose metrics exist only with them),
// runs a good and a bad batch and a dead letter, and compares every lakewap_
// metric the daemon registers with testdata/metrics.txt: name, label names
// and help from the descriptors of its registry (every metric, with a series
// or not), and the type from the gathered family where the run left one
// (where none, the type is the file's, set by hand). So moving metrics
// between packages cannot drop, rename or relabel one unnoticed, and
// TestDocsNameOnlyRegisteredMetrics checks what docs/ and deploy/ name
// against the full set.
func TestMetricsInventory(t *testing.T) {
	reg := prometheus.NewRegistry()
	slackSrv := newSlackAPI(t) // the Slack sink's metrics exist only with one
	lineageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	}))
	t.Cleanup(lineageSrv.Close) // the lineage emitter's metric exists only with one
	e := startE2EWith(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
		c.Lineage = config.Lineage{URL: lineageSrv.URL + "/api/v1/lineage", Namespace: "wap-test"}
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
	gathered := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		gathered[f.GetName()] = f
	}
	described := describedMetrics(t, reg)
	if len(described) < 30 {
		t.Fatalf("the registry describes only %d lakewap_ metrics", len(described))
	}

	want, err := os.ReadFile(metricsInventory)
	if err != nil && !*updateMetrics {
		t.Fatal(err)
	}
	inventory := parseInventory(t, string(want))

	var lines []string
	for name, d := range described {
		typ := "UNTYPED"
		if f, ok := gathered[name]; ok {
			typ = f.GetType().String()
			if f.GetHelp() != d.help {
				t.Errorf("%s: gathered help %q, described %q", name, f.GetHelp(), d.help)
			}
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if !slices.Contains(d.labels, l.GetName()) {
						t.Errorf("%s: a series has label %q, not described (%v)", name, l.GetName(), d.labels)
					}
				}
			}
		} else if old, ok := inventory[name]; ok {
			typ = old.typ // no series after the run: the type is the file's
		} else {
			t.Errorf("%s has no series after this run, so its type is unknown: write its line into %s by hand", name, metricsInventory)
		}
		lines = append(lines, fmt.Sprintf("%s %s {%s} %s", name, typ, strings.Join(d.labels, ","), d.help))
	}
	for name := range gathered {
		if _, ok := described[name]; !ok && strings.HasPrefix(name, "lakewap_") {
			t.Errorf("%s is exported but not described (an unchecked collector): the inventory cannot see it", name)
		}
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	if *updateMetrics {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(metricsInventory, []byte(got), 0o644))
		return
	}
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

// describedMetric is a metric as its descriptor describes it.
type describedMetric struct {
	help   string
	labels []string // constant and variable, sorted
}

var descString = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// describedMetrics is every lakewap_ metric reg's collectors describe, with
// a series or not, read from the descriptors' String (client_golang's Desc
// has no accessors).
func describedMetrics(t *testing.T, reg *prometheus.Registry) map[string]describedMetric {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	out := map[string]describedMetric{}
	for d := range ch {
		m := descString.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		name, err := strconv.Unquote(m[1])
		must(t, err)
		if !strings.HasPrefix(name, "lakewap_") {
			continue
		}
		help, err := strconv.Unquote(m[2])
		must(t, err)
		var labels []string
		for _, l := range regexp.MustCompile(`(\w+)="(?:[^"\\]|\\.)*"`).FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		for _, l := range strings.Split(m[4], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		if prev, ok := out[name]; ok && (prev.help != help || !slices.Equal(prev.labels, labels)) {
			t.Errorf("%s described twice, differently: %+v and %+v", name, prev, describedMetric{help, labels})
		}
		out[name] = describedMetric{help, labels}
	}
	return out
}

// inventoryLine is one line of testdata/metrics.txt.
type inventoryLine struct {
	typ    string
	labels []string
	help   string
}

var inventoryLineRE = regexp.MustCompile(`^(lakewap_[a-z0-9_]+) ([A-Z_]+) \{([a-z0-9_,]*)\} (.*)$`)

// parseInventory reads testdata/metrics.txt by metric name.
func parseInventory(t *testing.T, src string) map[string]inventoryLine {
	t.Helper()
	out := map[string]inventoryLine{}
	for _, l := range strings.Split(strings.TrimSpace(src), "\n") {
		if l == "" {
			continue
		}
		m := inventoryLineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s: cannot read line %q", metricsInventory, l)
		}
		var labels []string
		if m[3] != "" {
			labels = strings.Split(m[3], ",")
		}
		out[m[1]] = inventoryLine{m[2], labels, m[4]}
	}
	return out
}
