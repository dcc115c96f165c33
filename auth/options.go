package auth

import (
	"log/slog"
	"net/http"
	"time"
)

// Option changes how the Guard and the authenticators are built.
type Option func(*options)

type options struct {
	log     *slog.Logger
	metrics *Metrics
	now     func() time.Time
	hc      *http.Client
}

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithMetrics sets the metrics (default: none).
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithClock sets the clock of rate limits, token expiry and tokens file reloads
// (tests pass a fake one).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithHTTPClient sets the client that fetches the OIDC provider's discovery
// document and keys (default: one with a 10 s timeout, trusting oidc.ca_file).
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.hc = hc } }

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	o.log = o.log.With("component", "auth")
	return o
}
