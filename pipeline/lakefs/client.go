package lakefs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/flight"
	"github.com/lakewap/lakewap/pipeline"
)

// Config says where lakeFS is and how long a call may take.
type Config struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:8000;
	// "/api/v1" is added unless it is already there.
	Endpoint        string
	AccessKeyID     string
	SecretAccessKey string
	// Timeout bounds each API call (default 30s); a shorter deadline on
	// the caller's context wins. A whole Upload or Download, which streams
	// an object's body, has transferTimeout.
	Timeout time.Duration
	// HTTPClient defaults to a client without its own timeout (deadlines
	// come from the context) that keeps up to maxIdleConns connections
	// to the server between calls.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Registerer, if set, gets the client's metrics (metrics.go): every
	// call timed by method and status code. Not with HTTPClient.
	Registerer prometheus.Registerer
	// Wrap, if set, wraps the client's transport, outside the metrics (the
	// tracing's client spans). Not with HTTPClient.
	Wrap func(http.RoundTripper) http.RoundTripper
	// MaxListEntries bounds a listing taken whole (List, Diff, Changes,
	// ListBranches; default DefaultMaxListEntries): past it the listing
	// stops, an error wrapping ErrListOverLimit, instead of holding every
	// entry first. The daemon sets audit.max_list_objects. An object
	// listing or a diff also holds at most MaxListEntries times
	// ListEntryBytes of paths, addresses and checksums, and refuses an
	// entry past MaxPathBytes, MaxAddressBytes or MaxChecksumBytes (an
	// error wrapping ErrEntryOverLimit).
	MaxListEntries int
}

// DefaultMaxListEntries is Config.MaxListEntries unless set (the audit's
// default listing budget).
const DefaultMaxListEntries = 1_000_000

const (
	defaultTimeout  = 30 * time.Second
	transferTimeout = 10 * time.Minute
	// maxErrorBody bounds what is read of an error answer (its message is
	// all that is kept).
	maxErrorBody = 64 << 10
	// maxAnswerBody bounds a JSON answer: a page of 1000 entries with long
	// paths and metadata is a few MB.
	maxAnswerBody = 64 << 20
	// MaxCommitAnswer bounds the answer of one commit read by id or ref
	// (GetCommit). lakeFS's commits and lakewap's seals take a few KiB; a
	// publish's merge carries the batch's attributes too (64 of up to
	// 1,152 bytes, under 400 KiB as JSON even escaped); a caller of the
	// pre-merge hook names any commit in the repository, and one who may
	// create commit records gives them any size: read to maxAnswerBody, a
	// few dozen such calls at once held gigabytes.
	MaxCommitAnswer = 1 << 20
	// FreeCommitAnswer is what any number of commit reads at once read of
	// their answers; the rest of a longer one waits for one of
	// MaxCommitReads places. Bounded by MaxCommitAnswer alone, the 512
	// hook calls the server takes at once, each naming another commit
	// just under it, held 512 MiB and their decoding
	// (TestConcurrentHookCallsNamingLargeCommitsHoldBoundedAnswers); now
	// at most MaxCommitReads MiB and 64 KiB per call.
	FreeCommitAnswer = 64 << 10
	// MaxCommitReads bounds the commit answers over FreeCommitAnswer read
	// and decoded at once, by the client and by its Outside view each: the
	// runner's reads never wait behind the large commits hook callers name.
	// A read finding no place before its deadline fails (the hook answers
	// 500 without deciding).
	MaxCommitReads = 8
	// maxIdleConns is how many connections to lakeFS are kept open between
	// calls: Go's default of 2 per host made every burst of concurrent
	// calls (steps, downloads) dial again and close the extra connections
	// after them (TestConcurrentCallsKeepTheirConnections).
	maxIdleConns = 128
	// pageSize is what we ask per page; lakeFS caps it at 1000.
	pageSize = 1000
	// publishedDepth bounds how far back Published and MergesOf look on a
	// target (in first-parent commits, within the time window they get).
	publishedDepth = 1000
)

// Client talks to one lakeFS server. It is safe for concurrent use.
type Client struct {
	api     *apigen.ClientWithResponses
	timeout time.Duration
	maxList int // Config.MaxListEntries
	// maxListBytes bounds the paths, addresses and checksums a vetted
	// listing holds: maxList times ListEntryBytes.
	maxListBytes int
	log          *slog.Logger
	bases        *mergeBases
	cached       *commitCache // made or read by id
	made         *madeCommits // made by this client only
	tips         *mergeTips
	// baseFlights and commitFlights are merge-bases and commits being
	// asked for now: a second asker of one waits for the first's answer
	// (the publish turn's recheck, started beside the look, asks for the
	// look's merge-base and for the merge commit the audit's derivation
	// ahead reads). The Outside view has its own: a runner's read never
	// waits for a flight that waits for the outside view's places.
	baseFlights   *flight.Group[[2]string] // base, dest's commit
	commitFlights *flight.Group[Commit]
	// commitRoom holds a place per commit answer over FreeCommitAnswer
	// being read (MaxCommitReads).
	commitRoom chan struct{}
	// outside is this client for reads that outside input chooses
	// (Outside); nil in that view itself.
	outside *Client
}

var _ pipeline.Lake = (*Client)(nil)

// New checks cfg and builds a client; it does not contact the server.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("lakefs: config: endpoint is empty")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("lakefs: config: endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("lakefs: config: access key id and secret access key are required")
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("lakefs: config: timeouts must not be negative")
	}
	if cfg.MaxListEntries < 0 {
		return nil, errors.New("lakefs: config: MaxListEntries must not be negative")
	}
	server := strings.TrimRight(cfg.Endpoint, "/")
	if !strings.HasSuffix(server, "/api/v1") {
		server += "/api/v1"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		var rt http.RoundTripper = transport()
		if cfg.Registerer != nil {
			if rt, err = instrumented(cfg.Registerer, rt); err != nil {
				return nil, fmt.Errorf("lakefs: metrics: %w", err)
			}
		}
		if cfg.Wrap != nil {
			rt = cfg.Wrap(rt)
		}
		hc = &http.Client{Transport: rt}
	} else if cfg.Registerer != nil || cfg.Wrap != nil {
		return nil, errors.New("lakefs: config: Registerer and Wrap apply to the client's own transport, not to HTTPClient")
	}
	api, err := apigen.NewClientWithResponses(server, apigen.WithHTTPClient(hc),
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(cfg.AccessKeyID, cfg.SecretAccessKey)
			return nil
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("lakefs: %w", err)
	}
	c := &Client{api: api, timeout: cmp.Or(cfg.Timeout, defaultTimeout), maxList: cmp.Or(cfg.MaxListEntries, DefaultMaxListEntries),
		log:   cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		bases: &mergeBases{}, cached: &commitCache{}, made: &madeCommits{}, tips: &mergeTips{},
		baseFlights: &flight.Group[[2]string]{}, commitFlights: &flight.Group[Commit]{}, commitRoom: make(chan struct{}, MaxCommitReads)}
	c.maxListBytes = c.maxList * ListEntryBytes
	c.outside = c.forOutside()
	return c, nil
}

// Outside is this client for reads whose targets outside input chooses:
// the pre-merge hook's (every writer has its token, and a call names any
// commit and branch) and the janitor's (the heads of branches a writer may
// make). The same lakeFS user, connections and bounds, but the commits it
// reads by id and the merge-bases it finds go into caches of its own, and
// its commit answers over FreeCommitAnswer have MaxCommitReads places of
// their own. Each view's caches read the other's entries (a commit id, and
// a pair of them, name immutable facts, whoever asked), but outside
// entries push out only outside entries. Sharing one cache, a few thousand
// hook calls pushed the runner's seals and their merge-bases out, and the
// runner asked lakeFS for them again
// (TestHookCallersDoNotChurnTheRunnersLakeFSCaches); sharing the places,
// hook calls naming large commits made the runner's read of a commit of
// its own over 64 KiB (a publish's merge carries up to 64 attributes of a
// producer's) wait behind theirs, or fail at its deadline
// (TestRunnersLargeCommitReadsDoNotWaitBehindCallers).
func (c *Client) Outside() *Client {
	if c.outside == nil {
		return c
	}
	return c.outside
}

// forOutside makes the view Outside returns: c's fields, with caches
// linked both ways to c's, and places and flights of its own.
func (c *Client) forOutside() *Client {
	v := *c
	v.cached = &commitCache{also: c.cached}
	v.bases = &mergeBases{also: c.bases}
	v.commitRoom = make(chan struct{}, MaxCommitReads)
	v.baseFlights = &flight.Group[[2]string]{}
	v.commitFlights = &flight.Group[Commit]{}
	c.cached.also = v.cached
	c.bases.also = v.bases
	v.outside = nil
	return &v
}

// transport is Go's default transport keeping maxIdleConns connections.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	return t
}

// call names one API call for errors and logs. A transfer (Upload,
// Download) streams an object's body and has transferTimeout.
type call struct {
	op, repo, ref string
	transfer      bool
	// maxBody, if set, bounds the answer instead of maxAnswerBody.
	maxBody int
	// room, if set, holds a place while an answer over free bytes is read
	// and decoded: calls at once read at most free bytes each beyond
	// room's capacity.
	room chan struct{}
	free int
}

// send runs one API call under its deadline and checks its status against
// want. An answer of status want is copied into out when it is an
// io.Writer, else decoded as JSON into out (if out is not nil); the body of
// any other answer is read up to maxErrorBody.
func (c *Client) send(ctx context.Context, k call, want int, out any, do func(context.Context) (*http.Response, error)) error {
	timeout := c.timeout
	if k.transfer {
		timeout = transferTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pipeline.CountCall(ctx)
	start := time.Now()
	resp, err := do(cctx)
	if err != nil {
		return c.logged(k, start, transportError(ctx, k.op, k.repo, k.ref, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err != nil {
			return c.logged(k, start, transportError(ctx, k.op, k.repo, k.ref, err))
		}
		return c.logged(k, start, statusError(k.op, k.repo, k.ref, resp.StatusCode, body))
	}
	if w, ok := out.(io.Writer); ok {
		_, err := io.Copy(w, &readErrMarker{r: resp.Body})
		var re readErr
		switch {
		case errors.As(err, &re):
			return c.logged(k, start, transportError(ctx, k.op, k.repo, k.ref, re.error))
		case err != nil: // the caller's writer failed
			return c.logged(k, start, &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Message: "writing download", Cause: err})
		}
	} else {
		limit := cmp.Or(k.maxBody, maxAnswerBody)
		body, leave, err := readAnswer(cctx, resp.Body, k, limit)
		defer leave() // held while the answer is decoded too
		if errors.Is(err, errNoRoom) {
			return c.logged(k, start, &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Status: resp.StatusCode, Class: pipeline.ErrTransient,
				Message: fmt.Sprintf("answer over %d bytes: no room to read it, %d such answers are being read", k.free, cap(k.room)), Cause: err})
		}
		if err != nil {
			return c.logged(k, start, transportError(ctx, k.op, k.repo, k.ref, err))
		}
		if len(body) > limit {
			return c.logged(k, start, &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Status: resp.StatusCode,
				Message: fmt.Sprintf("answer over %d bytes", limit), Cause: errAnswerOverLimit})
		}
		if out != nil {
			if err := json.Unmarshal(body, out); err != nil {
				return c.logged(k, start, &Error{Op: k.op, Repo: k.repo, Ref: k.ref, Status: resp.StatusCode,
					Message: "cannot decode response", Cause: err})
			}
		}
	}
	c.log.Debug("lakefs call", "op", k.op, "repo", k.repo, "ref", k.ref, "status", resp.StatusCode, "duration", time.Since(start))
	return nil
}

var errNoRoom = errors.New("no room before the deadline")

// errAnswerOverLimit is the cause of an answer over its limit (maxAnswerBody
// or the call's maxBody).
var errAnswerOverLimit = errors.New("answer over its limit")

// readAnswer reads r up to limit bytes and one more (which says it is
// over). With k.room, the first k.free bytes and one more are read at
// once; the rest waits for a place in k.room until ctx ends (errNoRoom),
// and leave gives the place back.
func readAnswer(ctx context.Context, r io.Reader, k call, limit int) (body []byte, leave func(), err error) {
	leave = func() {}
	if k.room == nil || k.free >= limit {
		body, err = io.ReadAll(io.LimitReader(r, int64(limit)+1))
		return body, leave, err
	}
	body, err = io.ReadAll(io.LimitReader(r, int64(k.free)+1))
	if err != nil || len(body) <= k.free {
		return body, leave, err
	}
	select {
	case k.room <- struct{}{}:
		leave = func() { <-k.room }
	case <-ctx.Done():
		return nil, leave, fmt.Errorf("%w: %w", errNoRoom, ctx.Err())
	}
	rest, err := io.ReadAll(io.LimitReader(r, int64(limit+1-len(body))))
	return append(body, rest...), leave, err
}

func (c *Client) logged(k call, start time.Time, e *Error) error {
	c.log.Debug("lakefs call failed", "op", k.op, "repo", k.repo, "ref", k.ref,
		"status", e.Status, "duration", time.Since(start), "err", e)
	return e
}

// Healthy reports whether the server answers its health check.
func (c *Client) Healthy(ctx context.Context) error {
	return c.send(ctx, call{op: "health check"}, http.StatusNoContent, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.HealthCheck(ctx)
	})
}

// CreateRepository creates repository name on storageNamespace (for the
// local blockstore: local://name). An existing repository is not an error,
// whatever its namespace.
func (c *Client) CreateRepository(ctx context.Context, name, storageNamespace, defaultBranch string) error {
	body := apigen.CreateRepositoryJSONRequestBody{Name: name, StorageNamespace: storageNamespace}
	if defaultBranch != "" {
		body.DefaultBranch = &defaultBranch
	}
	err := c.send(ctx, call{op: "create repository", repo: name}, http.StatusCreated, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.CreateRepository(ctx, &apigen.CreateRepositoryParams{}, body)
	})
	if status(err) == http.StatusConflict {
		return nil
	}
	return err
}

// DataPrefix is where lakeFS puts the objects written into repo: the
// repository's storage namespace as its blockstore qualifies it
// (local://<root>/<namespace>/, s3://bucket/prefix/), taken from the
// physical address lakeFS hands a writer of branch for a new object (the
// call creates no object). Objects staged at other addresses (another
// repository's, a bucket the writer owns) are not lakeFS's own.
func (c *Client) DataPrefix(ctx context.Context, repo, branch string) (string, error) {
	var out apigen.StagingLocation
	presign := false
	err := c.send(ctx, call{op: "get physical address", repo: repo, ref: branch}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetPhysicalAddress(ctx, repo, branch, &apigen.GetPhysicalAddressParams{Path: "lakewap/namespace-probe", Presign: &presign})
	})
	if err != nil {
		return "", err
	}
	addr := ""
	if out.PhysicalAddress != nil {
		addr = *out.PhysicalAddress
	}
	i := strings.LastIndex(addr, "/data/")
	if i <= 0 {
		return "", fmt.Errorf("lakefs: the address lakeFS gives a new object of %s/%s, %q, has no /data/ under its namespace", repo, branch, addr)
	}
	return addr[:i+1], nil
}

// status is the HTTP status of a failed call, or 0.
func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

// Committer is how lakeFS names the user of this client in the commits and
// merges it makes (its email, else its id): the pre-merge hook tells
// lakewap's own merges by it.
func (c *Client) Committer(ctx context.Context) (string, error) {
	var out apigen.CurrentUser
	err := c.send(ctx, call{op: "get current user"}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetCurrentUser(ctx)
	})
	if err != nil {
		return "", err
	}
	if out.User.Email != nil && *out.User.Email != "" {
		return *out.User.Email, nil
	}
	return out.User.Id, nil
}
