package runs

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/schemas"
)

// WriteReport prints an audit report of ref (against base) for people: a row
// per check, the sample rows of the checks that did not pass, the verdict.
// What comes from the audited data is shown Printable.
func WriteReport(w io.Writer, rep schemas.AuditReport, ref, base string) {
	against := ""
	if base != "" {
		against = " against " + base
	}
	fmt.Fprintf(w, "audit of dataset %s at %s (commit %s)%s\n", rep.Dataset, ref, Short(rep.Ref), against)
	switch {
	case rep.Mode == "incremental":
		fmt.Fprintf(w, "incremental: the batch's rows, with lakewap's statistics of the unchanged files\n")
	case rep.ModeReason != "":
		fmt.Fprintf(w, "full: %s\n", Printable(rep.ModeReason))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tTABLE\tSEVERITY\tSTATUS\tOBSERVED\tTHRESHOLD\tDURATION")
	for _, c := range rep.Checks {
		obs := c.Observed
		if c.Status == schemas.StatusError && c.Message != "" {
			obs = c.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%dms\n", c.Name, Dash(c.Table), c.Severity, strings.ToUpper(c.Status),
			cell(obs), cell(c.Threshold), c.DurationMs)
	}
	tw.Flush()
	for _, c := range rep.Checks {
		if c.Status == schemas.StatusPass || (len(c.SampleRows) == 0 && c.Message == "") {
			continue
		}
		fmt.Fprintf(w, "\n%s %s:\n", strings.ToUpper(c.Status), c.Name)
		if c.Message != "" {
			fmt.Fprintf(w, "  %s\n", Printable(c.Message))
		}
		for _, s := range c.SampleRows {
			fmt.Fprintf(w, "  %s\n", Printable(s))
		}
	}
	p, f, wn := rep.Counts()
	verdict := "PASSED"
	if !rep.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d warned in %dms\n", verdict, p, f, wn, rep.DurationMs)
}

// cell keeps a table cell on one line, readable in width and printable.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return Printable(Dash(s))
}

// WriteAnswer prints what the daemon answered, then the event as a JSON
// line, both escaped; it reports whether the request was carried out.
func WriteAnswer(w io.Writer, req, ans schemas.Event) bool {
	say := func(format string, args ...any) { fmt.Fprintln(w, Printable(fmt.Sprintf(format, args...))) }
	done := false
	switch e := ans.(type) {
	case schemas.BatchPublished:
		writeChecks(w, e.Report)
		say("published batch %s (%s) on %s/%s as %s", e.BatchID, e.Dataset, e.Repository, e.TargetRef, Short(e.CommitID))
		done = true
	case schemas.BatchAborted:
		if e.Report != nil {
			writeChecks(w, *e.Report)
		}
		kept := "deleted"
		if e.BranchKept {
			kept = "kept"
		}
		say("batch %s (%s) is aborted (%s): %s; branch %s %s", e.BatchID, e.Dataset, e.Reason, e.Detail, e.Branch, kept)
		_, cancel := req.(schemas.BatchCancelled)
		done = cancel && e.Reason == schemas.ReasonCancelled
	case schemas.BatchFailed:
		say("batch %s (%s) failed in %s after %d attempt(s): %s", e.BatchID, e.Dataset, e.State, e.Attempts, e.Error)
	case schemas.BatchReverted:
		say("reverted batch %s (%s) on %s/%s: publish commit %s undone by %s (by %s: %s)",
			e.BatchID, e.Dataset, e.Repository, e.TargetRef, Short(e.PublishedCommitID), Short(e.CommitID), e.RevertedBy, e.Reason)
		done = true
	case schemas.RequestRefused:
		say("refused (%s): %s", e.Reason, e.Detail)
	}
	if line, err := schemas.ToJSON(ans); err == nil {
		fmt.Fprintf(w, "%s %s\n", ans.EventType(), JSONTerminalSafe(line))
	}
	return done
}

func writeChecks(w io.Writer, rep schemas.AuditReport) {
	for _, c := range rep.Checks {
		fmt.Fprintln(w, Printable(fmt.Sprintf("  %-5s %s (%s on %s): observed %s, threshold %s", c.Status, c.Name, c.Kind, c.Table,
			Dash(c.Observed), Dash(c.Threshold))))
	}
	pass, fail, warn := rep.Counts()
	fmt.Fprintf(w, "audit of %s: passed=%d failed=%d warned=%d\n", Short(rep.Ref), pass, fail, warn)
}

// WriteDecisions prints the janitor's decisions, a row per branch deleted
// (or that would be, with dryRun; every branch with all), then the count.
// lakeFS's error text and what the state store holds are shown Printable.
func WriteDecisions(w io.Writer, ds []janitor.Decision, dryRun, all bool, now time.Time) error {
	t := NewDecisionTable(w, dryRun, all, now)
	for _, d := range ds {
		t.Add(d)
	}
	return t.Close(len(ds))
}

// decisionBlock is how many rows a DecisionTable aligns at once: it prints
// as the janitor decides, holding at most a block of rows (writers can make
// a million branches), so columns align within a block.
const decisionBlock = 256

// DecisionTable prints the janitor's decisions as they come (janitor.Walk's
// visitor), as WriteDecisions does, holding at most decisionBlock rows.
type DecisionTable struct {
	w       io.Writer
	tw      *tabwriter.Writer
	verb    string
	all     bool
	now     time.Time
	rows, n int // rows in the block; branches deleted (or that would be)
	err     error
}

// NewDecisionTable starts a table on w.
func NewDecisionTable(w io.Writer, dryRun, all bool, now time.Time) *DecisionTable {
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	return &DecisionTable{w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), verb: verb, all: all, now: now}
}

// Add prints d's row (if it is shown: deleted, failed, or every one with all).
func (t *DecisionTable) Add(d janitor.Decision) {
	what := "keep"
	switch {
	case d.Delete && d.Err != "":
		what = "FAILED to delete"
	case d.Delete:
		what = t.verb
		t.n++
	case !t.all:
		return
	}
	why := d.Why
	if d.Err != "" {
		why += ": " + d.Err
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\t%s\n", what, Printable(d.Repository+"/"+d.Branch), Printable(Dash(d.BatchID)),
		Printable(Dash(string(d.State))), Age(t.now, t.now.Add(-d.Age)), Printable(why))
	if t.rows++; t.rows == decisionBlock {
		t.rows, t.err = 0, cmp.Or(t.err, t.tw.Flush())
	}
}

// Close prints the rows left and the count, of total branches looked at.
func (t *DecisionTable) Close(total int) error {
	if err := cmp.Or(t.err, t.tw.Flush()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(t.w, "%s %d of %d wap- branch(es)\n", t.verb, t.n, total)
	return err
}
