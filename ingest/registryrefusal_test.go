package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// TestRegistryRefusingAnIDIsADeadLetter: a registry may answer a schema id
// it will never serve with another 4xx than 404 (400 or 422 for an id out
// of its range, 410 for one deleted). Every answer but 404 was taken for the
// registry being out of reach, so the record was retried forever and its
// partition stalled behind a producer's junk id. Such a refusal is now a
// dead letter (schema_id_refused, naming the status); 5xx, 408, 429 and
// 401/403 (credentials being rotated) still wait for the registry.
func TestRegistryRefusingAnIDIsADeadLetter(t *testing.T) {
	status := 0
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error_code":%d,"message":"schema id refused"}`, status*100)
	}))
	defer reg.Close()
	client, err := schemas.NewRegistryClient(reg.URL, reg.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status int
		dead   bool
	}{
		{http.StatusBadRequest, true}, {http.StatusGone, true}, {http.StatusUnprocessableEntity, true},
		{http.StatusInternalServerError, false}, {http.StatusServiceUnavailable, false}, {http.StatusTooManyRequests, false},
		{http.StatusRequestTimeout, false}, {http.StatusUnauthorized, false}, {http.StatusForbidden, false},
	} {
		status = c.status
		codec, err := schemas.NewCodec(schemas.Options{Registry: client, RegistryTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h := Wrap(Config{Codec: codec}, &runner{})
		err = h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: []byte{0, 0x7f, 0xff, 0xff, 0xff, 2}})
		var p *consumer.PoisonError
		switch {
		case c.dead && (!errors.As(err, &p) || p.Reason != schemas.DecodeSchemaIDRefused):
			t.Errorf("registry answering %d: Handle = %v, want a dead letter %s", c.status, err, schemas.DecodeSchemaIDRefused)
		case !c.dead && (err == nil || errors.As(err, &p)):
			t.Errorf("registry answering %d: Handle = %v, want it retried", c.status, err)
		}
	}
}

// TestRegistryForbiddingOneIDIsADeadLetter: a registry with access control
// answers 403 for a schema id under a subject lakewap's credentials may not
// read, and a producer may register its schema under any subject it owns
// and name that id. 403 was taken for lakewap's credentials being wrong
// (rotated), which heals, so the record was retried forever and its
// partition stalled. When the registry still serves lakewap an id it read
// before, the 403 is about this id: a dead letter (schema_id_refused). When
// it refuses that one too, lakewap's credentials are the matter: retried.
func TestRegistryForbiddingOneIDIsADeadLetter(t *testing.T) {
	text, err := schemas.SchemaText(schemas.TypeBatchCancelled)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := json.Marshal(map[string]string{"schema": text})
	revoked := false
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		if r.URL.Path == "/schemas/ids/1" && !revoked {
			_, _ = w.Write(answer)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error_code":40301,"message":"User is denied operation Read on Subject: theirs-value"}`)
	}))
	defer reg.Close()
	client, err := schemas.NewRegistryClient(reg.URL, reg.Client())
	if err != nil {
		t.Fatal(err)
	}
	codec, err := schemas.NewCodec(schemas.Options{Registry: client, RegistryTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// A cancel written with schema id 1 (the Avro body of BatchCancelled).
	plain, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := plain.Encode(context.Background(), "in", schemas.BatchCancelled{BatchID: "b", Dataset: "billing", Reason: "r", OccurredAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	framed := func(id byte) []byte { return append([]byte{0, 0, 0, 0, id}, v[10:]...) }
	if _, err := codec.Decode(context.Background(), framed(1)); err != nil {
		t.Fatalf("schema id 1: %v", err)
	}
	h := Wrap(Config{Codec: codec}, &runner{})
	err = h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: framed(2)})
	var p *consumer.PoisonError
	if !errors.As(err, &p) || p.Reason != schemas.DecodeSchemaIDRefused {
		t.Errorf("403 for id 2 while id 1 is served: Handle = %v, want a dead letter %s", err, schemas.DecodeSchemaIDRefused)
	}
	revoked = true
	err = h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: framed(3)})
	if err == nil || errors.As(err, &p) {
		t.Errorf("403 for every id: Handle = %v, want it retried", err)
	}
}
