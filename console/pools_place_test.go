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
	"github.com/gpupool/gpupool/scheduler/placement"
)

// placedScheduler serves a scheduler over two nodes of 8 H100 (queues nlp and
// vision) where nlp's 16-GPU job holds a reservation of both nodes behind
// vision's running job, and vision's 8-GPU job waits behind it. It returns an
// admin client and nlp's reserved job.
func placedScheduler(t *testing.T) (Scheduler, scheduler.Job) {
	t.Helper()
	cfg := twoNodeConfig(8, 8)
	// EASY backfill: vision's 8-GPU job waits behind nlp's reservation and
	// its reason names nlp's job, which vision must not see (under the
	// default, conservative backfill, it would reserve for itself).
	cfg.Model.Placement = placement.PlanConfig{Policy: placement.Backfill}
	svc, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var big scheduler.Job
	for _, spec := range []scheduler.JobSpec{
		{Name: "eval", Team: "vision", Queue: "vision", GPUs: 4, Card: "H100-80GB", TimeLimitS: 3600},
		{Name: "pretrain", Team: "nlp", Queue: "nlp", GPUs: 16, Card: "H100-80GB", TimeLimitS: 7200},
		{Name: "sweep", Team: "vision", Queue: "vision", GPUs: 8, Card: "H100-80GB", TimeLimitS: 7200},
	} {
		j, err := svc.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Name == "pretrain" {
			big = j
		}
		if err := svc.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if big, err = svc.Job(big.ID); err != nil || len(big.Reserved) != 2 || big.ExpectedStart.IsZero() {
		t.Fatalf("nlp's big job holds no reservation: %+v, %v", big, err)
	}
	srv := httptest.NewServer(api.NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(srv.URL, http.DefaultClient, api.WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	return c, big
}

// section is the HTML of the table with this id ("" if none).
func section(body, id string) string {
	m := regexp.MustCompile(`(?s)<table class="grid" id="` + id + `">.*?</table>`).FindString(body)
	return m
}

// TestPoolsShowReservations: the pools page shows which job holds which nodes
// from when, and each of the viewer's waiting jobs with its expected start;
// another team's reservation shows only "reserved", its nodes and time, and a
// wait reason naming another team's job does not name it.
func TestPoolsShowReservations(t *testing.T) {
	sched, big := placedScheduler(t)
	srv := testConsole(t, simStore(t), sched)
	from := big.ExpectedStart.UTC().Format("2006-01-02 15:04")

	code, body, _ := get(t, srv, "/pools", "tok-nlp")
	if code != http.StatusOK {
		t.Fatalf("pools as nlp: %d\n%.600s", code, body)
	}
	res := section(body, "reservations")
	for _, want := range []string{big.ID, ">nlp<", "h0, h1", from, ">16<"} {
		if !strings.Contains(res, want) {
			t.Errorf("nlp's reservations table lacks %q:\n%s", want, res)
		}
	}
	wait := section(body, "waiting")
	if !strings.Contains(wait, big.ID) || !strings.Contains(wait, from+` <span class="muted">(reserved)</span>`) {
		t.Errorf("nlp's waiting table lacks its job's expected start %s:\n%s", from, wait)
	}

	code, body, _ = get(t, srv, "/pools", "tok-vision")
	if code != http.StatusOK {
		t.Fatalf("pools as vision: %d\n%.600s", code, body)
	}
	res = section(body, "reservations")
	if !strings.Contains(res, "reserved") || !strings.Contains(res, "h0, h1") || !strings.Contains(res, from) {
		t.Errorf("vision's reservations table lacks the anonymous reservation:\n%s", res)
	}
	wait = section(body, "waiting")
	if !strings.Contains(wait, "vision") || !strings.Contains(wait, "another team&#39;s job") {
		t.Errorf("vision's waiting table lacks its job behind another team's reservation:\n%s", wait)
	}
	for _, leak := range []string{big.ID, "nlp", "pretrain"} {
		if strings.Contains(res, leak) || strings.Contains(wait, leak) {
			t.Errorf("vision sees %q in reservations or waiting jobs:\n%s\n%s", leak, res, wait)
		}
	}
}

// TestPoolsShowFragmentation: the pools page shows every viewer the fleet's
// free and stranded GPUs per cluster and card, with a bar; a team sees the
// same aggregate as an admin, and no job or team in it.
func TestPoolsShowFragmentation(t *testing.T) {
	sched, big := placedScheduler(t)
	srv := testConsole(t, simStore(t), sched)
	var first string
	for _, tok := range []string{"tok-admin", "tok-vision"} {
		code, body, _ := get(t, srv, "/pools", tok)
		if code != http.StatusOK {
			t.Fatalf("pools as %s: %d\n%.600s", tok, code, body)
		}
		frag := section(body, "fragmentation")
		// vision's 4-GPU job holds 4 of h0: 12 free, h1 wholly; nlp's 16 and
		// vision's 8 wait, and an 8-GPU gang may use h1 or span both.
		for _, want := range []string{`data-cluster="c1"`, ">H100-80GB<", `<td class="n">16</td><td class="n">12</td><td class="n">0</td><td class="n">1</td><td class="n">8</td><td class="n">2</td>`,
			"c1 H100-80GB: 4 of 16 GPUs held, 12 free for what waits, 0 stranded", `<svg class="fragbar"`} {
			if !strings.Contains(frag, want) {
				t.Errorf("%s: fragmentation table lacks %q:\n%s", tok, want, frag)
			}
		}
		for _, leak := range []string{big.ID, "nlp", "pretrain", "sweep"} {
			if strings.Contains(frag, leak) {
				t.Errorf("%s sees %q in the fragmentation table:\n%s", tok, leak, frag)
			}
		}
		if first == "" {
			first = frag
		} else if frag != first {
			t.Errorf("vision's fragmentation table differs from the admin's:\n%s\n%s", frag, first)
		}
	}
}

// TestFragBar: the bar's widths follow the counts, stranded last.
func TestFragBar(t *testing.T) {
	b := string(fragBar(placement.Fragmentation{Cluster: "c", Card: "H100-80GB", GPUs: 16, Free: 8, Stranded: 4}))
	for _, want := range []string{`width="80.0" height="14" fill="#999999"`, `x="80.0" y="0" width="40.0" height="14" fill="#009E73"`, `x="120.0" y="0" width="40.0" height="14" fill="url(#strand)"`,
		"8 of 16 GPUs held, 4 free for what waits, 4 stranded"} {
		if !strings.Contains(b, want) {
			t.Errorf("bar lacks %q:\n%s", want, b)
		}
	}
	if fragBar(placement.Fragmentation{}) != "" {
		t.Error("an empty domain has a bar")
	}
}

// twoNodeConfig is a scheduler over two nodes of gpus H100 each (pool train)
// with queues nlp and vision of nominal GPUs each, in one cohort, and no
// policies.
func twoNodeConfig(gpus, nominal int) scheduler.Config {
	cfg := scheduler.DefaultConfig()
	cfg.Policies = nil
	q := func(team string) scheduler.Queue {
		return scheduler.Queue{Name: team, Pool: "train", Team: team, Cohort: "all", Weight: 1,
			Quota: map[string]scheduler.Quota{"H100-80GB": {Nominal: nominal}}}
	}
	cfg.Model = scheduler.Model{
		Cards:    []scheduler.Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []scheduler.Cluster{{Name: "c1", Nodes: []scheduler.NodeGroup{{Name: "h", Count: 2, Card: "H100-80GB", GPUs: gpus}}}},
		Pools: []scheduler.Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 2 * gpus}, MayLend: true, MayBorrow: true,
			Preemptible: true, MaxJobDuration: 24 * time.Hour}},
		PriorityClasses:      []scheduler.PriorityClass{{Name: "normal", Value: 100}},
		DefaultPriorityClass: "normal",
		Queues:               []scheduler.Queue{q("nlp"), q("vision")},
	}
	return cfg
}
