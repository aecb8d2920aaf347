package notify

import (
	"errors"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/schemas"
)

// DefaultMaxMessageBytes is the results topic's maximum message size
// lakewap assumes unless told (Kafka's default message.max.bytes is
// 1048588), with room for the record overhead.
const DefaultMaxMessageBytes = 1000000

// shrink returns ev with less of its audit report, step by step: first
// without sample rows, then with the failed checks only, then without
// check results. ok is false when there is nothing left to drop.
func shrink(ev schemas.Event, step int) (out schemas.Event, ok bool) {
	cut := func(rep schemas.AuditReport) schemas.AuditReport {
		checks := make([]schemas.CheckResult, 0, len(rep.Checks))
		for _, c := range rep.Checks {
			switch {
			case step >= 3:
				continue
			case step == 2 && c.Status == schemas.StatusPass:
				continue
			}
			c.SampleRows = nil
			checks = append(checks, c)
		}
		rep.Checks = checks
		return rep
	}
	switch e := ev.(type) {
	case schemas.BatchPublished:
		e.Report = cut(e.Report)
		return e, step <= 3
	case schemas.BatchAborted:
		if e.Report == nil {
			return ev, false
		}
		rep := cut(*e.Report)
		e.Report = &rep
		return e, step <= 3
	}
	return ev, false
}

// messageSize is the bytes of m that count against a topic's limit.
func messageSize(m kafka.Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// tooLarge reports a write refused for the message's size.
func tooLarge(err error) bool {
	var mtl kafka.MessageTooLargeError
	if errors.Is(err, kafka.MessageSizeTooLarge) || errors.As(err, &mtl) {
		return true
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		// Only when every failure is about size: another one is retried.
		n := 0
		for _, e := range we {
			if e == nil {
				continue
			}
			if !tooLarge(e) {
				return false
			}
			n++
		}
		return n > 0
	}
	return false
}
