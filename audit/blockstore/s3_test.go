package blockstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
)

// The signature of AWS's documented Signature Version 4 example for S3
// (GET /test.txt of examplebucket, Range bytes=0-9, 2013-05-24, the
// documentation's example key), computed by this signer.
func TestS3SignatureOfTheDocumentedExample(t *testing.T) {
	s := S3{Region: "us-east-1", AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-9")
	s.sign(req, time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date," +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization\n%s\nwant\n%s", got, want)
	}
}

// StoredSize heads the object where the address says, signed, and sorts
// the answers: a size, not stored, retry later, or refused.
func TestS3StoredSize(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.EscapedPath())
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/20261204/eu-west-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,Signature=") ||
			r.Header.Get("X-Amz-Date") != "20261204T220000Z" || r.Header.Get("X-Amz-Security-Token") != "tok" {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		switch r.URL.EscapedPath() {
		case "/lake-bucket/repo/data/g1/a%3Db":
			w.Header().Set("Content-Length", "32781")
		case "/lake-bucket/repo/data/g1/denied":
			w.WriteHeader(http.StatusForbidden)
		case "/lake-bucket/repo/data/g1/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	s := S3{Endpoint: srv.URL, Region: "eu-west-1", AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "tok", PathStyle: true,
		Client: srv.Client(), Now: func() time.Time { return time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC) }}
	ctx := context.Background()
	if n, err := s.StoredSize(ctx, "s3://lake-bucket/repo/data/g1/a=b"); err != nil || n != 32781 {
		t.Errorf("stored object: %d, %v; want 32781", n, err)
	}
	if seen[0] != "HEAD /lake-bucket/repo/data/g1/a%3Db" {
		t.Errorf("request %q, want a HEAD of the path-style key", seen[0])
	}
	if _, err := s.StoredSize(ctx, "s3://lake-bucket/repo/data/g1/missing"); !errors.Is(err, audit.ErrNotStored) {
		t.Errorf("missing object: %v, want not stored", err)
	}
	if _, err := s.StoredSize(ctx, "s3://lake-bucket/repo/data/g1/busy"); !errors.Is(err, audit.ErrInfrastructure) {
		t.Errorf("503: %v, want to be retried", err)
	}
	if _, err := s.StoredSize(ctx, "s3://lake-bucket/repo/data/g1/denied"); err == nil || errors.Is(err, audit.ErrInfrastructure) || errors.Is(err, audit.ErrNotStored) ||
		!strings.Contains(err.Error(), "403") {
		t.Errorf("403: %v, want an error of its own naming the status", err)
	}
	srv.Close()
	if _, err := s.StoredSize(ctx, "s3://lake-bucket/repo/data/g1/a=b"); !errors.Is(err, audit.ErrInfrastructure) {
		t.Errorf("no server: %v, want to be retried", err)
	}
	for _, bad := range []string{"local:///x", "s3://bucket", "s3:///key"} {
		if _, err := s.StoredSize(ctx, bad); err == nil || !strings.Contains(err.Error(), "is not an S3 object address") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// Without PathStyle the bucket is in the host, as AWS addresses it.
func TestS3VirtualHostedURL(t *testing.T) {
	u, err := S3{Region: "eu-west-1"}.objectURL("s3://lake-bucket/repo/data/g1/a b")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.String(); got != "https://lake-bucket.s3.eu-west-1.amazonaws.com/repo/data/g1/a%20b" {
		t.Errorf("URL %s", got)
	}
}
