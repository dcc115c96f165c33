package auth

import "github.com/prometheus/client_golang/prometheus"

// Denial reasons (the reason label of gpupool_api_requests_denied_total).
const (
	ReasonUnauthenticated = "unauthenticated"    // no credential
	ReasonInvalid         = "invalid_credential" // a credential, refused
	ReasonForbidden       = "forbidden"          // known caller, role does not allow it
	ReasonRateLimited     = "rate_limited"       // past the identity's rate limit
	ReasonTooLarge        = "too_large"          // body past max_body_bytes
)

// Metrics are the API guard's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	denied  *prometheus.CounterVec
	allowed *prometheus.CounterVec
	reloads *prometheus.CounterVec
	tokens  prometheus.Gauge
}

// NewMetrics registers the guard's metrics with reg (nil: kept, not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_api_requests_denied_total",
			Help: "API requests refused, by reason: unauthenticated, invalid_credential, forbidden, rate_limited, too_large.",
		}, []string{"reason"}),
		allowed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_api_requests_authenticated_total",
			Help: "API requests whose caller was authenticated, by method: token, oidc, cert, none.",
		}, []string{"method"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_api_token_file_reloads_total",
			Help: "Re-reads of the tokens file after it changed, by result: ok, error (the tokens read before still hold).",
		}, []string{"result"}),
		tokens: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpupool_api_tokens", Help: "Static tokens in the tokens file.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.denied, m.allowed, m.reloads, m.tokens)
	}
	return m
}

func (m *Metrics) deny(reason string) {
	if m != nil {
		m.denied.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) authenticated(method string) {
	if m != nil {
		m.allowed.WithLabelValues(method).Inc()
	}
}

func (m *Metrics) reload(ok bool) {
	if m == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
}

func (m *Metrics) setTokens(n int) {
	if m != nil {
		m.tokens.Set(float64(n))
	}
}
