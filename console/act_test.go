package console

import (
	"context"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// heldScheduler serves a scheduler whose dev jobs sched/nlp/1 and sched/vision/2
// were reclaimed idle by the dev-idle policy and are held, behind the test tokens.
func heldScheduler(t *testing.T) (*api.Client, *scheduler.Service) {
	t.Helper()
	cfg := scheduler.DefaultConfig()
	cfg.Policies[0].DryRun = false // dev-idle reclaims
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return now }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx := scheduler.ContextWithActor(t.Context(), "token:setup")
	var fs []schemas.Finding
	for _, team := range []string{"nlp", "vision"} {
		j, err := svc.Submit(ctx, scheduler.JobSpec{Team: team, Queue: "dev", GPUs: 1, Workload: schemas.WorkloadDev})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, schemas.Finding{ID: "idle-" + j.ID, Episode: 1, Kind: schemas.KindIdle, Job: j.ID, Team: team, Pool: "dev", Since: now})
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddFindings(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{30 * time.Minute, 15 * time.Minute, time.Minute} {
		now = now.Add(d)
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"sched/nlp/1", "sched/vision/2"} {
		if j, _ := svc.Job(id); !j.Held {
			t.Fatalf("%s after its reclaim: %s, not held", id, j.State)
		}
	}
	srv := httptest.NewServer(api.NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(srv.URL, srv.Client(), api.WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	return c, svc
}

// actCase is a job action posted from the console as token, and what it must
// answer: the status, with why in the body.
type actCase struct {
	name, token, job string
	header           []string
	status           int
	why              string
}

// postAction posts c's job to action a on a console acting through the
// scheduler sc, checks the answer and the redirect, and reports whether it
// acted.
func postAction(t *testing.T, s store.Store, sc *api.Client, a jobAction, c actCase) bool {
	t.Helper()
	cons, err := New(DefaultConfig(), s, newGuard(t), WithScheduler(sc),
		WithActor(func(tok string) JobActor { return sc.As(tok) }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cons.Handler())
	t.Cleanup(srv.Close)
	status, body, h := post(t, srv, "/act/"+a.name, c.token, url.Values{"job": {c.job}}, c.header...)
	if status != c.status || !strings.Contains(body, c.why) {
		t.Fatalf("%d %q, want %d saying %q", status, body, c.status, c.why)
	}
	ok := status == http.StatusSeeOther
	if ok && h.Get("Location") != "/jobs/"+c.job+"?done="+a.done {
		t.Errorf("redirect to %q", h.Get("Location"))
	}
	return ok
}

// TestResumeFromConsole: the Resume button acts through the scheduler's API with
// the viewer's own token, so the scheduler's rules decide and its audit trail
// names the viewer; whoever may not gets 403 (another team: 404, the
// scheduler's answer for a job it does not know) and the job stays held.
func TestResumeFromConsole(t *testing.T) {
	s := simStore(t)
	for _, c := range []actCase{
		{"own team", "tok-nlp", "sched/nlp/1", nil, http.StatusSeeOther, ""},
		{"admin", "tok-admin", "sched/vision/2", nil, http.StatusSeeOther, ""},
		{"another team", "tok-vision", "sched/nlp/1", nil, http.StatusNotFound, "unknown job"},
		{"finance reads only", "tok-finance", "sched/nlp/1", nil, http.StatusForbidden, "may not act on jobs"},
		{"agent", "tok-agent", "sched/nlp/1", nil, http.StatusForbidden, "may not open the console"},
		{"no token", "", "sched/nlp/1", nil, http.StatusUnauthorized, ""},
		{"another site", "tok-nlp", "sched/nlp/1", []string{"Origin", "https://evil.example"}, http.StatusForbidden, "cross-site"},
		{"cross-site fetch", "tok-nlp", "sched/nlp/1", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "cross-site"},
		{"no job named", "tok-nlp", "", nil, http.StatusBadRequest, "is missing: which job"},
		{"unknown job", "tok-admin", "sched/nlp/99", nil, http.StatusNotFound, "sched/nlp/99"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, svc := heldScheduler(t)
			ok := postAction(t, s, sc, actResume, c)
			for _, id := range []string{"sched/nlp/1", "sched/vision/2"} {
				j, _ := svc.Job(id)
				if want := !(ok && id == c.job); j.Held != want {
					t.Errorf("%s held %v after a %d, want %v", id, j.Held, c.status, want)
				}
			}
			rows, _ := svc.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecResume})
			if (len(rows) == 1) != ok || ok && rows[0].Actor != "token:"+strings.TrimPrefix(c.token, "tok-") {
				t.Errorf("resume rows %+v", rows)
			}
		})
	}
	t.Run("no scheduler API", func(t *testing.T) {
		srv := testConsole(t, s, nil)
		if status, body, _ := post(t, srv, "/act/resume", "tok-admin", url.Values{"job": {"sched/nlp/1"}}); status != http.StatusServiceUnavailable || !strings.Contains(body, "--scheduler-url") {
			t.Errorf("%d %q, want 503 naming --scheduler-url", status, body)
		}
	})
}

// heldActor says every job is held by the scheduler (the job page's part only).
type heldActor struct{}

func (heldActor) Job(_ context.Context, id string) (scheduler.Job, error) {
	return scheduler.Job{ID: id, State: scheduler.StateQueued, Held: true}, nil
}

func (heldActor) Resume(_ context.Context, id string) (scheduler.Job, error) {
	return scheduler.Job{ID: id, State: scheduler.StateQueued}, nil
}

func (heldActor) Cancel(_ context.Context, id string) (scheduler.Job, error) {
	return scheduler.Job{ID: id, State: scheduler.StateFinished}, nil
}

// TestWithdrawFromConsole: the Withdraw button cancels a job still waiting for
// admission through the scheduler's API with the viewer's own token; whoever may
// not gets 403 (another team: 404, as for no job), and a job the scheduler has
// admitted is refused (409), since cancelling it there would not stop its
// processes.
func TestWithdrawFromConsole(t *testing.T) {
	s := simStore(t)
	for _, c := range []actCase{
		{"own team", "tok-nlp", "sched/nlp/1", nil, http.StatusSeeOther, ""},
		{"admin", "tok-admin", "sched/vision/2", nil, http.StatusSeeOther, ""},
		{"another team", "tok-vision", "sched/nlp/1", nil, http.StatusNotFound, "unknown job"},
		{"finance reads only", "tok-finance", "sched/nlp/1", nil, http.StatusForbidden, "may not act on jobs"},
		{"no token", "", "sched/nlp/1", nil, http.StatusUnauthorized, ""},
		{"another site", "tok-nlp", "sched/nlp/1", []string{"Origin", "https://evil.example"}, http.StatusForbidden, "cross-site"},
		{"no job named", "tok-nlp", "", nil, http.StatusBadRequest, "which job to withdraw"},
		{"unknown job", "tok-admin", "sched/nlp/99", nil, http.StatusNotFound, "sched/nlp/99"},
		{"admitted", "tok-admin", "sched/speech/3", nil, http.StatusConflict, "not queued"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, svc := heldScheduler(t)
			ctx := scheduler.ContextWithActor(t.Context(), "token:setup")
			run, err := svc.Submit(ctx, scheduler.JobSpec{Team: "speech", Queue: "dev", GPUs: 1, Workload: schemas.WorkloadDev})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Pass(t.Context()); err != nil {
				t.Fatal(err)
			}
			if j, _ := svc.Job(run.ID); run.ID != "sched/speech/3" || j.State != scheduler.StateAdmitted {
				t.Fatalf("%s: %s, want sched/speech/3 admitted", run.ID, j.State)
			}
			ok := postAction(t, s, sc, actWithdraw, c)
			for _, id := range []string{"sched/nlp/1", "sched/vision/2", "sched/speech/3"} {
				j, _ := svc.Job(id)
				if gone := j.State == scheduler.StateFinished; gone != (ok && id == c.job) {
					t.Errorf("%s %s after a %d", id, j.State, c.status)
				}
			}
			rows, _ := svc.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecFinish})
			if (len(rows) == 1) != ok || ok && rows[0].Actor != "token:"+strings.TrimPrefix(c.token, "tok-") {
				t.Errorf("finish rows %+v", rows)
			}
		})
	}
}

// TestJobPageOffersResume: a held job's page shows the scheduler's state and a
// Resume button to those who may act, and why not to finance.
func TestJobPageOffersResume(t *testing.T) {
	s := simStore(t)
	job := firstJob(t, s, "team = 'vision'")
	cons, err := New(DefaultConfig(), s, newGuard(t), WithActor(func(string) JobActor { return heldActor{} }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cons.Handler())
	t.Cleanup(srv.Close)
	path := "/jobs/" + escapePath(job)
	for _, c := range []struct {
		token  string
		button bool
		text   string
	}{
		{"tok-admin", true, "held"},
		{"tok-vision", true, "held"},
		{"tok-finance", false, "may not act on jobs"},
	} {
		status, body, _ := get(t, srv, path, c.token)
		if status != http.StatusOK || !strings.Contains(body, `id="job-control"`) || !strings.Contains(body, c.text) {
			t.Fatalf("%s: %d, want the scheduler section saying %q", c.token, status, c.text)
		}
		if got := strings.Contains(body, `id="resume"`); got != c.button {
			t.Errorf("%s: Resume button %v, want %v", c.token, got, c.button)
		}
		if got := strings.Contains(body, `id="withdraw"`); got != c.button {
			t.Errorf("%s: Withdraw button %v, want %v", c.token, got, c.button)
		}
	}
	if _, body, _ := get(t, srv, path+"?done=resumed", "tok-vision"); !strings.Contains(body, `id="resumed"`) {
		t.Error("the page after a resume does not say so")
	}
	if _, body, _ := get(t, srv, path+"?done=withdrawn", "tok-vision"); !strings.Contains(body, `id="withdrawn"`) {
		t.Error("the page after a withdrawal does not say so")
	}
	// Without an actor the console is read-only: no scheduler section.
	if _, body, _ := get(t, testConsole(t, s, nil), path, "tok-admin"); strings.Contains(body, `id="job-control"`) {
		t.Error("a console without a scheduler API offers to act")
	}
}

// reasonActor is a scheduler that has every job queued with a placement
// reason, or (err) none the viewer may see.
type reasonActor struct {
	heldActor
	err error
}

const testPlacementReason = "reserved in eu-west-b from 2026-12-01 13:00 UTC: fits there soonest of us-east-a, eu-west-b; eu-west-c refuses team vision (open to nlp)"

func (a reasonActor) Job(_ context.Context, id string) (scheduler.Job, error) {
	if a.err != nil {
		return scheduler.Job{}, a.err
	}
	return scheduler.Job{ID: id, State: scheduler.StateQueued, PlacementReason: testPlacementReason}, nil
}

// TestJobPageShowsPlacement: the job page's scheduler section says where the
// job went and why, as the scheduler tells the viewer; another team's viewer
// gets no page, and a job the scheduler does not show the viewer no line.
func TestJobPageShowsPlacement(t *testing.T) {
	s := simStore(t)
	job := firstJob(t, s, "team = 'vision'")
	cons, err := New(DefaultConfig(), s, newGuard(t), WithActor(func(tok string) JobActor {
		if tok == "tok-admin" {
			return reasonActor{err: scheduler.ErrUnknownJob}
		}
		return reasonActor{}
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cons.Handler())
	t.Cleanup(srv.Close)
	path := "/jobs/" + escapePath(job)
	want := `<p id="job-placement">Placement: ` + template.HTMLEscapeString(testPlacementReason) + `.</p>`
	if status, body, _ := get(t, srv, path, "tok-vision"); status != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("vision: %d, want the line %s", status, want)
	}
	if status, body, _ := get(t, srv, path, "tok-nlp"); status != http.StatusNotFound || strings.Contains(body, "eu-west-b") {
		t.Errorf("nlp reads vision's job: %d, want 404 and no placement", status)
	}
	if status, body, _ := get(t, srv, path, "tok-admin"); status != http.StatusOK || strings.Contains(body, `id="job-placement"`) {
		t.Errorf("a job the scheduler does not show: %d, want no placement line", status)
	}
	if status, body, _ := get(t, srv, path, ""); status != http.StatusUnauthorized || strings.Contains(body, "eu-west-b") {
		t.Errorf("no token: %d, want 401 and no placement", status)
	}
}
