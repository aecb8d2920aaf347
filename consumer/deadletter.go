package consumer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lakewap/lakewap/kafka"
)

// Headers added to a dead letter, next to the original key, value and headers.
const (
	HeaderDLQError     = "wap.dlq.error"
	HeaderDLQReason    = "wap.dlq.reason"
	HeaderDLQTopic     = "wap.dlq.topic"
	HeaderDLQPartition = "wap.dlq.partition"
	HeaderDLQOffset    = "wap.dlq.offset"
	HeaderDLQTime      = "wap.dlq.time"
)

// ReasonPanic is the dead-letter reason for a message whose Handle panicked.
const ReasonPanic = "panic"

// HeaderDLQDropped says the original value and headers were left out of the
// dead letter because, with the wap.dlq.* headers, it exceeded the
// dead-letter topic's maximum message size.
const HeaderDLQDropped = "wap.dlq.dropped"

// MaxDLQErrorBytes bounds the wap.dlq.error header: an error that grows
// with its input (a validation error listing every bad field, say) must not
// make the dead letter itself too large to write.
const MaxDLQErrorBytes = 2048

// PoisonError marks a message that can never be handled (it cannot be decoded,
// fails validation, ...). Retrying would block the partition forever, so the
// consumer moves it to the dead-letter topic and goes on.
type PoisonError struct {
	Reason string // short fixed code, e.g. "decode", "invalid"; it labels a metric
	Err    error
}

func (e *PoisonError) Error() string { return fmt.Sprintf("poison message (%s): %v", e.Reason, e.Err) }
func (e *PoisonError) Unwrap() error { return e.Err }

// Poison wraps err so that Handle's caller dead-letters the message instead of
// retrying it. reason should be a short code such as "decode" or "invalid".
func Poison(err error, reason string) error {
	if err == nil {
		err = errors.New("unspecified")
	}
	if reason == "" {
		reason = "unknown"
	}
	return &PoisonError{Reason: reason, Err: err}
}

// deadLetter builds the dead-letter record for msg: the original bytes plus
// headers saying why and where it came from. The original's headers named
// wap.dlq.* (in any case) are left out: those of a dead letter are
// lakewap's alone (a producer's came first, and a reader taking the first
// of a name read the producer's reason, topic and offset).
func deadLetter(msg kafka.Message, p *PoisonError, at time.Time) kafka.Message {
	headers := make([]kafka.Header, 0, len(msg.Headers)+6)
	for _, h := range msg.Headers {
		if !isDLQHeader(h.Key) {
			headers = append(headers, h)
		}
	}
	headers = append(headers,
		kafka.Header{Key: HeaderDLQError, Value: []byte(clipText(p.Err.Error(), MaxDLQErrorBytes))},
		kafka.Header{Key: HeaderDLQReason, Value: []byte(p.Reason)},
		kafka.Header{Key: HeaderDLQTopic, Value: []byte(msg.Topic)},
		kafka.Header{Key: HeaderDLQPartition, Value: []byte(strconv.Itoa(msg.Partition))},
		kafka.Header{Key: HeaderDLQOffset, Value: []byte(strconv.FormatInt(msg.Offset, 10))},
		kafka.Header{Key: HeaderDLQTime, Value: []byte(at.UTC().Format(time.RFC3339Nano))},
	)
	return kafka.Message{Key: msg.Key, Value: msg.Value, Headers: headers}
}

// withoutOriginal is dl without the original value and headers, for a dead
// letter the topic refused as too large: the reason and the position of the
// original (still in the input topic until retention) are what is left.
func withoutOriginal(dl kafka.Message, original kafka.Message) kafka.Message {
	out := kafka.Message{Key: dl.Key[:min(len(dl.Key), maxDroppedKeyBytes)]}
	for _, h := range dl.Headers {
		if isDLQHeader(h.Key) { // deadLetter's, the original's left out
			out.Headers = append(out.Headers, h)
		}
	}
	note := fmt.Sprintf("value of %d bytes and %d headers", len(original.Value), len(original.Headers))
	if len(dl.Key) > maxDroppedKeyBytes {
		note += fmt.Sprintf(", key of %d bytes cut to its first %d", len(dl.Key), maxDroppedKeyBytes)
	}
	out.Headers = append(out.Headers, kafka.Header{Key: HeaderDLQDropped, Value: []byte(note + ": too large for the dead-letter topic")})
	return out
}

// dlqHeaderPrefix starts the names of the headers lakewap adds to a dead
// letter.
const dlqHeaderPrefix = "wap.dlq."

func isDLQHeader(key string) bool {
	return len(key) >= len(dlqHeaderPrefix) && strings.EqualFold(key[:len(dlqHeaderPrefix)], dlqHeaderPrefix)
}

// maxDroppedKeyBytes is how much of its key a dead letter written without
// its original keeps.
const maxDroppedKeyBytes = 1024

// logText is err's text as the consumer logs it: clipped like the
// wap.dlq.error header, since a handler's error may quote its input (a
// message's key, a value), which can be as large as the message.
func logText(err error) string {
	if err == nil {
		return ""
	}
	return clipText(err.Error(), MaxDLQErrorBytes)
}

// clipText shortens s to at most max bytes on a rune boundary, saying how
// much was cut.
func clipText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("… (%d bytes clipped)", len(s)-limit)
	cut := max(limit-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// maxLoggedKeyBytes is how much of a dead letter's key its log line
// quotes (a batch id is at most 200 bytes; a key may be as large as the
// message).
const maxLoggedKeyBytes = 256

// maxDeadLetterLogs bounds the dead letters logged per reason a minute:
// whoever may write the input topic would otherwise write a warning of up
// to MaxDLQErrorBytes to the log per junk message, without bound, and bury
// the lines an operator needs. The dead-letter topic keeps every one and
// lakewap_dead_letters_total counts them; the next line logged after a
// minute says how many were not.
const maxDeadLetterLogs = 10

// ReasonBatchTooLarge is the dead-letter reason of a compressed record
// batch that decompresses to more than kafka.MaxDecompressedBatchBytes.
const ReasonBatchTooLarge = "batch_too_large"

// ReasonRecordTooLarge is the dead-letter reason of one record of a
// compressed record batch that decompresses to more than
// kafka.MaxDecompressedRecordBytes (the batch's other records are read).
const ReasonRecordTooLarge = "record_too_large"

// ReasonTooManyHeaders is the dead-letter reason of a record with more than
// maxRecordHeaders headers (the dead letter keeps its key and value).
const ReasonTooManyHeaders = "too_many_headers"
