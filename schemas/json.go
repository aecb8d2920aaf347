package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// FromJSON parses one event of eventType (a Type* name, case-insensitive,
// dashes and underscores ignored: "batch-landed" works)
// from a JSON document using the json tags of the Go types (snake_case
// fields, RFC 3339 timestamps). Unknown fields are errors so that typos in
// scripts do not go unnoticed; absent lists and maps become empty ones, as
// after Avro decoding. The event is not validated.
func FromJSON(eventType string, doc []byte) (Event, error) {
	fold := strings.NewReplacer("_", "", "-", "")
	for _, k := range currentKinds() {
		if strings.EqualFold(k.name, fold.Replace(eventType)) {
			return k.fromJSON(doc)
		}
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
	normalize(reflect.ValueOf(&v).Elem())
	return v, nil
}

// normalize turns nil slices and maps into empty ones, as Avro decoding
// does, so an event reads the same whichever way it arrived.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}

// ToJSON renders ev as one line of JSON (no trailing newline) with the same
// field names FromJSON reads.
func ToJSON(ev Event) ([]byte, error) {
	if ev == nil {
		return nil, fmt.Errorf("schemas: nil event")
	}
	return json.Marshal(ev)
}
