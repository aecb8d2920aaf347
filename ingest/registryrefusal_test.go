package ingest

import (
	"context"
	"errors"
	"fmt"
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
