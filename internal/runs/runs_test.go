package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
)

// Run texts come from events and lakeFS: `lakewap runs` must not hand a
// terminal its escape sequences.
func TestPrintableEscapesControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain batch-1":            "plain batch-1",
		"\x1b[2J\x1b]0;owned\x07":  `\x1b[2J\x1b]0;owned\x07`,
		"csi \u009b31m":            `csi \x9b31m`,
		"tab\tnewline\n":           `tab\x09newline\x0a`,
		"bad \xff utf8":            `bad \xff utf8`,
		`back\slash`:               `back\\slash`,
		"ünïcode ok \u2028":        "ünïcode ok \u2028",
		"replacement \uFFFD stays": "replacement \uFFFD stays",
		"bidi \u202eoverride":      `bidi \u202eoverride`,
		"del \x7f":                 `del \x7f`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunsJSONEscapesTerminalControls: lakewap runs -json must not hand a
// run's event-supplied reason or detail to the terminal raw. encoding/json
// escapes C0 but leaves C1 (CSI U+009B, NEL U+0085), DEL and bidi overrides.
func TestRunsJSONEscapesTerminalControls(t *testing.T) {
	run := Stored{Partition: 3}
	run.BatchID = "b-\u202eevil"
	run.Dataset = "d\x7f"
	run.Reason = "red \x1b[31m csi \u009b31m nel \u0085 ok ü \u2028"
	run.Detail = "\u009b2J\x1b]0;owned\x07 and \xff bad"
	var out bytes.Buffer
	if err := WriteJSON(&out, []Stored{run}); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\n' && TerminalDangerous(r) {
			t.Errorf("raw %U in runs -json output: %q", r, out.String())
		}
	}
	for _, c := range []string{"\x1b", "\x07", "\x7f", "\u009b", "\u0085", "\u202e"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("runs -json output contains raw %q: %q", c, out.String())
		}
	}
	var back Stored
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("runs -json output is not JSON: %v\n%s", err, out.String())
	}
	if back.BatchID != run.BatchID || back.Dataset != run.Dataset || back.Reason != run.Reason || back.Partition != 3 {
		t.Errorf("decoded %+v, want %+v", back, run)
	}
	// Invalid UTF-8 is replaced by encoding/json itself; the rest must survive.
	if want := strings.ToValidUTF8(run.Detail, "\uFFFD"); back.Detail != want {
		t.Errorf("detail decoded as %q, want %q", back.Detail, want)
	}
}

// `lakewap runs` reads the changelog without the state key's checks, so a
// record whoever may write wap.runs wrote decodes as a run with texts of any
// size (the schema's limits bind events, not what the topic holds). Its
// cells must stay bounded, and must not widen the columns of every other
// row: tabwriter pads each row to the widest cell of its column.
func TestRunsTableBoundsAJunkRecordsTexts(t *testing.T) {
	huge := strings.Repeat("x", 64<<10)
	junk := Stored{}
	junk.BatchID = "junk-" + huge
	junk.Dataset = huge
	junk.State = pipeline.State(huge)
	junk.Branch = huge
	junk.Reason = huge
	stored := []Stored{junk}
	for i := range 50 {
		r := Stored{}
		r.BatchID = fmt.Sprintf("batch-%d", i)
		r.Dataset = "orders"
		r.State = pipeline.StatePublished
		r.Branch = fmt.Sprintf("wap-orders-batch-%d", i)
		stored = append(stored, r)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, stored, time.Unix(1e9, 0)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for i, l := range lines {
		if len(l) > 8*maxTableCellBytes { // 7 cells and their padding
			t.Errorf("line %d of %d is %d bytes: %.80q…", i, len(lines), len(l), l)
		}
	}
	if !strings.Contains(out.String(), "bytes clipped") {
		t.Errorf("table does not say the junk record's texts were clipped")
	}
}
