package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// DefaultURL is where `gpupool scheduler` listens by default.
const DefaultURL = "http://127.0.0.1:9470"

// maxReply bounds a reply the client reads.
const maxReply = 64 << 20

// Client talks to a running scheduler's API.
type Client struct {
	base  string
	hc    *http.Client
	token string
}

// ClientOption changes how a Client talks to the API.
type ClientOption func(*Client)

// WithToken sends token as the bearer credential of every request ("": none).
func WithToken(token string) ClientOption { return func(c *Client) { c.token = token } }

// NewClient returns a client for the scheduler at baseURL (e.g. DefaultURL); hc
// nil uses a client with a 30 s timeout.
func NewClient(baseURL string, hc *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("scheduler url %q: want http://host:port", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// As returns a client like c that sends token instead of c's own: a service
// acting for a caller (the console) passes the caller's credential on, so the
// scheduler authorises and audits the caller, not the service.
func (c *Client) As(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// Credentials are where a command finds its token and how it trusts the
// scheduler's TLS.
type Credentials struct {
	// TokenFile (--token-file), Token (GPUPOOL_TOKEN) and DefaultTokenFile (the
	// admin token the scheduler wrote): the first one set wins (auth.ClientToken).
	TokenFile, Token, DefaultTokenFile string
	// CAFile trusts a private CA for an https:// URL ("": the system's roots).
	CAFile string
	// CertFile and KeyFile are a client certificate to present (both or neither).
	CertFile, KeyFile string
	// Insecure lets a token go over plain http:// to a scheduler that is not on
	// this machine (a TLS-terminating proxy on the way, say). It never lets the
	// admin token of DefaultTokenFile leave the machine.
	Insecure bool
}

// ErrTokenNotSent means Dial refused to send a token where it could be read on
// the way or by the wrong server: the data directory's admin token to a
// scheduler not on this machine, or any token over plain http:// beyond it.
var ErrTokenNotSent = errors.New("token not sent")

// Dial returns a client for the scheduler at baseURL that sends the token and
// presents the certificate cr names. The admin token it finds in the data
// directory (cr.DefaultTokenFile, used when no other token is given) goes only to
// a scheduler on this machine, and any token over plain http:// only there too
// unless cr.Insecure: otherwise Dial fails with ErrTokenNotSent and sends
// nothing. opts apply to the client (WithDialContext, say).
func Dial(baseURL string, cr Credentials, opts ...ClientOption) (*Client, error) {
	tok, err := auth.ClientToken(cr.TokenFile, cr.Token, cr.DefaultTokenFile)
	if err != nil {
		return nil, err
	}
	fromDataDir := cr.TokenFile == "" && strings.TrimSpace(cr.Token) == "" && tok != ""
	if err := tokenDestination(baseURL, tok != "", fromDataDir, cr.Insecure); err != nil {
		if fromDataDir {
			return nil, fmt.Errorf("%w (the admin token of %s; pass the token meant for that scheduler with --token-file or GPUPOOL_TOKEN)", err, cr.DefaultTokenFile)
		}
		return nil, err
	}
	tc, err := auth.ClientTLS(cr.CAFile, cr.CertFile, cr.KeyFile)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tc},
		// The API never redirects: a redirect would take the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return NewClient(baseURL, hc, append([]ClientOption{WithToken(tok)}, opts...)...)
}

// WithDialContext has the client open its connections with dial (an SSH
// tunnel, a Unix socket, a test's listener) instead of the network's own.
func WithDialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) ClientOption {
	return func(c *Client) {
		if t, ok := c.hc.Transport.(*http.Transport); ok {
			t = t.Clone()
			t.DialContext = dial
			cp := *c.hc
			cp.Transport = t
			c.hc = &cp
		}
	}
}

// tokenDestination says whether a token may go to baseURL: the data directory's
// admin token (fromDataDir) only to a scheduler on this machine; any token over
// plain http:// only there too, unless insecure. Whether the host is this machine
// is read from the URL (an IP address of loopback, or localhost), never from
// what a name resolves to.
func tokenDestination(baseURL string, hasToken, fromDataDir, insecure bool) error {
	if !hasToken {
		return nil
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("scheduler url %q: want http://host:port", baseURL)
	}
	switch local := loopbackHost(u.Hostname()); {
	case local:
		return nil
	case fromDataDir:
		return fmt.Errorf("scheduler url %q: %w: the data directory's admin token goes only to a scheduler on this machine (127.0.0.1, ::1 or localhost)", baseURL, ErrTokenNotSent)
	case u.Scheme != "https" && !insecure:
		return fmt.Errorf("scheduler url %q: %w: a token goes over plain http:// only to this machine; use https:// (with --ca-file for a private CA), or --insecure if a TLS-terminating proxy is on the way", baseURL, ErrTokenNotSent)
	}
	return nil
}

// loopbackHost reports whether host names this machine: localhost or a
// loopback IP address.
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Error is an error the API returned. errors.Is matches it against the
// scheduler's sentinel errors (scheduler.ErrUnknownQueue, …) and auth's
// (auth.ErrUnauthenticated, auth.ErrForbidden, …).
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the scheduler sentinel that the code stands for.
func (e *Error) Unwrap() error {
	switch e.Code {
	case "unknown_queue":
		return scheduler.ErrUnknownQueue
	case "unknown_job":
		return scheduler.ErrUnknownJob
	case "over_quota":
		return scheduler.ErrOverQuota
	case "not_allowed":
		return scheduler.ErrNotAllowed
	case "job_state":
		return scheduler.ErrJobState
	case "invalid":
		return scheduler.ErrInvalidJob
	case auth.ReasonUnauthenticated:
		return auth.ErrUnauthenticated
	case auth.ReasonForbidden:
		return auth.ErrForbidden
	case auth.ReasonRateLimited:
		return auth.ErrRateLimited
	case auth.ReasonTooLarge:
		return auth.ErrBodyTooLarge
	}
	return nil
}

// ErrUnreachable means no scheduler answered at the URL.
var ErrUnreachable = errors.New("scheduler not reachable")

// do sends a request with a JSON body (if in is not nil) and decodes the JSON
// reply into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doHeader(ctx, method, path, nil, in, out)
}

// doHeader is do with extra request headers.
func (c *Client) doHeader(ctx context.Context, method, path string, hdr http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s (start it with \"gpupool scheduler\", or pass --scheduler-url): %v", ErrUnreachable, c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e ErrorResponse
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			return &Error{Status: resp.StatusCode, Code: "internal", Message: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
		}
		return &Error{Status: resp.StatusCode, Code: e.Code, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode reply of %s %s: %w", method, path, err)
		}
	}
	return nil
}

// Submit queues a job.
func (c *Client) Submit(ctx context.Context, spec scheduler.JobSpec) (scheduler.Job, error) {
	var j scheduler.Job
	// The server checks too; checking here first gives the CLI the same error
	// without a round trip, and never sends a value no server would take.
	if err := spec.Validate(); err != nil {
		return j, err
	}
	err := c.do(ctx, http.MethodPost, "/v1/jobs", spec, &j)
	return j, err
}

// IdempotencyKeyHeader carries a submit's idempotency key: a retry with the
// same key and spec returns the job the first call queued.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader is "true" on the reply to a submit whose key queued its job
// before.
const ReplayedHeader = "Idempotent-Replayed"

// SubmitOnce queues a job under an idempotency key (NewIdempotencyKey): send
// the same key on every retry of the same submit, and the scheduler queues it
// once.
func (c *Client) SubmitOnce(ctx context.Context, spec scheduler.JobSpec, key string) (scheduler.Job, error) {
	var j scheduler.Job
	if err := spec.Validate(); err != nil {
		return j, err
	}
	err := c.doHeader(ctx, http.MethodPost, "/v1/jobs", http.Header{IdempotencyKeyHeader: {key}}, spec, &j)
	return j, err
}

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Retryable says whether a request that failed with err may be sent again
// under its idempotency key: the scheduler was unreachable (perhaps after it
// got the request) or failed on its side.
func Retryable(err error) bool {
	var e *Error
	return errors.Is(err, ErrUnreachable) || (errors.As(err, &e) && e.Status >= 500)
}

// Queues lists the queues.
func (c *Client) Queues(ctx context.Context) ([]scheduler.QueueStatus, error) {
	var r QueuesResponse
	err := c.do(ctx, http.MethodGet, "/v1/queues", nil, &r)
	return r.Queues, err
}

// Fragmentation returns, per cluster and card type, the free and stranded
// whole GPUs (nil when the scheduler does not place jobs on nodes).
func (c *Client) Fragmentation(ctx context.Context) ([]placement.Fragmentation, error) {
	var r FragmentationResponse
	if err := c.do(ctx, http.MethodGet, "/v1/fragmentation", nil, &r); err != nil {
		return nil, err
	}
	if !r.Placed {
		return nil, nil
	}
	return r.Fragmentation, nil
}

// FragmentationFindings returns the open fragmentation findings (nil when the
// scheduler does not place jobs on nodes). Their plans of moves name other
// teams' jobs: the scheduler sends them only to a client whose credential
// reads every job (admin, operator, finance); to a team's credential each
// finding comes without plans, NoPlan saying how many there are.
func (c *Client) FragmentationFindings(ctx context.Context) ([]scheduler.FragmentationFinding, error) {
	var r FragmentationResponse
	if err := c.do(ctx, http.MethodGet, "/v1/fragmentation", nil, &r); err != nil {
		return nil, err
	}
	if !r.Placed {
		return nil, nil
	}
	return r.Findings, nil
}

// Model returns the scheduler's model.
func (c *Client) Model(ctx context.Context) (scheduler.Model, error) {
	var m scheduler.Model
	err := c.do(ctx, http.MethodGet, "/v1/model", nil, &m)
	return m, err
}

// Jobs lists jobs.
func (c *Client) Jobs(ctx context.Context, f scheduler.JobFilter) ([]scheduler.Job, error) {
	q := url.Values{}
	set(q, "queue", f.Queue)
	set(q, "team", f.Team)
	set(q, "state", string(f.State))
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var r JobsResponse
	err := c.do(ctx, http.MethodGet, "/v1/jobs"+query(q), nil, &r)
	return r.Jobs, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (scheduler.Job, error) {
	var j scheduler.Job
	err := c.do(ctx, http.MethodGet, jobPath(id), nil, &j)
	return j, err
}

// Finish reports a job's end (succeeded, failed or cancelled).
func (c *Client) Finish(ctx context.Context, id, status string) (scheduler.Job, error) {
	var j scheduler.Job
	err := c.do(ctx, http.MethodPost, jobPath(id), FinishRequest{Status: status}, &j)
	return j, err
}

// Resume lets a job held after a policy reclaimed it be admitted again.
func (c *Client) Resume(ctx context.Context, id string) (scheduler.Job, error) {
	var j scheduler.Job
	err := c.do(ctx, http.MethodPost, "/v1/resume/"+strings.TrimPrefix(jobPath(id), "/v1/jobs/"), nil, &j)
	return j, err
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id string) (scheduler.Job, error) {
	var j scheduler.Job
	err := c.do(ctx, http.MethodDelete, jobPath(id), nil, &j)
	return j, err
}

// Actions reads the audit trail.
func (c *Client) Actions(ctx context.Context, f scheduler.ActionFilter) ([]scheduler.Action, error) {
	q := url.Values{}
	set(q, "job", f.Job)
	set(q, "decision", f.Decision)
	set(q, "pool", f.Pool)
	set(q, "team", f.Team)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var r ActionsResponse
	err := c.do(ctx, http.MethodGet, "/v1/actions"+query(q), nil, &r)
	return r.Actions, err
}

// AddFindings pushes findings.
func (c *Client) AddFindings(ctx context.Context, fs []schemas.Finding) error {
	return c.do(ctx, http.MethodPost, "/v1/findings", FindingsRequest{Findings: fs}, nil)
}

// jobPath is the URL path of a job; IDs hold slashes, and each part is escaped.
func jobPath(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/v1/jobs/" + strings.Join(parts, "/")
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
