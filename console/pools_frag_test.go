package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/schemas"
)

// fragmentedScheduler serves a scheduler over two nodes of 4 H100 that
// vision's four checkpointable 2-GPU jobs filled, one of which then ended on
// each node, with nlp's 4-per-node gang waiting: 4 GPUs stranded, 2 on each
// node, and one open fragmentation finding whose plan moves one of vision's
// jobs. The console reads it with token's credential. It returns the client,
// the gang and the plan's moved job.
func fragmentedScheduler(t *testing.T, token string) (Scheduler, scheduler.Job, string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Minute)
	cfg := twoNodeConfig(4, 4)
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pass := func() {
		t.Helper()
		if err := svc.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []scheduler.Job
	for range 4 {
		j, err := svc.Submit(ctx, scheduler.JobSpec{Name: "sweep", Team: "vision", Queue: "vision", GPUs: 2, Card: "H100-80GB", Checkpointable: true, TimeLimitS: 8 * 3600})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	pass()
	ended := map[string]bool{}
	for _, j := range jobs {
		if j, err = svc.Job(j.ID); err != nil || len(j.Placement) == 0 {
			t.Fatalf("vision's job %s is not placed: %+v, %v", j.ID, j, err)
		}
		if n := j.Placement[0].Node; !ended[n] {
			ended[n] = true
			if _, err := svc.Finish(ctx, j.ID, schemas.StatusSucceeded); err != nil {
				t.Fatal(err)
			}
		}
	}
	gang, err := svc.Submit(ctx, scheduler.JobSpec{Name: "pretrain", Team: "nlp", Queue: "nlp", GPUs: 4, GPUsPerNode: 4, Card: "H100-80GB", TimeLimitS: 3600})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute) // findings are brought up to date once a minute
	pass()
	now = now.Add(30 * time.Minute)
	pass()
	fs := svc.FragmentationFindings()
	if len(fs) != 1 || len(fs[0].Plans) != 1 || fs[0].Plans[0].For != gang.ID || len(fs[0].Plans[0].Moves) != 1 {
		t.Fatalf("findings %+v: want one, whose plan moves one of vision's jobs for nlp's gang", fs)
	}
	srv := httptest.NewServer(api.NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(srv.URL, http.DefaultClient, api.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	return c, gang, fs[0].Plans[0].Moves[0].Job
}

// findingsPanel is the HTML of the open fragmentation findings' table.
func findingsPanel(body string) string {
	return regexp.MustCompile(`(?s)<table class="grid" id="frag-findings">.*?</table>`).FindString(body)
}

// TestPoolsShowFragmentationFindings: under the fragmentation table, an admin
// viewer sees the open finding (cluster, card, since and how long open,
// stranded GPUs and GPU-hours) and its plan in words: which job moves from
// which node so that which gang starts where. A team viewer sees the figures
// and how many plans, and no job of another team anywhere on the page, though
// the console's own credential (an admin's) reads the plans.
func TestPoolsShowFragmentationFindings(t *testing.T) {
	sched, gang, moved := fragmentedScheduler(t, "tok-admin")
	srv := testConsole(t, simStore(t), sched)

	code, body, _ := get(t, srv, "/pools", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("pools as admin: %d\n%.600s", code, body)
	}
	panel := findingsPanel(body)
	// 4 GPUs stranded for the 30 minutes between the passes: 2.0 GPU-hours.
	for _, want := range []string{`data-cluster="c1"`, ">H100-80GB<", "(open 30m0s)", `<td class="n">4</td><td class="n">2.0</td><td class="n">1</td>`,
		`<div class="plan">requeue ` + moved + ` (2 GPUs) from h`, "so that " + gang.ID + " (4 GPUs) starts on h"} {
		if !strings.Contains(panel, want) {
			t.Errorf("admin: findings panel lacks %q:\n%s", want, panel)
		}
	}

	for _, tok := range []string{"tok-nlp", "tok-vision"} {
		code, body, _ = get(t, srv, "/pools", tok)
		if code != http.StatusOK {
			t.Fatalf("pools as %s: %d\n%.600s", tok, code, body)
		}
		panel = findingsPanel(body)
		if !strings.Contains(panel, `<td class="n">4</td><td class="n">2.0</td><td class="n">1</td>`) || !strings.Contains(panel, `1 plan <span class="muted">(shown to operators)</span>`) {
			t.Errorf("%s: findings panel lacks the figures or the plans' count:\n%s", tok, panel)
		}
		if strings.Contains(panel, "requeue") || strings.Contains(panel, `class="plan"`) {
			t.Errorf("%s sees a plan:\n%s", tok, panel)
		}
	}
	// nlp's own gang may show elsewhere (its waiting jobs); vision's moved job
	// may not show anywhere on nlp's page, nor nlp's gang on vision's.
	for tok, leak := range map[string]string{"tok-nlp": moved, "tok-vision": gang.ID} {
		if _, body, _ = get(t, srv, "/pools", tok); strings.Contains(body, leak) {
			t.Errorf("%s's pools page names another team's job %s", tok, leak)
		}
	}
}

// TestPoolsFragmentationFindingsTeamCredential: a console whose own
// credential is a team's gets no plans from the scheduler; even an admin
// viewer then sees the scheduler's count of them, and no job.
func TestPoolsFragmentationFindingsTeamCredential(t *testing.T) {
	sched, _, moved := fragmentedScheduler(t, "tok-nlp")
	srv := testConsole(t, simStore(t), sched)
	_, body, _ := get(t, srv, "/pools", "tok-admin")
	panel := findingsPanel(body)
	if !strings.Contains(panel, "1 plans of moves") || strings.Contains(panel, moved) || strings.Contains(panel, `class="plan"`) {
		t.Errorf("admin through a team's credential: findings panel\n%s", panel)
	}
}

// TestPoolsNoFragmentationFindings: a fleet with no open finding shows no
// findings panel (the fragmentation table still shows).
func TestPoolsNoFragmentationFindings(t *testing.T) {
	sched, _ := placedScheduler(t)
	srv := testConsole(t, simStore(t), sched)
	_, body, _ := get(t, srv, "/pools", "tok-admin")
	if findingsPanel(body) != "" || section(body, "fragmentation") == "" {
		t.Errorf("findings panel without a finding, or no fragmentation table:\n%s\n%s", findingsPanel(body), section(body, "fragmentation"))
	}
}
