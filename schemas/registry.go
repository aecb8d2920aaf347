package schemas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"
)

// RegistryClient is the part of a Confluent-compatible schema registry the
// Codec uses; *registry.Client from hamba/avro/v2/registry satisfies it.
//
// Errors: a registry.Error (value or pointer) with status 404 means the id or
// subject does not exist; any other registry.Error status, a transport error
// (*url.Error, net.Error) or a context error means the registry is
// unavailable and the call may be retried; 4xx answers to CreateSchema other
// than 404/408/429 (e.g. 409 incompatible, 422 invalid) are rejections.
type RegistryClient interface {
	// CreateSchema registers schema under subject (POST
	// /subjects/{subject}/versions) and returns its global id; registering
	// the same schema again returns the same id.
	CreateSchema(ctx context.Context, subject, schema string, refs ...registry.SchemaReference) (int, avro.Schema, error)
	// GetSchema returns the schema with a global id (GET /schemas/ids/{id}).
	GetSchema(ctx context.Context, id int) (avro.Schema, error)
}

// RegistryAdmin is what registering subjects ahead of time needs of a
// registry; *registry.Client satisfies it.
type RegistryAdmin interface {
	CreateSchema(ctx context.Context, subject, schema string, refs ...registry.SchemaReference) (int, avro.Schema, error)
	SetCompatibilityLevel(ctx context.Context, subject, level string) error
}

// Compatibility levels of a Confluent-compatible registry.
var CompatibilityLevels = []string{"BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"}

// Registered is one subject Register registered.
type Registered struct {
	Subject       string `json:"subject"`
	EventType     string `json:"event_type"`
	ID            int    `json:"id"`
	Compatibility string `json:"compatibility,omitempty"`
}

// Register registers the current schema of each event type under its
// subject on topic (the subject Encode uses: <topic>-<namespace>.<type>),
// after setting the subject's compatibility level when level is not empty,
// so that producers and consumers find them before lakewap's first send.
func Register(ctx context.Context, rc RegistryAdmin, topic string, eventTypes []string, level string) ([]Registered, error) {
	var out []Registered
	for _, t := range eventTypes {
		text, err := SchemaText(t)
		if err != nil {
			return out, err
		}
		subject := topic + "-" + Namespace + "." + t
		if level != "" {
			if err := rc.SetCompatibilityLevel(ctx, subject, level); err != nil {
				return out, fmt.Errorf("set compatibility of %s: %w", subject, err)
			}
		}
		id, _, err := rc.CreateSchema(ctx, subject, text)
		if err != nil {
			return out, fmt.Errorf("register %s: %w", subject, err)
		}
		out = append(out, Registered{Subject: subject, EventType: t, ID: id, Compatibility: level})
	}
	return out, nil
}

// Registry is a client of a Confluent-compatible schema registry: hamba's
// for registering schemas and setting compatibility levels, its own for
// reading a schema by id. hamba's GetSchema keeps every schema it was
// given for the client's life and parses it into the Avro parser's global
// cache of named types, where it stays for the process's life (and names
// it defines are found by later parses); a producer that may register
// schemas could make one per message. This GetSchema keeps nothing (the
// Codec keeps the ids it used last), parses each schema on its own, and
// reads at most maxRegistryAnswer bytes of an answer.
type Registry struct {
	*registry.Client
	base           *url.URL
	hc             *http.Client
	user, password string
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithBasicAuth makes every request carry these HTTP basic credentials.
func WithBasicAuth(user, password string) RegistryOption {
	return func(r *Registry) { r.user, r.password = user, password }
}

// maxRegistryAnswer bounds the answer to a schema by id that GetSchema
// reads (lakewap's largest registered schema, BatchAborted, is 4.7 KB): a larger schema is not
// parsed. hamba prints a record schema to fingerprint it by adding each
// field to a string, so the time grows with the square of its fields: a
// schema of 12,000 optional fields (700 KB) took 2.7 s of CPU to resolve.
const maxRegistryAnswer = 64 << 10

// NewRegistryClient returns the client of the registry at baseURL. hc may
// be nil for a default client; per-call deadlines come from the Codec.
func NewRegistryClient(baseURL string, hc *http.Client, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{hc: hc}
	for _, o := range opts {
		o(r)
	}
	var hopts []registry.ClientFunc
	if hc != nil {
		hopts = append(hopts, registry.WithHTTPClient(hc))
	} else {
		r.hc = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	}
	if r.user != "" || r.password != "" {
		hopts = append(hopts, registry.WithBasicAuth(r.user, r.password))
	}
	c, err := registry.NewClient(baseURL, hopts...)
	if err != nil {
		return nil, err
	}
	if r.base, err = url.Parse(baseURL); err != nil {
		return nil, err
	}
	r.Client = c
	return r, nil
}

// GetSchema returns the schema with a global id (GET /schemas/ids/{id}).
// Errors: a registry.Error with the answer's status (404: no such id), a
// *url.Error when the answer could not be had or read whole, a
// notRegistryAnswer when it is not a registry's (an HTML page, a body
// without a schema: an outage), else the answer is not an Avro schema.
func (r *Registry) GetSchema(ctx context.Context, id int) (avro.Schema, error) {
	u := r.base.JoinPath("schemas", "ids", strconv.Itoa(id)).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	if r.user != "" || r.password != "" {
		req.SetBasicAuth(r.user, r.password)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err // a *url.Error
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRegistryAnswer+1))
	if err != nil {
		return nil, &url.Error{Op: "Get", URL: u, Err: err}
	}
	if resp.StatusCode >= http.StatusBadRequest {
		e := registry.Error{StatusCode: resp.StatusCode}
		_ = json.Unmarshal(body, &e)
		e.Message = Clip(e.Message, 512)
		return nil, e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		return nil, notRegistryAnswer{fmt.Sprintf("HTTP %d with a page of %s", resp.StatusCode, mt)}
	}
	if len(body) > maxRegistryAnswer {
		return nil, fmt.Errorf("the registry's answer is over %d bytes (the schema is not read)", maxRegistryAnswer)
	}
	var answer struct {
		Schema     *string `json:"schema"`
		SchemaType string  `json:"schemaType"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, notRegistryAnswer{fmt.Sprintf("HTTP %d whose body is not a JSON object: %v", resp.StatusCode, err)}
	}
	if answer.Schema == nil || *answer.Schema == "" {
		return nil, notRegistryAnswer{fmt.Sprintf("HTTP %d whose body has no schema", resp.StatusCode)}
	}
	if answer.SchemaType != "" && answer.SchemaType != "AVRO" {
		return nil, fmt.Errorf("the registry's schema is of type %s, not AVRO", Clip(answer.SchemaType, 64))
	}
	return avro.ParseWithCache(*answer.Schema, "", &avro.SchemaCache{})
}

// notRegistryAnswer: an answer to a schema id that is not a schema
// registry's (a proxy's or load balancer's page, a body without a
// schema). It says nothing about the id, so it is an outage, which may
// heal, not the id's schema found unreadable.
type notRegistryAnswer struct{ what string }

func (e notRegistryAnswer) Error() string {
	return "the answer is not a schema registry's: " + e.what
}

func registryStatus(err error) (int, bool) {
	var v registry.Error
	if errors.As(err, &v) {
		return v.StatusCode, true
	}
	var p *registry.Error
	if errors.As(err, &p) && p != nil {
		return p.StatusCode, true
	}
	return 0, false
}

func registryNotFound(err error) bool {
	status, ok := registryStatus(err)
	return ok && status == http.StatusNotFound
}

// registryRefusesID: the registry answered a schema id with a client error
// it gives for the id itself (400 or 422 for an id out of its range, 410
// for one deleted), which asking again will not change. 404 is
// registryNotFound; 408 and 429 are about the moment, 401, 403 and 407
// about lakewap's credentials (being rotated): those may heal.
func registryRefusesID(err error) bool {
	status, ok := registryStatus(err)
	if !ok || status < 400 || status >= 500 {
		return false
	}
	switch status {
	case http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		return false
	}
	return true
}

// registryForbidden: the registry refuses lakewap the call (403): its
// credentials, or, with access control per subject, this schema id
// (Codec.servesAnother tells which).
func registryForbidden(err error) bool {
	status, ok := registryStatus(err)
	return ok && status == http.StatusForbidden
}

// registryUnreachable: the registry could not give an answer this time.
func registryUnreachable(err error) bool {
	if _, ok := registryStatus(err); ok {
		// Any answer other than 404 and the refusals of an id (5xx, 429,
		// but also 401/403 after a credentials mix-up) may heal;
		// dead-lettering on it would lose order.
		return !registryNotFound(err) && !registryRefusesID(err)
	}
	var ue *url.Error
	var ne net.Error
	var na notRegistryAnswer
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &na) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// registryRejected: the registry refuses the schema itself.
func registryRejected(err error) bool {
	status, ok := registryStatus(err)
	if !ok {
		return !registryUnreachable(err)
	}
	return status >= 400 && status < 500 &&
		status != http.StatusNotFound && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests &&
		status != http.StatusUnauthorized && status != http.StatusForbidden
}
