package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/klauspost/compress/gzhttp"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Store is what the console reads: store.Store implements it.
type Store interface {
	Query(ctx context.Context, sql string, params store.Params) (*store.Result, error)
	Insert(ctx context.Context, table string, b *store.Block, token string) error
	Database() string
}

var _ Store = store.Store(nil)

// Scheduler is the scheduler's API as the console reads it; *api.Client
// implements it.
type Scheduler interface {
	Queues(ctx context.Context) ([]scheduler.QueueStatus, error)
	Model(ctx context.Context) (scheduler.Model, error)
	Jobs(ctx context.Context, f scheduler.JobFilter) ([]scheduler.Job, error)
}

// Console serves the web console. It is safe for concurrent use.
type Console struct {
	cfg   Config
	st    Store
	guard *auth.Guard
	sched Scheduler
	log   *slog.Logger
	now   func(ctx context.Context) time.Time

	reports  reportCache
	costs    costCache
	policies []scheduler.Policy
	actorFor func(token string) JobActor
}

// Option changes how a Console is built.
type Option func(*Console)

// WithScheduler reads queues, pools and the scheduler's jobs from s (default:
// none; the Pools page then shows what the store knows).
func WithScheduler(s Scheduler) Option { return func(c *Console) { c.sched = s } }

// WithLogger sets the logger (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *Console) { c.log = l } }

// WithClock fixes the console's "now" (default: the newest minute in the store).
func WithClock(now func() time.Time) Option {
	return func(c *Console) { c.now = func(context.Context) time.Time { return now() } }
}

// New returns a console over st, every page behind g.
func New(cfg Config, st Store, g *auth.Guard, opts ...Option) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, schemas.PrefixFields("console", err)
	}
	if st == nil {
		return nil, errors.New("console: no store")
	}
	if g == nil {
		return nil, errors.New("console: no auth guard (every page needs an identity)")
	}
	c := &Console{cfg: cfg, st: st, guard: g, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	c.log = c.log.With("component", "console")
	if c.now == nil {
		c.now = c.dataNow
	}
	return c, nil
}

// Handler returns the console's routes: the login page and static assets open,
// every other page behind the guard.
func (c *Console) Handler() http.Handler {
	pages := http.NewServeMux()
	for _, p := range c.pages() {
		pages.Handle(p.pattern, c.page(p))
	}
	pages.HandleFunc("GET /chargeback.csv", c.chargebackDownload(billing.FormatCSV, "text/csv; charset=utf-8"))
	pages.HandleFunc("GET /chargeback.json", c.chargebackDownload(billing.FormatJSON, "application/json"))
	pages.HandleFunc("GET /chargeback.parquet", c.chargebackParquet)
	pages.HandleFunc("POST /act/resume", c.act(actResume))
	pages.HandleFunc("POST /act/withdraw", c.act(actWithdraw))
	pages.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/fleet", http.StatusSeeOther)
	})
	root := http.NewServeMux()
	root.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	root.HandleFunc("GET /login", c.loginPage)
	root.HandleFunc("POST /login", c.login)
	root.HandleFunc("POST /logout", c.logout)
	// Pages are compressed for a client that accepts gzip (the Fleet page of a
	// 10,000-GPU fleet is about 2 MB of HTML, reloaded every refresh). A page
	// carries no secret beside what a viewer types (the login is not compressed,
	// posts are checked by origin, not by a token in the page), so compression
	// gives no BREACH oracle.
	root.Handle("/", c.authenticated(gzhttp.GzipHandler(pages)))
	return secureHeaders(root)
}

// Run serves the console on cfg.Listen until ctx ends.
func (c *Console) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", c.cfg.Listen)
	if err != nil {
		return fmt.Errorf("console: listen %s: %w", c.cfg.Listen, err)
	}
	return c.Serve(ctx, ln)
}

// Serve serves the console on ln until ctx ends.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		case <-done:
		}
	}()
	defer close(done)
	go c.keepWarm(ctx)
	c.log.Info("console serving", "addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: serve: %w", err)
	}
	return nil
}

// secureHeaders sets the headers every answer carries: no framing, no sniffing,
// nothing loaded from another origin.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
