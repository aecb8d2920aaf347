package status

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// sampleRuns are runs in several states, one of them with hostile text in
// every field that comes from data.
func sampleRuns() []pipeline.Run {
	report := &schemas.AuditReport{Dataset: "billing", Passed: false, Checks: []schemas.CheckResult{
		{Name: "billing_id_not_null", Table: "billing_fact", Severity: "error", Status: schemas.StatusFail,
			Observed: "40", Threshold: "0", SampleRows: []string{`{"billing_id":null,"secret_col":"<b>row</b>"}`}},
		{Name: "has_rows", Table: "billing_fact", Severity: "error", Status: schemas.StatusPass, Observed: "1000"},
	}}
	return []pipeline.Run{
		{BatchID: "b-published", Dataset: "billing", Repository: "lake", Branch: "wap-billing-b-published", Target: "main",
			State: pipeline.StatePublished, LandedAt: now.Add(-2 * time.Hour), StateSince: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour),
			SealedCommit: "c0ffee", CommitID: "abc123", Report: &schemas.AuditReport{Passed: true, Checks: report.Checks[1:]}},
		{BatchID: "b-aborted", Dataset: "billing", Repository: "lake", Branch: "wap-billing-b-aborted", Target: "main",
			State: pipeline.StateAborted, Reason: schemas.ReasonAuditFailed, LandedAt: now.Add(-30 * time.Minute),
			StateSince: now.Add(-20 * time.Minute), UpdatedAt: now.Add(-20 * time.Minute), SealedCommit: "deadbeef", Report: report},
		{BatchID: "b-waiting", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b-waiting", State: pipeline.StateAwaitingWrites,
			LandedAt: now.Add(-10 * time.Minute), StateSince: now.Add(-10 * time.Minute), UpdatedAt: now.Add(-10 * time.Minute),
			Deadline: now.Add(-time.Minute)},
		{BatchID: `b-<script>alert(1)</script>`, Dataset: "orders", Repository: "lake", Branch: "wap-orders-x", State: pipeline.StateFailed,
			Reason: "", LastError: `lakefs: 503 <img src=x onerror=alert(2)>`, Attempts: 7,
			LandedAt: now.Add(-5 * time.Minute), StateSince: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)},
	}
}

func get(t *testing.T, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestRunsJSONFiltersAndLinks(t *testing.T) {
	h := Handler(Options{Runs: sampleRuns, Now: func() time.Time { return now }, LakeFSUI: "http://lakefs.test:8000/"})
	rec := get(t, h, "/runs?dataset=billing", map[string]string{"Accept": "application/json"})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var pg Page
	if err := json.Unmarshal(rec.Body.Bytes(), &pg); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range pg.Runs {
		ids = append(ids, r.BatchID)
	}
	if !slices.Equal(ids, []string{"b-aborted", "b-published"}) || !slices.Equal(pg.Datasets, []string{"billing", "orders"}) {
		t.Fatalf("runs %v datasets %v, want billing's two, newest first, and both datasets", ids, pg.Datasets)
	}
	ab := pg.Runs[0]
	if ab.Links.Branch != "http://lakefs.test:8000/repositories/lake/objects?ref=wap-billing-b-aborted" ||
		ab.Links.SealedCommit != "http://lakefs.test:8000/repositories/lake/commits/deadbeef" || ab.Links.Commit != "" {
		t.Errorf("links %+v", ab.Links)
	}
	if ab.Age != "30m0s" || len(ab.Checks) != 2 || ab.Checks[0].SampleRows != nil {
		t.Errorf("aborted run %+v: want age 30m0s and two checks without sample rows", ab)
	}
	if !slices.Contains(ab.Commands, "lakewap retry -config F -batch b-aborted") {
		t.Errorf("commands %v", ab.Commands)
	}
	rec = get(t, h, "/runs?state=awaiting_writes", map[string]string{"Accept": "application/json"})
	pg = Page{}
	_ = json.Unmarshal(rec.Body.Bytes(), &pg)
	if len(pg.Runs) != 1 || !pg.Runs[0].PastDeadline || pg.Runs[0].Deadline == nil {
		t.Errorf("awaiting_writes filter: %+v, want the one run past its deadline", pg.Runs)
	}
}

func TestRunsSamplesOnlyWhenAllowed(t *testing.T) {
	for _, show := range []bool{false, true} {
		h := Handler(Options{Runs: sampleRuns, Now: func() time.Time { return now }, ShowSamples: show})
		body := get(t, h, "/runs", nil).Body.String()
		if got := strings.Contains(body, "secret_col"); got != show {
			t.Errorf("ShowSamples %v: page shows sample rows %v", show, got)
		}
	}
}

func TestRunsHTMLEscapesDataAndDropsScripts(t *testing.T) {
	h := Handler(Options{Runs: sampleRuns, Now: func() time.Time { return now }})
	rec := get(t, h, "/runs", map[string]string{"Accept": "text/html,application/xhtml+xml"})
	body := rec.Body.String()
	if rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("headers %v", rec.Header())
	}
	for _, bad := range []string{"<script>alert(1)", "<img src=x", "<b>row</b>"} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(body, "&lt;img src=x onerror=alert(2)&gt;") {
		t.Errorf("page lacks the escaped batch id and error")
	}
	// The retry command quotes the hostile batch id for the shell.
	if !strings.Contains(body, "lakewap retry -config F -batch &#39;b-&lt;script&gt;alert(1)&lt;/script&gt;&#39;") {
		t.Errorf("page lacks the quoted retry command")
	}
}

func TestRunsToken(t *testing.T) {
	h := Handler(Options{Runs: sampleRuns, Now: func() time.Time { return now }, Token: "s3cret"})
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"none", nil, 401},
		{"wrong", map[string]string{"X-Lakewap-Token": "nope"}, 401},
		{"header", map[string]string{"X-Lakewap-Token": "s3cret"}, 200},
		{"bearer", map[string]string{"Authorization": "Bearer s3cret"}, 200},
		{"basic", map[string]string{"Authorization": "Basic b3BzOnMzY3JldA=="}, 200}, // ops:s3cret
	}
	for _, tc := range cases {
		if rec := get(t, h, "/runs", tc.hdr); rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		} else if tc.want == 401 && (strings.Contains(rec.Body.String(), "b-aborted") || rec.Header().Get("WWW-Authenticate") == "") {
			t.Errorf("%s: a refused request got %q", tc.name, rec.Body.String())
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/runs", nil)
	rec := httptest.NewRecorder()
	Handler(Options{Runs: sampleRuns}).ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}
