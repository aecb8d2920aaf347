package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// FromJSON parses one event of eventType (a Type* name, case-insensitive)
// from a JSON document using the json tags of the Go types (snake_case
// fields, RFC 3339 timestamps). Unknown fields are errors so that typos in
// scripts do not go unnoticed. The event is not validated.
func FromJSON(eventType string, doc []byte) (Event, error) {
	var name string
	for _, t := range EventTypes() {
		if strings.EqualFold(t, eventType) {
			name = t
		}
	}
	switch name {
	case TypeBatchLanded:
		return fromJSON[BatchLanded](doc)
	case TypeWriteComplete:
		return fromJSON[WriteComplete](doc)
	case TypeBatchCancelled:
		return fromJSON[BatchCancelled](doc)
	case TypeBranchReady:
		return fromJSON[BranchReady](doc)
	case TypeBatchPublished:
		return fromJSON[BatchPublished](doc)
	case TypeBatchAborted:
		return fromJSON[BatchAborted](doc)
	case TypeBatchFailed:
		return fromJSON[BatchFailed](doc)
	}
	return nil, fmt.Errorf("schemas: unknown event type %q (want one of %s)", eventType, strings.Join(EventTypes(), ", "))
}

func fromJSON[T Event](doc []byte) (Event, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schemas: %s from JSON: %w", v.EventType(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("schemas: %s from JSON: more than one document", v.EventType())
	}
	return v, nil
}

// ToJSON renders ev as one line of JSON (no trailing newline) with the same
// field names FromJSON reads.
func ToJSON(ev Event) ([]byte, error) {
	if ev == nil {
		return nil, fmt.Errorf("schemas: nil event")
	}
	return json.Marshal(ev)
}
