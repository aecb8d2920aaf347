package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

const (
	alertRulesFile = "../deploy/prometheus/lakewap-alerts.yml"
	alertTestsFile = "../deploy/prometheus/lakewap-alerts.test.yml"
	dashboardFile  = "../deploy/grafana/lakewap-dashboard.json"
)

// promQuery is one PromQL expression of the operations kit and where it is.
type promQuery struct{ where, expr string }

// deployQueries reads every PromQL expression of deploy/: the alert rules,
// the series their promtool tests feed in, and the dashboard's panel and
// variable queries.
func deployQueries(t *testing.T) []promQuery {
	t.Helper()
	var out []promQuery

	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	src, err := os.ReadFile(alertRulesFile)
	must(t, err)
	must(t, yaml.Unmarshal(src, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				t.Errorf("recording rule %s: the name check below does not know recorded series; name daemon metrics only", r.Record)
			}
			out = append(out, promQuery{"alert " + r.Alert, r.Expr})
		}
	}

	var tests struct {
		Tests []struct {
			Name        string `yaml:"name"`
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	src, err = os.ReadFile(alertTestsFile)
	must(t, err)
	must(t, yaml.Unmarshal(src, &tests))
	for _, tc := range tests.Tests {
		for _, s := range tc.InputSeries {
			out = append(out, promQuery{"alert test " + tc.Name, s.Series})
		}
	}

	var dash struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	src, err = os.ReadFile(dashboardFile)
	must(t, err)
	must(t, json.Unmarshal(src, &dash))
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, promQuery{"panel " + p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		// label_values(selector, label): the selector is PromQL.
		if m := regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`).FindStringSubmatch(q); m != nil {
			out = append(out, promQuery{"variable " + v.Name, fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
		} else {
			t.Errorf("dashboard variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
	}
	return out
}

type dashPanel struct {
	Title   string      `json:"title"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var (
	metricName   = regexp.MustCompile(`\b(?:lakewap|go|process)_[a-z0-9_]+\b`)
	selector     = regexp.MustCompile(`\b((?:lakewap|go|process)_[a-z0-9_]+)\s*\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)`)
	grouping     = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	// Labels Prometheus adds when it scrapes, and the histogram's bucket bound.
	scrapeLabels = []string{"job", "instance"}
)

// family finds the scraped family a name in a query stands for: itself, or
// the histogram (or summary) whose _bucket, _count or _sum series it is.
func family(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, bool) {
	if f, ok := fams[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := fams[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || (f.GetType() == dto.MetricType_SUMMARY && suffix != "_bucket")) {
			return f, true
		}
	}
	return nil, false
}

// withInventory adds to fams, as a family of one series whose labels are
// empty, each metric of inv that fams lacks.
func withInventory(fams map[string]*dto.MetricFamily, inv map[string]inventoryLine) {
	str := func(s string) *string { return &s }
	for name, l := range inv {
		if _, ok := fams[name]; ok {
			continue
		}
		typ := dto.MetricType(dto.MetricType_value[l.typ])
		m := &dto.Metric{}
		for _, label := range l.labels {
			m.Label = append(m.Label, &dto.LabelPair{Name: str(label), Value: str("")})
		}
		fams[name] = &dto.MetricFamily{Name: str(name), Help: str(l.help), Type: &typ, Metric: []*dto.Metric{m}}
	}
}

// labelNames are the label names f's series carry.
func labelNames(f *dto.MetricFamily, name string) []string {
	seen := map[string]bool{}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			seen[l.GetName()] = true
		}
	}
	if strings.HasSuffix(name, "_bucket") {
		seen["le"] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// checkQueries reports every metric a query names that fams does not have,
// and every label a selector matches on or a by/without clause groups by
// that none of the query's metrics carries.
func checkQueries(fams map[string]*dto.MetricFamily, qs []promQuery) []string {
	var problems []string
	for _, q := range qs {
		names := metricName.FindAllString(q.expr, -1)
		if len(names) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %q names no lakewap_, go_ or process_ metric", q.where, q.expr))
			continue
		}
		all := slices.Clone(scrapeLabels)
		for _, n := range names {
			f, ok := family(fams, n)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: metric %s is not exported by the daemon", q.where, n))
				continue
			}
			all = append(all, labelNames(f, n)...)
		}
		for _, s := range selector.FindAllStringSubmatch(q.expr, -1) {
			f, ok := family(fams, s[1])
			if !ok {
				continue
			}
			have := append(labelNames(f, s[1]), scrapeLabels...)
			for _, l := range matcherLabel.FindAllStringSubmatch(s[2], -1) {
				if l[1] != "__name__" && !slices.Contains(have, l[1]) {
					problems = append(problems, fmt.Sprintf("%s: %s has no label %q (it has %v)", q.where, s[1], l[1], have))
				}
			}
		}
		for _, g := range grouping.FindAllStringSubmatch(q.expr, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !slices.Contains(all, l) {
					problems = append(problems, fmt.Sprintf("%s: groups by %q, which none of %v carries", q.where, l, names))
				}
			}
		}
	}
	return problems
}

// TestDeployKitNamesOnlyExportedMetrics runs the daemon through what the
// alerts watch for (a published batch, an audit failure, a dead letter,
// Slack down), scrapes its /metrics, and fails on any metric or label the
// alert rules, their promtool tests or the Grafana dashboard name that the
// daemon does not export. Where promtool is installed, the dashboard's
// queries are also parsed by it (the rules are by `promtool test rules`).
func TestDeployKitNamesOnlyExportedMetrics(t *testing.T) {
	queries := deployQueries(t)
	if len(queries) < 20 {
		t.Fatalf("found only %d queries in deploy/", len(queries))
	}
	// The check finds what it is meant to find.
	if p := checkQueries(map[string]*dto.MetricFamily{}, []promQuery{{"probe", `sum by (dataset) (lakewap_no_such_metric{dataset="x"})`}}); len(p) == 0 {
		t.Fatal("checkQueries accepted a metric the scrape does not have")
	}

	src, err := os.ReadFile(metricsInventory)
	must(t, err)
	inv := parseInventory(t, string(src))
	probe := map[string]*dto.MetricFamily{}
	withInventory(probe, inv)
	if p := checkQueries(probe, []promQuery{{"probe", `sum by (target) (rate(lakewap_publish_guessed_rechecks_total{outcome="void"}[5m]))`}}); len(p) != 0 {
		t.Fatalf("checkQueries refused a registered metric without a series: %v", p)
	}
	if p := checkQueries(probe, []promQuery{{"probe", `lakewap_publish_guessed_rechecks_total{no_such_label="x"}`}}); len(p) == 0 {
		t.Fatal("checkQueries accepted a label the inventory's metric does not have")
	}

	slackSrv := newSlackAPI(t)
	slackSrv.down = true
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "test-token"
		c.Notify.Slack = &config.Slack{Token: "xoxb-e2e-secret", Channel: "C0WAP", APIURL: slackSrv.GetAPIURL()}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if ev := e.runBatch(t, "kit-good-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good batch ended %s: %+v", ev.EventType(), ev)
	}
	if ev := e.runBatch(t, "kit-bad-1", harness.BadBillingRows); ev.EventType() != schemas.TypeBatchAborted {
		t.Fatalf("bad batch ended %s: %+v", ev.EventType(), ev)
	}
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("kit-junk"), Value: []byte("not an event")}))

	url := "http://" + e.d.HTTPAddr() + "/metrics"
	fams := scrape(t, url)
	for (fams["lakewap_consumer_dead_letters_total"] == nil || fams["lakewap_consumer_lag_messages"] == nil ||
		fams["lakewap_consumer_stalled_seconds"] == nil) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		fams = scrape(t, url)
	}
	if got := value(t, fams, "lakewap_notify_attempts_total", map[string]string{"sink": "slack", "outcome": "ok"}); got != 0 {
		t.Errorf("Slack is down but %v attempts succeeded", got)
	}

	// A metric the daemon registers but that has no series after this run
	// (lakewap_publish_guessed_rechecks_total, lakewap_kafka_refused_writes_total)
	// is checked against the inventory, which TestMetricsInventory holds to
	// the registry's descriptors: its type and label names.
	withInventory(fams, inv)
	for _, p := range checkQueries(fams, queries) {
		t.Error(p)
	}
	if t.Failed() {
		var have []string
		for n := range fams {
			have = append(have, n)
		}
		sort.Strings(have)
		t.Logf("the daemon exports: %s", strings.Join(have, " "))
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Logf("promtool not installed: dashboard queries checked for names only, not parsed")
		return
	}
	// The dashboard's queries as recording rules, with Grafana's variables
	// filled in, so that promtool parses them.
	fill := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*", "$dataset", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		if strings.HasPrefix(q.where, "panel ") || strings.HasPrefix(q.where, "variable ") {
			expr, _ := json.Marshal(fill.Replace(q.expr))
			fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %s\n", i, expr)
		}
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	must(t, os.WriteFile(f, []byte(b.String()), 0o644))
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool does not parse the dashboard's queries: %v\n%s", err, out)
	}
}
