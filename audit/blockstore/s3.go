package blockstore

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/audit"
)

// S3 is an S3-compatible blockstore (lakeFS's blockstore.type s3): the
// stored size of s3://bucket/key is the Content-Length of a HEAD of the
// object, signed with AWS Signature Version 4.
type S3 struct {
	// Endpoint is the service's URL; empty: https://s3.<Region>.amazonaws.com.
	Endpoint string
	Region   string
	// AccessKeyID, SecretAccessKey and, for temporary credentials,
	// SessionToken sign the requests: a key that may read the objects of
	// lakeFS's storage namespaces (s3:GetObject).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// PathStyle addresses the bucket in the path (http://minio:9000/bucket/key)
	// instead of the host (https://bucket.s3.<region>.amazonaws.com/key).
	PathStyle bool
	Client    *http.Client
	// Now is the clock requests are signed with; default time.Now.
	Now func() time.Time
}

var _ audit.Blockstore = S3{}

// emptySHA256 is the hash of an empty payload, as a HEAD sends.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// StoredSize heads the object at address. 404 wraps audit.ErrNotStored;
// a failed connection, a throttle (429) or a server error (5xx) wraps
// audit.ErrInfrastructure; any other answer (403: the key may not read it)
// is an error of its own.
func (s S3) StoredSize(ctx context.Context, address string) (int64, error) {
	u, err := s.objectURL(address)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("blockstore: %w", err)
	}
	req.URL = u // keep the path exactly as signed
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.sign(req, now())
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("blockstore: HEAD %s: %w: %w", address, audit.ErrInfrastructure, err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && resp.ContentLength >= 0:
		return resp.ContentLength, nil
	case resp.StatusCode == http.StatusOK:
		return 0, fmt.Errorf("blockstore: HEAD %s: no Content-Length", address)
	case resp.StatusCode == http.StatusNotFound:
		return 0, fmt.Errorf("blockstore: HEAD %s: %w", address, audit.ErrNotStored)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return 0, fmt.Errorf("blockstore: HEAD %s: %w: %s", address, audit.ErrInfrastructure, resp.Status)
	default:
		return 0, fmt.Errorf("blockstore: HEAD %s: %s", address, resp.Status)
	}
}

// objectURL is where s3://bucket/key is, with the key's path encoded as
// Signature Version 4 encodes it.
func (s S3) objectURL(address string) (*url.URL, error) {
	rest, ok := strings.CutPrefix(address, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return nil, fmt.Errorf("blockstore: %q is not an S3 object address (s3://bucket/key)", address)
	}
	endpoint := s.Endpoint
	if endpoint == "" {
		endpoint = "https://s3." + s.Region + ".amazonaws.com"
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("blockstore: endpoint %q is not an http(s) URL", endpoint)
	}
	base := strings.TrimSuffix(u.Path, "/")
	if s.PathStyle {
		u.Path = base + "/" + bucket + "/" + key
		u.RawPath = encodePath(base) + "/" + encodePath(bucket) + "/" + encodePath(key)
	} else {
		u.Host = bucket + "." + u.Host
		u.Path = base + "/" + key
		u.RawPath = encodePath(base) + "/" + encodePath(key)
	}
	return u, nil
}

// encodePath percent-encodes every byte of p but the unreserved ones
// (A-Z a-z 0-9 - . _ ~) and "/", as Signature Version 4 does for S3.
func encodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// sign adds the x-amz headers and the Authorization of Signature Version 4
// (service s3, payload of an empty body) to req, signing host and every
// x-amz- and range header it has.
func (s S3) sign(req *http.Request, at time.Time) {
	at = at.UTC()
	stamp := at.Format("20060102T150405Z")
	day := at.Format("20060102")
	req.Header.Set("X-Amz-Date", stamp)
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	if s.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", s.SessionToken)
	}
	values := map[string]string{"host": req.URL.Host}
	for k, v := range req.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") || lk == "range" {
			values[lk] = strings.Join(v, ",")
		}
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	slices.Sort(names)
	var headers strings.Builder
	for _, k := range names {
		headers.WriteString(k + ":" + strings.TrimSpace(values[k]) + "\n")
	}
	signed := strings.Join(names, ";")
	canonical := strings.Join([]string{req.Method, req.URL.EscapedPath(), req.URL.RawQuery, headers.String(), signed, emptySHA256}, "\n")
	scope := day + "/" + s.Region + "/s3/aws4_request"
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + s.SecretAccessKey)
	for _, part := range []string{day, s.Region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.AccessKeyID+"/"+scope+
		",SignedHeaders="+signed+",Signature="+hex.EncodeToString(hmacSHA256(key, toSign)))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
