package schemas

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"sync/atomic"
	"testing"
)

// A 200 answer that is not the registry's (a proxy's or load balancer's
// page while the registry is being moved, an HTML login wall) says nothing
// about the schema id: it is an outage, and the partition waits for the
// registry as it does on a 503. Before, the codec took it for the id's
// schema, unreadable, remembered it for the process's life, and
// dead-lettered every record under that id as incompatible_schema, also
// after the registry was back.
func TestRegistryAnswerThatIsNotARegistrysIsAnOutage(t *testing.T) {
	ctx := context.Background()
	_, enc, reg := codecs(t)
	msg, err := enc.Encode(ctx, topic, sampleEvents()[1])
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var page atomic.Value // the body served instead of the registry's, "" for none
	page.Store("")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := page.Load().(string); p != "" {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(p))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	for _, p := range []string{
		"<html><body>Sign in to continue</body></html>",
		`{"message":"upstream is being deployed"}`,
		`[]`,
		`null`,
	} {
		client, err := NewRegistryClient(front.URL, front.Client())
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewCodec(Options{Registry: client})
		if err != nil {
			t.Fatal(err)
		}
		page.Store(p)
		_, err = dec.Decode(ctx, msg)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != DecodeRegistryUnavailable || de.Permanent() {
			t.Errorf("answer %q: %v, want a transient %s", p, err, DecodeRegistryUnavailable)
		}
		page.Store("")
		if got, err := dec.Decode(ctx, msg); err != nil || !reflect.DeepEqual(got, sampleEvents()[1]) {
			t.Errorf("answer %q, then the registry back: %v %v, want the event", p, got, err)
		}
	}
}
