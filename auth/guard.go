package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Authenticator tells who sent a request.
type Authenticator interface {
	// Authenticate returns the caller: ErrNoCredential when the request carries
	// no credential this authenticator reads, an error wrapping
	// ErrInvalidCredential when it carries one that is refused.
	Authenticate(r *http.Request) (Identity, error)
}

// Rule says whether an identity may make a call.
type Rule func(Identity) bool

// AnyRole allows an identity holding one of roles (RoleAnyTeam: any team role).
func AnyRole(roles ...Role) Rule {
	return func(id Identity) bool {
		for _, r := range roles {
			if id.Has(r) {
				return true
			}
		}
		return false
	}
}

// Anonymous is the identity of every caller in mode none.
var Anonymous = Identity{Name: "anonymous", Method: ModeNone, Roles: []Role{RoleAdmin}}

// limiterIdle is how long an identity's rate limiter is kept unused, once there
// are more than maxLimiters of them.
const (
	limiterIdle = 10 * time.Minute
	maxLimiters = 4096
)

// noCredentialHint says how a caller without a credential gets one.
const noCredentialHint = `no credential: send "Authorization: Bearer <token>" (gpupool commands: --token-file or GPUPOOL_TOKEN; ` +
	`"gpupool scheduler" writes an admin token to <data_dir>/auth/admin.token)`

// Guard authenticates every request of an API (bearer tokens from the tokens
// file, OIDC ID tokens, client certificates), limits each identity's rate and
// body size, and puts the Identity into the request context; Allow and Forbid
// answer the calls a caller's roles do not allow. It is safe for concurrent use.
type Guard struct {
	mode    string
	tokens  *TokenFile
	oidc    *OIDC
	certs   *ClientCerts
	limit   rate.Limit
	burst   int
	maxBody int64
	o       options

	mu       sync.Mutex
	limiters map[string]*visitor
}

type visitor struct {
	lim  *rate.Limiter
	last time.Time
}

var _ Authenticator = (*Guard)(nil)

// New builds the guard cfg describes (cfg resolved: the tokens file named). With
// OIDC configured, the provider is discovered now if it answers (later, on first
// use, if not).
func New(ctx context.Context, cfg Config, opts ...Option) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	g := &Guard{mode: cfg.Mode, limit: rate.Limit(cfg.RateLimit), burst: cfg.RateBurst, maxBody: cfg.MaxBodyBytes,
		o: newOptions(opts), limiters: map[string]*visitor{}}
	if cfg.RateLimit == 0 {
		g.limit = rate.Inf
	}
	if cfg.Mode == ModeNone {
		return g, nil
	}
	if cfg.TokensFile == "" {
		return nil, errors.New("auth: tokens_file: empty")
	}
	var err error
	if g.tokens, err = NewTokenFile(cfg.TokensFile, opts...); err != nil {
		return nil, err
	}
	if cfg.OIDC.Issuer != "" {
		if g.oidc, err = NewOIDC(cfg.OIDC, opts...); err != nil {
			return nil, err
		}
		_, _ = g.oidc.discover(ctx) // logged; retried on use
	}
	if cfg.TLS.ClientCAFile != "" {
		if g.certs, err = NewClientCerts(cfg.TLS); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Authenticate returns the caller: in mode none, Anonymous; else a bearer token
// shaped like a JWT goes to OIDC (when configured), any other to the tokens
// file, and without one a verified client certificate is the credential.
func (g *Guard) Authenticate(r *http.Request) (Identity, error) {
	if g.mode == ModeNone {
		return Anonymous, nil
	}
	tok, err := bearerToken(r)
	switch {
	case err == nil && g.oidc != nil && isJWT(tok):
		return g.oidc.Authenticate(r)
	case !errors.Is(err, ErrNoCredential):
		return g.tokens.Authenticate(r)
	case g.certs != nil:
		return g.certs.Authenticate(r)
	}
	return Identity{}, ErrNoCredential
}

// Handler authenticates each request before next sees it: 401 without a valid
// credential, 503 when it cannot be checked now, 429 past the identity's rate
// limit, 413 past the body limit (the body is read here, so next reads it from
// memory).
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := g.Authenticate(r)
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		g.o.metrics.authenticated(id.Method)
		if !g.allow(id) {
			g.o.metrics.deny(ReasonRateLimited)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, ReasonRateLimited, fmt.Sprintf("%s: more than %g requests per second", id, float64(g.limit)))
			return
		}
		if !g.readBody(w, r) {
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
	})
}

// Allow serves next only to identities rule allows; the others get 403.
func (g *Guard) Allow(rule Rule, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := FromContext(r.Context())
		if !rule(id) {
			g.Forbid(w, r, fmt.Sprintf("%s may not %s %s", Describe(id), r.Method, r.URL.Path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Forbid answers 403 {"error": msg, "code": "forbidden"} and counts it: for the
// checks an API makes itself (a team's own jobs only).
func (g *Guard) Forbid(w http.ResponseWriter, r *http.Request, msg string) {
	g.o.metrics.deny(ReasonForbidden)
	id, _ := FromContext(r.Context())
	g.o.log.Info("request forbidden", "identity", id.String(), "method", r.Method, "path", r.URL.Path, "why", msg)
	writeError(w, http.StatusForbidden, ReasonForbidden, msg)
}

// Describe names an identity and its roles for an error message.
func Describe(id Identity) string {
	roles := make([]string, len(id.Roles))
	for i, r := range id.Roles {
		roles[i] = string(r)
	}
	if len(roles) == 0 {
		return id.String() + " (no role)"
	}
	return id.String() + " (" + strings.Join(roles, ", ") + ")"
}

// refuse answers a request that did not authenticate.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, "auth_unavailable", err.Error())
		return
	case errors.Is(err, ErrNoCredential):
		g.o.metrics.deny(ReasonUnauthenticated)
		err = errors.New(noCredentialHint)
	default:
		g.o.metrics.deny(ReasonInvalid)
	}
	g.o.log.Debug("request unauthenticated", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
	w.Header().Set("WWW-Authenticate", `Bearer realm="gpupool"`)
	writeError(w, http.StatusUnauthorized, ReasonUnauthenticated, err.Error())
}

// allow takes one request from id's rate limit.
func (g *Guard) allow(id Identity) bool {
	if g.limit == rate.Inf {
		return true
	}
	now := g.o.now()
	key := id.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.limiters[key]
	if v == nil {
		if len(g.limiters) >= maxLimiters {
			for k, old := range g.limiters {
				if now.Sub(old.last) > limiterIdle {
					delete(g.limiters, k)
				}
			}
		}
		v = &visitor{lim: rate.NewLimiter(g.limit, g.burst)}
		g.limiters[key] = v
	}
	v.last = now
	return v.lim.AllowN(now, 1)
}

// readBody reads the body into memory, refusing one past the limit; false means
// it replied.
func (g *Guard) readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	tooLarge := func() bool {
		g.o.metrics.deny(ReasonTooLarge)
		writeError(w, http.StatusRequestEntityTooLarge, ReasonTooLarge, fmt.Sprintf("request body over %d bytes", g.maxBody))
		return false
	}
	if r.ContentLength > g.maxBody {
		return tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, g.maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "read request body: "+err.Error())
		return false
	}
	if int64(len(data)) > g.maxBody {
		return tooLarge()
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return true
}

// errorBody is the JSON of every refusal, the same shape as the APIs' errors.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(errorBody{Error: msg, Code: code})
}
