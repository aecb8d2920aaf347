package schemas

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

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

// NewRegistryClient returns hamba's registry client for baseURL. hc may be
// nil for a default client; per-call deadlines come from the Codec.
func NewRegistryClient(baseURL string, hc *http.Client, opts ...registry.ClientFunc) (*registry.Client, error) {
	if hc != nil {
		opts = append([]registry.ClientFunc{registry.WithHTTPClient(hc)}, opts...)
	}
	return registry.NewClient(baseURL, opts...)
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

// registryUnreachable: the registry could not give an answer this time.
func registryUnreachable(err error) bool {
	if _, ok := registryStatus(err); ok {
		// Any answer other than 404 (5xx, 429, but also 401/403 after a
		// credentials mix-up) may heal; dead-lettering on it would lose order.
		return !registryNotFound(err)
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
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
