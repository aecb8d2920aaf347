package notify

import (
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// The CloudEvents Kafka protocol binding, binary content mode: a result's
// CloudEvents attributes travel as ce_* headers beside lakewap's own wap.*
// headers, and the message value stays the Avro payload it always was, so
// consumers that know nothing of CloudEvents read it as before.
const (
	// HeaderCESpecVersion is the CloudEvents spec version of a result message (1.0).
	HeaderCESpecVersion = "ce_specversion"
	// HeaderCEID is a result's CloudEvents id: its event id, as in wap.event_id.
	HeaderCEID = "ce_id"
	// HeaderCEType is a result's CloudEvents type: its Avro full name (io.lakewap.events.BatchPublished).
	HeaderCEType = "ce_type"
	// HeaderCESource is a result's CloudEvents source: /lakewap/<dataset>.
	HeaderCESource = "ce_source"
	// HeaderCESubject is a result's CloudEvents subject: <dataset>/<batch id>.
	HeaderCESubject = "ce_subject"
	// HeaderCETime is when a result's event happened (RFC 3339, milliseconds).
	HeaderCETime = "ce_time"
	// HeaderContentType is a result's CloudEvents datacontenttype, application/avro.
	HeaderContentType = "content-type"

	// CloudEventsSpecVersion is the CloudEvents version the headers follow.
	CloudEventsSpecVersion = "1.0"
	// ContentTypeAvro is the content type of a result's value: Avro binary,
	// framed as the codec frames it (single-object encoding, or the
	// Confluent wire format with a schema registry).
	ContentTypeAvro = "application/avro"
)

// cloudEventHeaders returns the CloudEvents attributes of result event ev
// with event id id. The type is the event's Avro full name
// (io.lakewap.events.BatchPublished), the source the dataset's WAP runs
// (/lakewap/<dataset>), the subject <dataset>/<batch>, and the time when
// the event happened, in RFC 3339.
func cloudEventHeaders(ev schemas.Event, id string) map[string]string {
	h := map[string]string{
		HeaderCESpecVersion: CloudEventsSpecVersion,
		HeaderCEID:          id,
		HeaderCEType:        schemas.Namespace + "." + ev.EventType(),
		HeaderCESource:      "/lakewap/" + ev.DatasetName(),
		HeaderCESubject:     ev.DatasetName() + "/" + ev.Batch(),
		HeaderContentType:   ContentTypeAvro,
	}
	if t := eventTime(ev); !t.IsZero() {
		// In milliseconds, as the Avro record has it (timestamp-millis).
		h[HeaderCETime] = t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	return h
}

// eventTime is when a result event happened; zero for a type that does
// not say (ce_time is optional, a made-up one would be worse).
func eventTime(ev schemas.Event) time.Time {
	switch e := ev.(type) {
	case schemas.BranchReady:
		return e.OccurredAt
	case schemas.BatchPublished:
		return e.PublishedAt
	case schemas.BatchAborted:
		return e.OccurredAt
	case schemas.BatchFailed:
		return e.OccurredAt
	case schemas.BatchReverted:
		return e.OccurredAt
	case schemas.RequestRefused:
		return e.OccurredAt
	case schemas.UnattestedChange:
		return e.OccurredAt
	}
	return time.Time{}
}
