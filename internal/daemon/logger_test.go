package daemon

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
