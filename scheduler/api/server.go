package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// Backend is what the API serves: *scheduler.Service.
type Backend interface {
	Submit(ctx context.Context, spec scheduler.JobSpec) (scheduler.Job, error)
	Finish(ctx context.Context, id, status string) (scheduler.Job, error)
	Resume(ctx context.Context, id string) (scheduler.Job, error)
	Job(id string) (scheduler.Job, error)
	Jobs(f scheduler.JobFilter) []scheduler.Job
	Queues() []scheduler.QueueStatus
	Actions(ctx context.Context, f scheduler.ActionFilter) ([]scheduler.Action, error)
	AddFindings(ctx context.Context, fs []schemas.Finding) error
	Model() scheduler.Model
	Fragmentation() []placement.Fragmentation
	FragmentationFindings() []scheduler.FragmentationFinding
}

var _ Backend = (*scheduler.Service)(nil)

// onceSubmitter is a backend that takes idempotency keys (Idempotency-Key).
type onceSubmitter interface {
	SubmitOnce(ctx context.Context, spec scheduler.JobSpec, key string) (scheduler.Job, bool, error)
}

var _ onceSubmitter = (*scheduler.Service)(nil)

// Option changes how the handler is built.
type Option func(*handler)

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(h *handler) { h.log = log } }

// NewHandler returns the API's routes over b, every one but /healthz behind g:
// authenticated, and allowed to the caller's roles (authz.go).
func NewHandler(b Backend, g *auth.Guard, opts ...Option) http.Handler {
	h := &handler{b: b, g: g, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(h)
	}
	h.log = h.log.With("component", "scheduler-api")
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		mux.Handle(rt.pattern, g.Allow(rt.rule, rt.serve))
	}
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	root.Handle("/", g.Handler(mux))
	return root
}

type handler struct {
	b   Backend
	g   *auth.Guard
	log *slog.Logger
}

// QueuesResponse is GET /v1/queues.
type QueuesResponse struct {
	Queues []scheduler.QueueStatus `json:"queues"`
}

// FragmentationResponse is GET /v1/fragmentation: per cluster and card type,
// free and stranded whole GPUs (empty when the scheduler does not place jobs
// on nodes).
type FragmentationResponse struct {
	Placed        bool                      `json:"placed"`
	Fragmentation []placement.Fragmentation `json:"fragmentation"`
	// Findings are the open fragmentation findings. Their plans name other
	// teams' jobs, so only callers who read every job (admin, operator,
	// finance) get them; a team's caller gets the figures and how many plans.
	Findings []scheduler.FragmentationFinding `json:"findings"`
}

// JobsResponse is GET /v1/jobs.
type JobsResponse struct {
	Jobs []scheduler.Job `json:"jobs"`
}

// ActionsResponse is GET /v1/actions.
type ActionsResponse struct {
	Actions []scheduler.Action `json:"actions"`
}

// FindingsRequest is POST /v1/findings.
type FindingsRequest struct {
	Findings []schemas.Finding `json:"findings"`
}

// FinishRequest is POST /v1/jobs/{id}.
type FinishRequest struct {
	Status string `json:"status"`
}

// ErrorResponse is the body of every error.
type ErrorResponse struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func (h *handler) queues(w http.ResponseWriter, _ *http.Request) {
	h.reply(w, http.StatusOK, QueuesResponse{Queues: h.b.Queues()})
}

func (h *handler) fragmentation(w http.ResponseWriter, r *http.Request) {
	f := h.b.Fragmentation()
	fs := nonNil(h.b.FragmentationFindings())
	if !readAll(caller(r)) {
		for i := range fs {
			if n := len(fs[i].Plans); n > 0 {
				fs[i].Plans, fs[i].NoPlan = []scheduler.DefragPlan{}, fmt.Sprintf("%d plans of moves; they name other teams' jobs, so only admin, operator and finance callers see them", n)
			}
		}
	}
	h.reply(w, http.StatusOK, FragmentationResponse{Placed: f != nil, Fragmentation: nonNil(f), Findings: fs})
}

// nonNil is f, or an empty list for nil (JSON [] rather than null).
func nonNil[T any](f []T) []T {
	if f == nil {
		return []T{}
	}
	return f
}

func (h *handler) model(w http.ResponseWriter, _ *http.Request) {
	h.reply(w, http.StatusOK, h.b.Model())
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	var spec scheduler.JobSpec
	if !h.decode(w, r, &spec) {
		return
	}
	if id := caller(r); !writeAll(id) && !id.InTeam(spec.Team) {
		h.g.Forbid(w, r, fmt.Sprintf("%s may not submit jobs for team %s, only for its own", auth.Describe(id), schemas.Clip(spec.Team)))
		return
	}
	if !h.mayUsePriority(w, r, spec) {
		return
	}
	key := r.Header[IdempotencyKeyHeader]
	var j scheduler.Job
	var replayed bool
	var err error
	switch so, ok := h.b.(onceSubmitter); {
	case len(key) > 1:
		err = fmt.Errorf("%w: %d %s headers, send one", errBadRequest, len(key), IdempotencyKeyHeader)
	case len(key) == 1 && ok:
		j, replayed, err = so.SubmitOnce(actorContext(r), spec, key[0])
	case len(key) == 1:
		err = fmt.Errorf("%w: this scheduler does not take %s", errBadRequest, IdempotencyKeyHeader)
	default:
		j, err = h.b.Submit(actorContext(r), spec)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	if replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	h.reply(w, http.StatusCreated, j)
}

func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := scheduler.JobFilter{Queue: q.Get("queue"), Team: q.Get("team"), State: scheduler.JobState(q.Get("state"))}
	switch f.State {
	case "", scheduler.StateQueued, scheduler.StateAdmitted, scheduler.StateReclaiming, scheduler.StateFinished:
	default:
		h.fail(w, fmt.Errorf("%w: state %s is not queued, admitted, reclaiming or finished", errBadRequest, schemas.Clip(string(f.State))))
		return
	}
	var err error
	if f.Limit, err = intParam(q.Get("limit")); err != nil {
		h.fail(w, err)
		return
	}
	id := caller(r)
	if readAll(id) {
		h.reply(w, http.StatusOK, JobsResponse{Jobs: h.b.Jobs(f)})
		return
	}
	if f.Team != "" && !id.InTeam(f.Team) {
		h.g.Forbid(w, r, fmt.Sprintf("%s may list only its own team's jobs, not team %q's", auth.Describe(id), f.Team))
		return
	}
	h.reply(w, http.StatusOK, JobsResponse{Jobs: scrubReasons(h.b, teamJobs(h.b, f, id.Teams()), id.Teams())})
}

func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	j, ok := h.ownJob(w, r, readAll)
	if ok {
		if id := caller(r); !readAll(id) {
			j = scrubReasons(h.b, []scheduler.Job{j}, id.Teams())[0]
		}
		h.reply(w, http.StatusOK, j)
	}
}

func (h *handler) finish(w http.ResponseWriter, r *http.Request) {
	var req FinishRequest
	if !h.decode(w, r, &req) {
		return
	}
	h.end(w, r, req.Status)
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	h.end(w, r, schemas.StatusCancelled)
}

// resume lets the held job of the path be admitted again, if it is the caller's.
func (h *handler) resume(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.ownJob(w, r, writeAll); !ok {
		return
	}
	j, err := h.b.Resume(actorContext(r), r.PathValue("id"))
	if err != nil {
		h.fail(w, err)
		return
	}
	h.reply(w, http.StatusOK, j)
}

// end finishes the job of the path, if it is the caller's to finish.
func (h *handler) end(w http.ResponseWriter, r *http.Request, status string) {
	if _, ok := h.ownJob(w, r, writeAll); !ok {
		return
	}
	j, err := h.b.Finish(actorContext(r), r.PathValue("id"), status)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.reply(w, http.StatusOK, j)
}

// ownJob is the job of the path when the caller may act on it: every job when
// all allows the caller, else its own team's; false means it replied. A caller
// who may not even read another team's job (a team) gets the answer of a job
// that does not exist, byte for byte, so that it cannot tell whether a job ID is
// taken; one who may read it but not change it (finance) gets 403.
func (h *handler) ownJob(w http.ResponseWriter, r *http.Request, all auth.Rule) (scheduler.Job, bool) {
	key := r.PathValue("id")
	j, err := h.b.Job(key)
	if errors.Is(err, scheduler.ErrUnknownJob) {
		h.unknownJob(w, key)
		return scheduler.Job{}, false
	}
	if err != nil {
		h.fail(w, err)
		return scheduler.Job{}, false
	}
	id := caller(r)
	switch {
	case all(id) || id.InTeam(j.Spec.Team):
		return j, true
	case !readAll(id):
		h.log.Info("another team's job hidden", "identity", id.String(), "method", r.Method, "path", r.URL.Path, "team", j.Spec.Team)
		h.unknownJob(w, key)
	default:
		h.g.Forbid(w, r, fmt.Sprintf("%s may not %s job %s of team %q, only its own team's", auth.Describe(id), r.Method, j.ID, j.Spec.Team))
	}
	return scheduler.Job{}, false
}

// unknownJob answers 404 unknown_job for key: the one answer for a job that does
// not exist and for one the caller may not know of.
func (h *handler) unknownJob(w http.ResponseWriter, key string) {
	h.fail(w, fmt.Errorf("%w %s", scheduler.ErrUnknownJob, schemas.Clip(key)))
}

func (h *handler) actions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := scheduler.ActionFilter{Job: q.Get("job"), Decision: q.Get("decision"), Pool: q.Get("pool"), Team: q.Get("team")}
	var err error
	if f.Since, err = timeParam("since", q.Get("since")); err == nil {
		if f.Until, err = timeParam("until", q.Get("until")); err == nil {
			f.Limit, err = intParam(q.Get("limit"))
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	id := caller(r)
	if !readAll(id) && f.Team != "" && !id.InTeam(f.Team) {
		h.g.Forbid(w, r, fmt.Sprintf("%s may read only its own team's actions, not team %q's", auth.Describe(id), f.Team))
		return
	}
	var rows []scheduler.Action
	if readAll(id) {
		rows, err = h.b.Actions(r.Context(), f)
	} else {
		rows, err = teamActions(r.Context(), h.b, f, id.Teams())
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	h.reply(w, http.StatusOK, ActionsResponse{Actions: rows})
}

func (h *handler) findings(w http.ResponseWriter, r *http.Request) {
	var req FindingsRequest
	if !h.decode(w, r, &req) {
		return
	}
	if err := h.b.AddFindings(actorContext(r), req.Findings); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// errBadRequest marks a request the API itself cannot read.
var errBadRequest = errors.New("bad request")

func intParam(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: limit %q is not a count", errBadRequest, s)
	}
	return n, nil
}

func timeParam(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not an RFC 3339 time", errBadRequest, name, s)
	}
	return t, nil
}

// decode reads a JSON body into v with schemas.DecodeJSON (unknown fields and
// trailing data refused); false means it already replied. The guard has
// bounded the body.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := schemas.DecodeJSON(r.Body, v); err != nil {
		h.fail(w, fmt.Errorf("%w: body: %v", errBadRequest, err))
		return false
	}
	return true
}

// codes maps the scheduler's errors to a status and a code.
var codes = []struct {
	err    error
	status int
	code   string
}{
	{scheduler.ErrUnknownQueue, http.StatusNotFound, "unknown_queue"},
	{scheduler.ErrUnknownJob, http.StatusNotFound, "unknown_job"},
	{scheduler.ErrOverQuota, http.StatusUnprocessableEntity, "over_quota"},
	{scheduler.ErrNotAllowed, http.StatusForbidden, "not_allowed"},
	{scheduler.ErrNotOwner, http.StatusForbidden, "not_owner"},
	{scheduler.ErrTooManyFindings, http.StatusTooManyRequests, "too_many_findings"},
	{scheduler.ErrJobState, http.StatusConflict, "job_state"},
	{scheduler.ErrInvalidJob, http.StatusBadRequest, "invalid"},
	{scheduler.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, "idempotency_mismatch"},
	{scheduler.ErrBadIdempotencyKey, http.StatusBadRequest, "invalid"},
	{scheduler.ErrNotDurable, http.StatusServiceUnavailable, "not_durable"},
	{errBadRequest, http.StatusBadRequest, "invalid"},
}

func (h *handler) fail(w http.ResponseWriter, err error) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			h.reply(w, c.status, ErrorResponse{Error: err.Error(), Code: c.code})
			return
		}
	}
	// The error may carry the store's query and its engine's exception: the log
	// keeps it, the caller learns only that it failed.
	h.log.Warn("request failed", "err", err)
	h.reply(w, http.StatusInternalServerError, ErrorResponse{Error: "internal error: the scheduler's log has the details", Code: "internal"})
}

func (h *handler) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug("write response", "err", err)
	}
}

// Serve serves h on addr until ctx ends, over TLS when tc is not nil. It returns
// once the listener is up (or failed), serving in the background; the bound
// address is returned, so that addr may use port 0.
func Serve(ctx context.Context, addr string, h http.Handler, tc *tls.Config, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("scheduler api: listen %s: %w", addr, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("scheduler api stopped", "err", err)
		}
	}()
	return ln.Addr().String(), nil
}
