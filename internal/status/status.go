// Package status is the daemon's read-only status page, /runs on its HTTP
// listener: the runs this instance holds, with their state, age, deadline,
// last error and the checks of their last audit, links into the lakeFS UI
// and the lakewap commands that act on them. HTML for a browser, JSON for
// Accept: application/json. It changes nothing: what to do is a command to
// copy, which asks the daemon through its input topic like any other.
//
// Everything shown comes from data (batch ids, errors, check messages,
// sample rows), so the page is rendered with html/template, which escapes
// it; sample rows are left out unless the config allows them; no secret is
// in a run.
//
// It imports pipeline and schemas.
package status

import (
	"cmp"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Path is where the daemon serves the page.
const Path = "/runs"

// MaxRuns bounds the runs one answer lists (newest first); the rest are
// counted.
const MaxRuns = 500

// MaxAnswerBytes is the byte budget of the runs one answer shows, as JSON
// and as HTML (each run counted as the larger): runs past it are counted
// as omitted, like those past MaxRuns.
const MaxAnswerBytes = 4 << 20

// Options configure the page.
type Options struct {
	// Runs returns the runs this instance holds.
	Runs func() []pipeline.Run
	// Now is the clock; default time.Now.
	Now func() time.Time
	// LakeFSUI is the lakeFS UI's base URL (lakefs.ui_url); without it the
	// page has no links into lakeFS.
	LakeFSUI string
	// ShowSamples shows the sample rows of failed checks (http.runs_samples);
	// off by default: they are data, and whoever reaches the page may not be
	// allowed to read it.
	ShowSamples bool
	// Token, when set, must come with each request, in the X-Lakewap-Token
	// header, as a bearer token, or as the password of HTTP basic auth (what
	// a browser can send). The daemon sets it when the listener is not on
	// loopback.
	Token string
}

// Handler returns the /runs handler.
func Handler(o Options) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	return page{o}
}

type page struct{ o Options }

// Page is what the page shows, as JSON and to the template.
type Page struct {
	Now      time.Time `json:"now"`
	Dataset  string    `json:"dataset,omitempty"`
	State    string    `json:"state,omitempty"`
	Datasets []string  `json:"datasets"`
	States   []string  `json:"states"`
	Runs     []RunView `json:"runs"`
	// Omitted counts the matching runs beyond MaxRuns or MaxAnswerBytes.
	Omitted int `json:"omitted,omitempty"`
}

// RunView is one run as the page shows it.
type RunView struct {
	BatchID      string     `json:"batch_id"`
	Dataset      string     `json:"dataset"`
	State        string     `json:"state"`
	Repository   string     `json:"repository,omitempty"`
	Branch       string     `json:"branch,omitempty"`
	Target       string     `json:"target,omitempty"`
	LandedAt     *time.Time `json:"landed_at,omitempty"`
	Age          string     `json:"age,omitempty"`
	StateSince   time.Time  `json:"state_since"`
	InState      string     `json:"in_state"`
	Deadline     *time.Time `json:"deadline,omitempty"`
	PastDeadline bool       `json:"past_deadline"`
	Reason       string     `json:"reason,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	Attempts     int        `json:"attempts,omitempty"`
	SealedCommit string     `json:"sealed_commit,omitempty"`
	CommitID     string     `json:"commit_id,omitempty"`
	Checks       []Check    `json:"checks,omitempty"`
	Links        Links      `json:"links"`
	Commands     []string   `json:"commands"`
	TraceID      string     `json:"trace_id,omitempty"`
}

// Check is one check of the run's last audit.
type Check struct {
	Name       string   `json:"name"`
	Table      string   `json:"table,omitempty"`
	Severity   string   `json:"severity"`
	Status     string   `json:"status"`
	Observed   string   `json:"observed,omitempty"`
	Threshold  string   `json:"threshold,omitempty"`
	Message    string   `json:"message,omitempty"`
	SampleRows []string `json:"sample_rows,omitempty"`
}

// Links are addresses in the lakeFS UI ("" without lakefs.ui_url).
type Links struct {
	Branch       string `json:"branch,omitempty"`
	SealedCommit string `json:"sealed_commit,omitempty"`
	Commit       string `json:"commit,omitempty"`
}

func (p page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if p.o.Token != "" && !authorized(r, p.o.Token) {
		w.Header().Set("WWW-Authenticate", `Basic realm="lakewap", charset="UTF-8"`)
		http.Error(w, "unauthorized: send the token (X-Lakewap-Token, a bearer token, or the basic-auth password)", http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	pg := p.build(q.Get("dataset"), q.Get("state"))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(pg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Nothing on the page runs scripts or loads anything from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	_ = pageTemplate.Execute(w, pg)
}

func authorized(r *http.Request, token string) bool {
	given := r.Header.Get("X-Lakewap-Token")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		given = b
	} else if _, pw, ok := r.BasicAuth(); ok {
		given = pw
	}
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.TrimSpace(mt) {
		case "application/json":
			return true
		case "text/html":
			return false
		}
	}
	return false
}

func (p page) build(dataset, state string) Page {
	now := p.o.Now()
	runs := p.o.Runs()
	pg := Page{Now: now, Dataset: dataset, State: state, States: schemas.States(), Runs: []RunView{}}
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Dataset] {
			seen[r.Dataset] = true
			pg.Datasets = append(pg.Datasets, r.Dataset)
		}
	}
	slices.Sort(pg.Datasets)
	runs = slices.DeleteFunc(slices.Clone(runs), func(r pipeline.Run) bool {
		return dataset != "" && r.Dataset != dataset || state != "" && string(r.State) != state
	})
	// Newest change first; the batch id breaks ties, so the order is stable.
	slices.SortFunc(runs, func(a, b pipeline.Run) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.BatchID, b.BatchID))
	})
	if len(runs) > MaxRuns {
		pg.Omitted = len(runs) - MaxRuns
		runs = runs[:MaxRuns]
	}
	used := 0
	for i, r := range runs {
		v := p.view(r, now)
		used += viewBytes(v)
		if used > MaxAnswerBytes && i > 0 {
			pg.Omitted += len(runs) - i
			break
		}
		pg.Runs = append(pg.Runs, v)
	}
	return pg
}

// viewBytes is what v takes of an answer: the larger of its JSON (as
// ServeHTTP indents it) and its HTML row.
func viewBytes(v RunView) int {
	var c byteCount
	enc := json.NewEncoder(&c)
	enc.SetIndent("  ", " ")
	_ = enc.Encode(v)
	asJSON := int(c)
	c = 0
	_ = pageTemplate.ExecuteTemplate(&c, "run", v)
	return max(asJSON, int(c))
}

// byteCount is a writer that counts what it is given.
type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

func (p page) view(r pipeline.Run, now time.Time) RunView {
	v := RunView{BatchID: r.BatchID, Dataset: r.Dataset, State: string(r.State), Repository: r.Repository,
		Branch: r.Branch, Target: r.Target, StateSince: r.StateSince, InState: since(now, r.StateSince),
		PastDeadline: r.PastDeadline(now), Reason: r.Reason, LastError: cmp.Or(r.LastError, r.Detail),
		Attempts: r.Attempts, SealedCommit: r.SealedCommit, CommitID: r.CommitID}
	if !r.LandedAt.IsZero() {
		landed := r.LandedAt
		v.LandedAt = &landed
		v.Age = since(now, r.LandedAt)
	}
	if !r.Deadline.IsZero() && !r.State.Terminal() {
		d := r.Deadline
		v.Deadline = &d
	}
	if r.Report != nil {
		for _, c := range r.Report.Checks {
			ch := Check{Name: c.Name, Table: c.Table, Severity: c.Severity, Status: c.Status,
				Observed: c.Observed, Threshold: c.Threshold, Message: c.Message}
			if p.o.ShowSamples {
				ch.SampleRows = c.SampleRows
			}
			v.Checks = append(v.Checks, ch)
		}
	}
	v.Links = Links{Branch: p.ui(r.Repository, "/objects?ref="+url.QueryEscape(r.Branch), r.Branch),
		SealedCommit: p.ui(r.Repository, "/commits/"+url.PathEscape(r.SealedCommit), r.SealedCommit),
		Commit:       p.ui(r.Repository, "/commits/"+url.PathEscape(r.CommitID), r.CommitID)}
	v.Commands = commands(r)
	v.TraceID = r.Trace.TraceID()
	return v
}

func (p page) ui(repo, path, id string) string {
	if p.o.LakeFSUI == "" || repo == "" || id == "" {
		return ""
	}
	return strings.TrimRight(p.o.LakeFSUI, "/") + "/repositories/" + url.PathEscape(repo) + path
}

// commands are the lakewap commands that act on a run in its state (the
// config path is the operator's: -config F).
func commands(r pipeline.Run) []string {
	b := shellQuote(r.BatchID)
	out := []string{"lakewap runs -config F -state " + string(r.State)}
	switch r.State {
	case pipeline.StateFailed:
		out = append(out, "lakewap retry -config F -batch "+b)
	case pipeline.StateAborted:
		if r.Reason == schemas.ReasonAuditFailed || r.Reason == schemas.ReasonMergeConflict || r.Reason == schemas.ReasonAuditCrashed ||
			r.Reason == schemas.ReasonUnauditedObjects {
			out = append(out, "lakewap retry -config F -batch "+b)
		}
	case pipeline.StatePublished:
		out = append(out, "lakewap revert -config F -batch "+b+" -reason 'why'")
	case pipeline.StatePending, pipeline.StateLanded, pipeline.StateAwaitingWrites, pipeline.StateAuditing:
		out = append(out, "lakewap cancel -config F -batch "+b)
	}
	if r.Repository != "" && r.SealedCommit != "" {
		out = append(out, "lakewap audit -config F -dataset "+shellQuote(r.Dataset)+" -ref "+shellQuote(r.SealedCommit))
	}
	return out
}

// shellQuote quotes s for a POSIX shell unless it is plainly safe.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("runs").Funcs(template.FuncMap{
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(pageHTML))
