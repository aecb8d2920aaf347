package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
)

// TestDeadLetterLogLinesAreBoundedPerMinute: each dead letter was logged,
// a warning of up to 2 KiB: whoever may write the input topic wrote as many
// warnings to lakewap's log as junk messages (the dead-letter topic keeps
// every one, and lakewap_dead_letters_total counts them), so a flood of
// junk cost log storage without bound and buried the lines an operator
// needs. Dead letters are logged at most maxDeadLetterLogs per reason a
// minute; the next one logged says how many were not.
func TestDeadLetterLogLinesAreBoundedPerMinute(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	const junk = 60
	msgs := make([]kafkago.Message, 0, junk+1)
	for i := range junk {
		msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprintf("junk-%d", i)), Value: []byte("junk")})
	}
	produce(t, k, inTopic, 0, append(msgs, kafkago.Message{Key: []byte("good"), Value: []byte("good")})...)
	cfg := testConfig(k, "dlq-log-rate")
	cfg.Registerer = prometheus.NewRegistry()
	var now atomic.Int64
	start := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	now.Store(start.UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, now.Load()).UTC() }
	rec := newRecorder()
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		if strings.HasPrefix(string(m.Key), "junk") || string(m.Key) == "late" {
			return Poison(errors.New("undecodable junk"), "undecodable")
		}
		return nil
	}
	logs := &jsonLines{}
	startConsumerLogging(t, cfg, rec, slog.New(slog.NewJSONHandler(logs, nil)))
	eventually(t, "offset past every message committed", func() bool {
		return committed(t, k, "dlq-log-rate", inTopic, 1)[0] == junk+1
	})
	if n := len(logs.with("msg", "message sent to dead-letter topic")); n > maxDeadLetterLogs {
		t.Fatalf("%d dead letters logged one line each within a minute; want at most %d", n, maxDeadLetterLogs)
	}
	// A minute on, the next dead letter is logged, with how many were not.
	now.Store(start.Add(time.Minute + time.Second).UnixNano())
	produce(t, k, inTopic, 0, kafkago.Message{Key: []byte("late"), Value: []byte("junk")})
	eventually(t, "offset past the late message committed", func() bool {
		return committed(t, k, "dlq-log-rate", inTopic, 1)[0] == junk+2
	})
	notLogged := logs.with("msg", "dead letters not logged")
	if len(notLogged) != 1 || fmt.Sprint(notLogged[0]["not_logged"]) != fmt.Sprint(junk-maxDeadLetterLogs) || notLogged[0]["reason"] != "undecodable" {
		t.Errorf("lines saying what was not logged: %v; want one, counting %d of reason undecodable", notLogged, junk-maxDeadLetterLogs)
	}
	if n := len(logs.with("msg", "message sent to dead-letter topic")); n != maxDeadLetterLogs+1 {
		t.Errorf("%d dead letters logged, want %d (the first minute's, then the late one)", n, maxDeadLetterLogs+1)
	}
}

// jsonLines keeps the lines of a JSON log.
type jsonLines struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *jsonLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err == nil {
			l.lines = append(l.lines, m)
		}
	}
	return len(p), nil
}

func (l *jsonLines) with(key, value string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, m := range l.lines {
		if m[key] == value {
			out = append(out, m)
		}
	}
	return out
}
