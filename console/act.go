package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// JobActor is what the console acts on jobs through: the scheduler's API, called
// with the viewer's own credential (*api.Client.As), so that the scheduler
// authorises and audits the person who clicked, not the console.
type JobActor interface {
	Job(ctx context.Context, id string) (scheduler.Job, error)
	Resume(ctx context.Context, id string) (scheduler.Job, error)
	Cancel(ctx context.Context, id string) (scheduler.Job, error)
}

// WithActor lets viewers act on jobs (resume a held job, withdraw a queued one)
// through the JobActor actorFor returns for their token (default: none; the
// console is read-only).
func WithActor(actorFor func(token string) JobActor) Option {
	return func(c *Console) { c.actorFor = actorFor }
}

// actors may act on jobs at all; the scheduler then decides which jobs (a team
// role only its own team's). Finance reads only.
var actors = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator, auth.RoleAnyTeam)

// jobControl is what the job page offers to do with a job the scheduler holds.
type jobControl struct {
	ID     string
	State  string
	Held   bool
	Queued bool   // waiting for admission: it can be withdrawn
	CanAct bool   // the viewer's roles allow acting
	Why    string // why not, when they do not
	Done   string // the action the page follows: resumed, withdrawn
	// Where is the scheduler's placement reason: the cluster the job went to
	// (or is reserved in) and why, and which of its clusters refuse it.
	Where string
}

// A job action of the console: the form's path, what it calls on the
// scheduler's API as the viewer, and the word the page says after it.
type jobAction struct {
	name, done string
	call       func(JobActor, context.Context, string) (scheduler.Job, error)
	// queuedOnly refuses (409) a job the scheduler no longer has queued.
	queuedOnly bool
}

var (
	// actResume lets a held job (a policy reclaimed it) be admitted again.
	actResume = jobAction{name: "resume", done: "resumed", call: JobActor.Resume}
	// actWithdraw cancels a job still waiting for admission (DELETE
	// /v1/jobs/{id}). A running job is not offered: the scheduler would only
	// record it cancelled, while its processes run on until its launcher
	// stops them.
	actWithdraw = jobAction{name: "withdraw", done: "withdrawn", call: JobActor.Cancel, queuedOnly: true}
)

// control reads the scheduler's view of job key for the job page, as the viewer.
func (c *Console) control(ctx context.Context, r *http.Request, v viewer, key string) *jobControl {
	if c.actorFor == nil {
		return nil
	}
	tok, err := auth.BearerToken(r)
	if err != nil {
		return nil // signed in with a certificate: nothing to pass on
	}
	j, err := c.actorFor(tok).Job(ctx, key)
	if err != nil {
		if !errors.Is(err, scheduler.ErrUnknownJob) {
			c.log.Info("console: scheduler job", "job", key, "err", err)
		}
		return nil // not the scheduler's job (run elsewhere), or not visible
	}
	jc := &jobControl{ID: j.ID, State: string(j.State), Held: j.Held, Queued: j.State == scheduler.StateQueued, CanAct: actors(v.id), Where: j.PlacementReason}
	if d := r.URL.Query().Get("done"); d == actResume.done || d == actWithdraw.done {
		jc.Done = d
	}
	if !jc.CanAct {
		jc.Why = v.Name() + " may not act on jobs (roles: admin, operator or the job's team)"
	}
	return jc
}

// act handles a job page's action button: POST /act/<name> with the job. The
// cookie is SameSite=Strict; a request that names another origin is refused as
// well, so no other site can make a signed-in browser act.
func (c *Console) act(a jobAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { c.actOn(w, r, a) }
}

func (c *Console) actOn(w http.ResponseWriter, r *http.Request, a jobAction) {
	id, _ := auth.FromContext(r.Context())
	v := viewerOf(id)
	fail := func(status int, msg string) {
		c.log.Info("console action refused", "action", a.name, "identity", id.String(), "status", status, "why", msg)
		c.renderPage(w, r, status, pageDef{name: "error", title: http.StatusText(status)}, v, errorData{Status: status, Message: msg})
	}
	if !sameOrigin(r) {
		fail(http.StatusForbidden, fmt.Sprintf("cross-site request refused (Origin %q, Sec-Fetch-Site %q)", r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
		return
	}
	if !actors(id) {
		fail(http.StatusForbidden, v.Name()+" may not act on jobs (roles: admin, operator or the job's team)")
		return
	}
	if c.actorFor == nil {
		fail(http.StatusServiceUnavailable, "this console has no scheduler API to act through (start it with --scheduler-url)")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "form: "+err.Error())
		return
	}
	job := strings.TrimSpace(r.PostForm.Get("job"))
	if job == "" {
		fail(http.StatusBadRequest, `form field "job" is missing: which job to `+a.name)
		return
	}
	tok, err := auth.BearerToken(r)
	if err != nil {
		fail(http.StatusForbidden, "acting on a job needs a token sign-in (a client certificate cannot be passed on to the scheduler)")
		return
	}
	actor := c.actorFor(tok)
	if a.queuedOnly {
		// Read as the viewer: a job they may not see is refused as the call would be.
		j, jerr := actor.Job(r.Context(), job)
		if err = jerr; err == nil && j.State != scheduler.StateQueued {
			err = fmt.Errorf("%w: the scheduler has it %s, not queued (only a waiting job can be withdrawn; "+
				"a running one is stopped by its launcher)", scheduler.ErrJobState, j.State)
		}
	}
	if err == nil {
		_, err = a.call(actor, r.Context(), job)
	}
	if err != nil {
		status := http.StatusBadGateway
		switch {
		case errors.Is(err, auth.ErrForbidden):
			status = http.StatusForbidden
		case errors.Is(err, auth.ErrUnauthenticated):
			status = http.StatusUnauthorized
		case errors.Is(err, scheduler.ErrUnknownJob):
			status = http.StatusNotFound
		case errors.Is(err, scheduler.ErrJobState), errors.Is(err, scheduler.ErrNotAllowed):
			status = http.StatusConflict
		}
		fail(status, fmt.Sprintf("%s %s: %v", a.name, job, err))
		return
	}
	c.log.Info("console action", "action", a.name, "job", job, "identity", id.String())
	http.Redirect(w, r, "/jobs/"+escapePath(job)+"?done="+a.done, http.StatusSeeOther)
}
