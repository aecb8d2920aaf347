package lakefs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lakewap/lakewap/pipeline"
)

// answer is one canned lakeFS reply.
type answer struct {
	status int
	body   string
}

// fakeLake answers each "METHOD path" from a table and records requests.
type fakeLake struct {
	t       *testing.T
	mu      sync.Mutex
	answers map[string]answer
	calls   []string
	queries []string // the query string of each call
	bodies  map[string][]byte
}

func (f *fakeLake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, key)
	f.queries = append(f.queries, r.URL.RawQuery)
	f.bodies[key] = body
	a, ok := f.answers[key]
	f.mu.Unlock()
	if user, pass, _ := r.BasicAuth(); user != "AK" || pass != "SK" {
		http.Error(w, `{"message":"error authenticating request"}`, http.StatusUnauthorized)
		return
	}
	if !ok {
		f.t.Errorf("unexpected request %s", key)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func newFake(t *testing.T, answers map[string]answer) (*Client, *fakeLake) {
	t.Helper()
	f := &fakeLake{t: t, answers: answers, bodies: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func msg(s string) string { return `{"message":"` + s + `"}` }

func TestErrorMapping(t *testing.T) {
	const (
		merge  = "POST /api/v1/repositories/lake/refs/b1/merge/main"
		commit = "POST /api/v1/repositories/lake/branches/b1/commits"
		branch = "POST /api/v1/repositories/lake/branches"
	)
	callMerge := func(c *Client) error {
		_, err := c.Merge(context.Background(), "lake", "b1", "main", "m", nil)
		return err
	}
	callCommit := func(c *Client) error {
		_, err := c.Commit(context.Background(), "lake", "b1", "m", nil)
		return err
	}
	callBranch := func(c *Client) error {
		_, err := c.EnsureBranch(context.Background(), "lake", "b1", "main")
		return err
	}
	tests := []struct {
		name   string
		key    string
		answer answer
		call   func(*Client) error
		class  error // nil: permanent
	}{
		{"merge conflict", merge, answer{409, `{"reference":""}`}, callMerge, pipeline.ErrMergeConflict},
		{"merge no changes", merge, answer{400, msg("update branch main: no changes")}, callMerge, pipeline.ErrNoChanges},
		{"merge locked branch", merge, answer{500, msg("branch is currently locked, try again later")}, callMerge, pipeline.ErrBranchLocked},
		{"merge locked text on other status", merge, answer{409, msg("branch is currently locked, try again later")}, callMerge, pipeline.ErrBranchLocked},
		{"merge 423", merge, answer{423, msg("locked")}, callMerge, pipeline.ErrBranchLocked},
		{"merge 429", merge, answer{429, msg("Too many attempts, try again later")}, callMerge, pipeline.ErrTransient},
		{"merge 502", merge, answer{502, "bad gateway"}, callMerge, pipeline.ErrTransient},
		{"merge 503", merge, answer{503, msg("Throughput exceeded. Slow down and retry")}, callMerge, pipeline.ErrTransient},
		{"merge 504", merge, answer{504, ""}, callMerge, pipeline.ErrTransient},
		{"merge pre-merge hook refused", merge, answer{412, msg("update branch main: pre-merge hook aborted, run id x")}, callMerge, pipeline.ErrHookRefused},
		{"merge missing branch", merge, answer{404, msg("branch not found")}, callMerge, pipeline.ErrNotFound},
		{"merge forbidden", merge, answer{403, msg("forbidden")}, callMerge, nil},
		{"commit no changes", commit, answer{400, msg("commit: no changes")}, callCommit, pipeline.ErrNoChanges},
		{"commit bad request", commit, answer{400, msg("invalid value")}, callCommit, nil},
		{"commit 409 without conflict is permanent", commit, answer{409, msg("not unique")}, callCommit, nil},
		{"commit unauthorized", commit, answer{401, msg("error authenticating request")}, callCommit, nil},
		{"branch in missing repo", branch, answer{404, msg("repository not found")}, callBranch, pipeline.ErrNotFound},
	}
	classes := []error{pipeline.ErrTransient, pipeline.ErrBranchLocked, pipeline.ErrMergeConflict, pipeline.ErrNotFound, pipeline.ErrNoChanges}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newFake(t, map[string]answer{tt.key: tt.answer})
			err := tt.call(c)
			if err == nil {
				t.Fatal("no error")
			}
			for _, class := range classes {
				// A locked branch and a refusing hook are also transient.
				want := class == tt.class || (tt.class == pipeline.ErrBranchLocked || tt.class == pipeline.ErrHookRefused) && class == pipeline.ErrTransient
				if got := errors.Is(err, class); got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, class, got, want)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not a *lakefs.Error", err)
			}
			if e.Status != tt.answer.status || e.Repo != "lake" || !strings.Contains(e.Ref, "b1") {
				t.Errorf("error fields = %+v", e)
			}
			if !strings.Contains(err.Error(), "lake") || !strings.Contains(err.Error(), "HTTP ") {
				t.Errorf("error text %q lacks repo or status", err)
			}
		})
	}
}

func TestConflictErrorText(t *testing.T) {
	c, _ := newFake(t, map[string]answer{
		"POST /api/v1/repositories/lake/refs/b1/merge/main": {409, `{"reference":""}`},
	})
	_, err := c.Merge(context.Background(), "lake", "b1", "main", "m", nil)
	want := `lakefs merge lake b1->main: HTTP 409 "conflict found" (merge conflict)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestEnsureBranchExisting(t *testing.T) {
	commit := func(id string) answer {
		return answer{200, `{"id":"` + id + `","parents":[],"committer":"x","message":"m","creation_date":1,"meta_range_id":""}`}
	}
	from, old := strings.Repeat("f", 64), strings.Repeat("0", 64)
	clean := answer{200, `{"pagination":{"has_more":false},"results":[]}`}
	for _, tt := range []struct {
		name    string
		status  int
		head    string
		staged  answer
		existed bool
		taken   bool
	}{
		{"created", 201, from, clean, false, false},
		{"left by an earlier attempt", 409, from, clean, true, false},
		{"made beforehand from an older commit", 409, old, clean, false, true},
		{"uncommitted objects", 409, from, answer{200, `{"pagination":{"has_more":true,"next_offset":"x"},"results":[{"path":"gold/t/x.parquet","type":"added","path_type":"object"}]}`}, false, true},
	} {
		c, f := newFake(t, map[string]answer{
			"POST /api/v1/repositories/lake/branches":            {tt.status, msg("x")},
			"GET /api/v1/repositories/lake/commits/wap-b1":       commit(tt.head),
			"GET /api/v1/repositories/lake/commits/" + from:      commit(from),
			"GET /api/v1/repositories/lake/branches/wap-b1/diff": tt.staged,
		})
		existed, err := c.EnsureBranch(context.Background(), "lake", "wap-b1", from)
		if existed != tt.existed || errors.Is(err, pipeline.ErrBranchTaken) != tt.taken || (err != nil) != tt.taken {
			t.Errorf("%s: existed=%v err=%v, want existed=%v taken=%v", tt.name, existed, err, tt.existed, tt.taken)
		}
		var body struct{ Name, Source string }
		_ = json.Unmarshal(f.bodies["POST /api/v1/repositories/lake/branches"], &body)
		if body.Name != "wap-b1" || body.Source != from {
			t.Errorf("request body = %+v", body)
		}
	}
}

func TestDeleteBranchMissing(t *testing.T) {
	const key = "DELETE /api/v1/repositories/lake/branches/b1"
	c, _ := newFake(t, map[string]answer{key: {404, msg("branch not found")}})
	if err := c.DeleteBranch(context.Background(), "lake", "b1"); err != nil {
		t.Errorf("missing branch: %v", err)
	}
	c, _ = newFake(t, map[string]answer{key: {404, msg("repository not found")}})
	if err := c.DeleteBranch(context.Background(), "lake", "b1"); !errors.Is(err, pipeline.ErrNotFound) {
		t.Errorf("missing repository: %v, want ErrNotFound", err)
	}
}

func TestPublishSealsAndMergesWithoutAllowEmpty(t *testing.T) {
	sealed := strings.Repeat("a", 64)
	c, f := newFake(t, map[string]answer{
		"POST /api/v1/repositories/lake/branches/b1/commits":            {201, `{"id":"` + sealed + `","parents":["p"],"committer":"x","message":"m","creation_date":1,"meta_range_id":""}`},
		"GET /api/v1/repositories/lake/branches":                        {200, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"h"}]}`},
		"GET /api/v1/repositories/lake/refs/" + sealed + "/merge/h":     {200, `{"base_commit_id":"p","destination_commit_id":"h","source_commit_id":"` + sealed + `"}`},
		"POST /api/v1/repositories/lake/refs/" + sealed + "/merge/main": {200, `{"reference":"m1"}`},
	})
	id, err := Publish(context.Background(), c, "lake", "b1", "main", map[string]string{pipeline.MetaBatchID: "42", "k": "v"})
	if err != nil || id != "m1" {
		t.Fatalf("Publish = %q, %v; want m1", id, err)
	}
	var commit, merge struct {
		Message    string
		Metadata   map[string]string
		AllowEmpty bool `json:"allow_empty"`
	}
	_ = json.Unmarshal(f.bodies["POST /api/v1/repositories/lake/branches/b1/commits"], &commit)
	_ = json.Unmarshal(f.bodies["POST /api/v1/repositories/lake/refs/"+sealed+"/merge/main"], &merge)
	if commit.Metadata[pipeline.MetaBatchID] != "" || commit.Metadata[pipeline.MetaSealedBatchID] != "42" || commit.Metadata["k"] != "v" || !commit.AllowEmpty {
		t.Errorf("seal commit = %+v; want the sealed label and allow_empty (a seal is always a new commit)", commit)
	}
	if merge.Metadata[pipeline.MetaBatchID] != "42" || merge.Metadata["k"] != "v" || !strings.Contains(merge.Message, "42") || merge.AllowEmpty {
		t.Errorf("merge body = %+v; want the batch label and no allow_empty", merge)
	}
}

// A sealed commit already on main (merge-base = sealed) is not merged
// again, and the publish is the merge commit that has it as a parent; a
// commit that only carries the batch's label is not it.
func TestPublishedByMergeBaseNotByLabel(t *testing.T) {
	sealed := strings.Repeat("b", 64)
	c, f := newFake(t, map[string]answer{
		"GET /api/v1/repositories/lake/branches":                     {200, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"c4"}]}`},
		"GET /api/v1/repositories/lake/refs/" + sealed + "/merge/c4": {200, `{"base_commit_id":"` + sealed + `","destination_commit_id":"c4","source_commit_id":"` + sealed + `"}`},
		"GET /api/v1/repositories/lake/refs/c4/commits": {200, `{"pagination":{"has_more":false},"results":[
			{"id":"c4","parents":["c3"],"metadata":{"wap.batch_id":"42"}},
			{"id":"c3","parents":["c2","` + sealed + `"],"metadata":{}},
			{"id":"c2","parents":["c1","x"],"metadata":{"wap.batch_id":"42"}},
			{"id":"c1","parents":[]}]}`},
	})
	since := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	p, err := c.Published(context.Background(), "lake", "main", sealed, since)
	if err != nil || !p.OnTarget || p.Merge != "c3" || p.Head != "c4" {
		t.Fatalf("Published = %+v, %v; want on target, merged by c3", p, err)
	}
	for i, call := range f.calls {
		if q := f.queries[i]; strings.Contains(call, "/commits") && (!strings.Contains(q, "first_parent=true") || !strings.Contains(q, "since=2026-12-01T00%3A55%3A00Z")) {
			t.Errorf("log call %s?%s: want first parents since the start less the clock slack", call, q)
		}
	}
	other := strings.Repeat("c", 64)
	c2, _ := newFake(t, map[string]answer{
		"GET /api/v1/repositories/lake/branches":                    {200, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"c4"}]}`},
		"GET /api/v1/repositories/lake/refs/" + other + "/merge/c4": {200, `{"base_commit_id":"c1","destination_commit_id":"c4","source_commit_id":"` + other + `"}`},
	})
	if p, err := c2.Published(context.Background(), "lake", "main", other, since); err != nil || p.OnTarget || p.Head != "c4" {
		t.Errorf("Published of a commit not on main = %+v, %v", p, err)
	}
}

func TestPublishedLookIsBounded(t *testing.T) {
	var mu sync.Mutex
	var afters []string
	var amounts []string
	sealed := strings.Repeat("d", 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/branches") {
			_, _ = io.WriteString(w, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"h"}]}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/merge/h") {
			_, _ = io.WriteString(w, `{"base_commit_id":"`+sealed+`","destination_commit_id":"h","source_commit_id":"`+sealed+`"}`)
			return
		}
		if strings.Contains(r.URL.Path, "/merge/") {
			_, _ = io.WriteString(w, `{"base_commit_id":"other","destination_commit_id":"x","source_commit_id":"`+sealed+`"}`)
			return
		}
		q := r.URL.Query()
		mu.Lock()
		afters = append(afters, q.Get("after"))
		amounts = append(amounts, q.Get("amount"))
		mu.Unlock()
		// Endless history of commits without the sealed commit.
		n := len(afters)
		var b strings.Builder
		b.WriteString(`{"pagination":{"has_more":true,"next_offset":"p` + string(rune('0'+n)) + `"},"results":[`)
		for i := range 1000 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":"x","parents":["y"],"metadata":{"wap.batch_id":"42"}}`)
		}
		b.WriteString("]}")
		_, _ = io.WriteString(w, b.String())
	}))
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL + "/api/v1/", AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Published(context.Background(), "lake", "main", sealed, time.Time{})
	if err != nil || !p.OnTarget || p.Merge != "" || p.Head != "h" {
		t.Fatalf("Published = %+v, %v", p, err)
	}
	if len(afters) != 1 || amounts[0] != "1000" {
		t.Errorf("requests after=%v amount=%v; want one page of 1000 (the bound)", afters, amounts)
	}
}

func TestTransportErrors(t *testing.T) {
	// A server that never answers until the request is abandoned.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)

	t.Run("per-call timeout is transient", func(t *testing.T) {
		c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK", Timeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetCommit(context.Background(), "lake", "main")
		if !errors.Is(err, pipeline.ErrTransient) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want transient deadline exceeded", err)
		}
	})
	t.Run("caller cancel is not transient", func(t *testing.T) {
		c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = c.GetCommit(ctx, "lake", "main")
		if err == nil || errors.Is(err, pipeline.ErrTransient) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled and not transient", err)
		}
	})
	t.Run("connection refused is transient", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c, err := New(Config{Endpoint: "http://" + addr, AccessKeyID: "AK", SecretAccessKey: "SK"})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Healthy(context.Background())
		if !errors.Is(err, pipeline.ErrTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
	})
}

// stepReader yields first, then waits for next before yielding rest: an
// upload that buffers the whole body before sending never gets past first.
type stepReader struct {
	first, rest []byte
	next        <-chan struct{}
	ctx         context.Context
	step        int
}

func (r *stepReader) Read(p []byte) (int, error) {
	switch r.step {
	case 0:
		r.step++
		return copy(p, r.first), nil
	case 1:
		select {
		case <-r.next:
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
		r.step++
		return copy(p, r.rest), nil
	}
	return 0, io.EOF
}

func TestUploadStreams(t *testing.T) {
	first := bytes.Repeat([]byte("a"), 100)
	rest := []byte("the end")
	next := make(chan struct{})
	var got []byte
	var field, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Query().Get("path")
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			t.Errorf("content type: %v", err)
			return
		}
		mr := multipart.NewReader(r.Body, params["boundary"])
		part, err := mr.NextPart()
		if err != nil {
			t.Errorf("next part: %v", err)
			return
		}
		field = part.FormName()
		buf := make([]byte, len(first))
		if _, err := io.ReadFull(part, buf); err != nil {
			t.Errorf("first chunk: %v", err)
			return
		}
		close(next) // the client sent part of the body before having all of it
		tail, _ := io.ReadAll(part)
		got = append(buf, tail...)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"path":"t/x.csv","checksum":"c","mtime":1,"path_type":"object","physical_address":"p"}`)
	}))
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.Upload(ctx, "lake", "b1", "t/x.csv", &stepReader{first: first, rest: rest, next: next, ctx: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if field != "content" || path != "t/x.csv" || string(got) != string(first)+string(rest) {
		t.Errorf("server got field=%q path=%q body=%q", field, path, got)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestUploadReaderFailureIsNotTransient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Upload(context.Background(), "lake", "b1", "x", failingReader{})
	if err == nil || errors.Is(err, pipeline.ErrTransient) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want the reader's error, not transient", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDownload(t *testing.T) {
	c, _ := newFake(t, map[string]answer{
		"GET /api/v1/repositories/lake/refs/main/objects": {200, "hello"},
	})
	var buf bytes.Buffer
	if err := c.Download(context.Background(), "lake", "main", "x", &buf); err != nil || buf.String() != "hello" {
		t.Fatalf("Download = %q, %v", buf.String(), err)
	}
	err := c.Download(context.Background(), "lake", "main", "x", failingWriter{})
	if err == nil || errors.Is(err, pipeline.ErrTransient) {
		t.Fatalf("writer failure: %v, want permanent error", err)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{AccessKeyID: "a", SecretAccessKey: "s"}, "lakefs: config: endpoint is empty"},
		{Config{Endpoint: "127.0.0.1:8000", AccessKeyID: "a", SecretAccessKey: "s"}, `lakefs: config: endpoint "127.0.0.1:8000" is not an http(s) URL`},
		{Config{Endpoint: "http://h"}, "lakefs: config: access key id and secret access key are required"},
		{Config{Endpoint: "http://h", AccessKeyID: "a", SecretAccessKey: "s", Timeout: -1}, "lakefs: config: timeouts must not be negative"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %s", tt.cfg, err, tt.want)
		}
	}
}

// TestAnswerBodyIsBounded: a lakeFS (or a proxy in front of it) that
// answers a JSON call with an endless body must not make the daemon read it
// all into memory: the call fails, naming the limit, after reading a bound.
func TestAnswerBodyIsBounded(t *testing.T) {
	var sent int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		_, _ = w.Write([]byte(`{"id":"`))
		for sent < 4*maxAnswerBody {
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Head(context.Background(), "repo", "main")
	if err == nil || !strings.Contains(err.Error(), "answer over") {
		t.Fatalf("Head over an endless answer: err = %v, want the answer-size limit named", err)
	}
	if errors.Is(err, pipeline.ErrTransient) {
		t.Errorf("an oversized answer is retried: %v", err)
	}
}

// An error answer's JSON message is held to the same budget as a body that
// is not JSON: lakeFS (or whatever answers at its address) may echo a long
// request, and the error goes into logs, the run's last error and events.
// The class is still judged on the whole message.
func TestErrorMessageIsBounded(t *testing.T) {
	long := strings.Repeat("é", 30000) // 60,000 bytes, two per rune
	c, _ := newFake(t, map[string]answer{
		"GET /api/v1/repositories/lake/commits/c1":          {500, msg(long)},
		"POST /api/v1/repositories/lake/refs/b1/merge/main": {503, msg(long + " branch is currently locked")},
	})
	_, err := c.GetCommit(context.Background(), "lake", "c1")
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("GetCommit: %v, want a *lakefs.Error", err)
	}
	if n := len(le.Message); n > maxMessage+64 {
		t.Errorf("message of %d bytes kept, want at most %d and a note", n, maxMessage+64)
	}
	if !utf8.ValidString(le.Message) || !strings.Contains(le.Message, "clipped") {
		t.Errorf("message %.80q… is not valid UTF-8 or does not say it was clipped", le.Message)
	}
	_, err = c.Merge(context.Background(), "lake", "b1", "main", "m", nil)
	if !errors.Is(err, pipeline.ErrTransient) {
		t.Errorf("a locked branch's long message: %v is not transient", err)
	}
}

// A sealed commit in main's history that no first-parent commit merged
// (another batch's branch took it in: review 9) is not on the target but
// Absorbed by the commit that brought it in; an older build's publish of a
// descendant of it (its recheck's merge of main's head into the batch
// branch) is still its publish; and when the window is cut by its bound it
// is not known, so the sealed commit counts as on the target, as before.
func TestPublishedTellsAbsorbedFromMerged(t *testing.T) {
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	sealed, c1, c2, c3, c4, x, d := id('a'), id('1'), id('2'), id('3'), id('4'), id('e'), id('d')
	since := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	mergeBase := func(dest, base string) (string, answer) {
		return "GET /api/v1/repositories/lake/refs/" + sealed + "/merge/" + dest,
			answer{200, `{"base_commit_id":"` + base + `","destination_commit_id":"` + dest + `","source_commit_id":"` + sealed + `"}`}
	}
	fake := func(bringerParents string, more map[string]answer) *Client {
		answers := map[string]answer{
			"GET /api/v1/repositories/lake/branches": {200, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"` + c4 + `"}]}`},
			"GET /api/v1/repositories/lake/refs/" + c4 + "/commits": {200, `{"pagination":{"has_more":false},"results":[
				{"id":"` + c4 + `","parents":["` + c3 + `"]},
				{"id":"` + c3 + `","parents":` + bringerParents + `},
				{"id":"` + c2 + `","parents":["` + c1 + `"]}]}`},
		}
		for _, dest := range []struct{ id, base string }{{c4, sealed}, {c3, sealed}, {c2, c1}} {
			k, a := mergeBase(dest.id, dest.base)
			answers[k] = a
		}
		maps.Copy(answers, more)
		c, _ := newFake(t, answers)
		return c
	}
	// B's publish c3 merged B's seal x, whose history holds sealed, and
	// does not hold sealed's file (B's branch deleted it).
	object := func(addr string) string {
		return `{"path":"t/a","checksum":"k","physical_address":"` + addr + `","size_bytes":1,"path_type":"object","mtime":0}`
	}
	ls := func(ref string, objs ...string) (string, answer) {
		return "GET /api/v1/repositories/lake/refs/" + ref + "/objects/ls", answer{200, `{"pagination":{"has_more":false},"results":[` + strings.Join(objs, ",") + `]}`}
	}
	absorbed := map[string]answer{
		"GET /api/v1/repositories/lake/commits/" + x:                   {200, `{"id":"` + x + `","parents":["` + c2 + `"]}`},
		"GET /api/v1/repositories/lake/refs/" + c2 + "/diff/" + sealed: {200, `{"pagination":{"has_more":false},"results":[{"path":"t/a","type":"added","path_type":"object","size_bytes":1}]}`},
	}
	k, a := ls(sealed, object("s://a"))
	absorbed[k] = a
	k, a = ls(c3)
	absorbed[k] = a
	c := fake(`["`+c2+`","`+x+`"]`, absorbed)
	p, err := c.Published(context.Background(), "lake", "main", sealed, since)
	if err != nil || p.OnTarget || p.Absorbed != c3 || p.Head != c4 {
		t.Errorf("Published of a seal another batch took in = %+v, %v; want not on target, absorbed by %s", p, err, c3)
	}
	// The same, but c3 holds sealed's file as sealed does: published by c3.
	k, a = ls(c3, object("s://a"))
	absorbed[k] = a
	c = fake(`["`+c2+`","`+x+`"]`, absorbed)
	p, err = c.Published(context.Background(), "lake", "main", sealed, since)
	if err != nil || !p.OnTarget || p.Merge != c3 || p.Absorbed != "" {
		t.Errorf("Published of a seal another batch took in unchanged = %+v, %v; want on target, by %s", p, err, c3)
	}
	// At another address with the same claimed checksum and size: not the batch's bytes.
	k, a = ls(c3, object("s://other"))
	absorbed[k] = a
	c = fake(`["`+c2+`","`+x+`"]`, absorbed)
	if p, err = c.Published(context.Background(), "lake", "main", sealed, since); err != nil || p.OnTarget || p.Absorbed != c3 {
		t.Errorf("Published of a seal another batch took in relinked = %+v, %v; want absorbed by %s", p, err, c3)
	}
	// An older build merged d, its recheck's merge of main's head into the seal.
	c = fake(`["`+c2+`","`+d+`"]`, map[string]answer{
		"GET /api/v1/repositories/lake/commits/" + d: {200, `{"id":"` + d + `","parents":["` + sealed + `","` + c2 + `"]}`}})
	p, err = c.Published(context.Background(), "lake", "main", sealed, since)
	if err != nil || !p.OnTarget || p.Merge != c3 || p.Source != d || p.Absorbed != "" {
		t.Errorf("Published of a seal an older build published by a descendant = %+v, %v; want on target by %s from %s", p, err, c3, d)
	}
	// The merge of sealed is older than the window (lakeFS's clock behind
	// lakewap's by more than the slack): the look goes on beyond it and
	// finds it, instead of taking the window's oldest commit for its bringer.
	answers := map[string]answer{
		"GET /api/v1/repositories/lake/branches": {200, `{"pagination":{"has_more":false},"results":[{"id":"main","commit_id":"` + c4 + `"}]}`},
		"GET /api/v1/repositories/lake/refs/" + c4 + "/commits": {200, `{"pagination":{"has_more":false},"results":[
			{"id":"` + c4 + `","parents":["` + c3 + `"]},
			{"id":"` + c3 + `","parents":["` + c2 + `"]}]}`},
		"GET /api/v1/repositories/lake/refs/" + c2 + "/commits": {200, `{"pagination":{"has_more":false},"results":[
			{"id":"` + c2 + `","parents":["` + c1 + `","` + sealed + `"]},
			{"id":"` + c1 + `","parents":[]}]}`},
	}
	for _, dest := range []struct{ id, base string }{{c4, sealed}, {c3, sealed}, {c2, sealed}, {c1, c1}} {
		k, a := mergeBase(dest.id, dest.base)
		answers[k] = a
	}
	c, _ = newFake(t, answers)
	p, err = c.Published(context.Background(), "lake", "main", sealed, since)
	if err != nil || !p.OnTarget || p.Merge != c2 || p.Absorbed != "" {
		t.Errorf("Published of a seal merged before the window = %+v, %v; want on target, merged by %s", p, err, c2)
	}
}
