package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
)

// Every value a log line holds is clipped to MaxLogValueBytes, saying how
// much was cut: what the daemon logs quotes data (a DuckDB error quoting a
// column a writer named with 100 KB, lakeFS's answers, a message's key), and
// a log line of megabytes breaks log shippers (a Docker log line is cut at
// 16 KiB, Loki refuses lines over 256 KiB by default).
func TestLogValuesAreBounded(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		log := NewLogger(&buf, format, "debug")
		big := strings.Repeat("é", 100_000)
		log.With("component", big).Warn("audit view failed", "err", errors.New("Binder Error: column "+big), "table", big, "n", 7)
		line := buf.String()
		if n := len(line); n > 4*MaxLogValueBytes+1024 {
			t.Errorf("%s: log line of %d bytes", format, n)
		}
		if !strings.Contains(line, "bytes clipped") || !strings.Contains(line, "Binder Error: column") {
			t.Errorf("%s: log line %.200q… does not keep the start or say it was clipped", format, line)
		}
	}
}

// What the daemon logs quotes writers' and producers' data (an object path
// in an audit's error, a message's key), and its log reaches an operator's
// terminal (lakewap run, kubectl logs; the CLI commands log to stderr).
// The text format escapes every control character and bidi override, but
// JSON encoding leaves C1 controls (U+009B is a terminal's CSI) and bidi
// overrides raw. Both formats now show none raw, and the JSON line still
// decodes to the same value.
func TestLogLinesHoldNoTerminalControls(t *testing.T) {
	const evil = "gold/x\u009b2J\u202e.parquet\x1b]0;owned\x07"
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		NewLogger(&buf, format, "info").Warn("download failed", "path", evil, "err", errors.New("download "+evil+"@b: 502"))
		line := strings.TrimSuffix(buf.String(), "\n")
		for _, r := range line {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				t.Errorf("%s: raw %U in the log line %q", format, r, line)
				break
			}
		}
		if format != "json" {
			continue
		}
		var v struct{ Path string }
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Path != evil {
			t.Errorf("json: the line decodes to %q, %v; want the path as logged", v.Path, err)
		}
	}
}
