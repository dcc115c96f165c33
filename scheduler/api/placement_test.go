package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
)

var update = flag.Bool("update", false, "rewrite the golden tables in testdata")

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./scheduler/api -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (rerun with -update if intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func allocs(nodes ...string) []placement.NodeAlloc {
	var out []placement.NodeAlloc
	for _, n := range nodes {
		out = append(out, placement.NodeAlloc{Node: n, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}})
	}
	return out
}

// TestJobsTableGolden: `jobs ls` shows where each job runs or is reserved,
// when a queued one is expected to start, and why it waits.
func TestJobsTableGolden(t *testing.T) {
	spec := func(team string, gpus int) scheduler.JobSpec {
		return scheduler.JobSpec{Team: team, Queue: team, GPUs: gpus, Card: "H100-80GB"}
	}
	jobs := []scheduler.Job{
		{ID: "sched/nlp/1", Spec: spec("nlp", 8), State: scheduler.StateAdmitted, Attempt: 1, Card: "H100-80GB", Cluster: "c1",
			Priority: 100, Placement: allocs("h00"), QueueWaitS: 12},
		{ID: "sched/nlp/2", Spec: spec("nlp", 4), State: scheduler.StateAdmitted, Attempt: 1, Card: "H100-80GB", Cluster: "c1",
			Priority: 100, Placement: []placement.NodeAlloc{{Node: "h01", GPUs: []int{4, 5, 6, 7}}}},
		{ID: "sched/vision/1", Spec: spec("vision", 64), State: scheduler.StateQueued, Attempt: 1, Priority: 1000, QueueWaitS: 5400,
			Reserved: allocs("h00", "h01", "h02", "h03", "h04", "h05", "h06", "h07"), ExpectedStart: t0.Add(90 * time.Minute),
			WaitReason: "placement: reserved 64 GPUs on 8 nodes from 2026-12-01T10:30:00Z (when running jobs reach their time limits)"},
		{ID: "sched/nlp/3", Spec: spec("nlp", 8), State: scheduler.StateQueued, Attempt: 2, Priority: 100, QueueWaitS: 600,
			ExpectedStart: t0.Add(90 * time.Minute),
			WaitReason:    "placement: no room for 8 GPUs of H100-80GB outside the reservation for sched/vision/1, which starts at 2026-12-01T10:30:00Z, unless its time limit ended by then"},
		{ID: "sched/audio/1", Spec: spec("audio", 2), State: scheduler.StateQueued, Attempt: 1, Priority: 10,
			WaitReason: "placement: fits only once jobs with no time limit end: no start can be promised for 2 GPUs of H100-80GB"},
		{ID: "sched/audio/0", Spec: spec("audio", 1), State: scheduler.StateFinished, Attempt: 1, Card: "H100-80GB", Cluster: "c1", Status: "succeeded"},
	}
	var b bytes.Buffer
	if err := WriteJobs(&b, jobs); err != nil {
		t.Fatal(err)
	}
	golden(t, "jobs_placed.table.golden", b.Bytes())
}

// placedConfig is a scheduler over two nodes of 8 H100, one queue per team.
func placedConfig() scheduler.Config {
	cfg := scheduler.DefaultConfig()
	cfg.Policies = nil
	q := func(team string) scheduler.Queue {
		return scheduler.Queue{Name: team, Pool: "train", Team: team, Cohort: "all", Weight: 1,
			Quota: map[string]scheduler.Quota{"H100-80GB": {Nominal: 8}}}
	}
	cfg.Model = scheduler.Model{
		Cards:    []scheduler.Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []scheduler.Cluster{{Name: "c1", Nodes: []scheduler.NodeGroup{{Name: "h", Count: 2, Card: "H100-80GB", GPUs: 8}}}},
		Pools: []scheduler.Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 16}, MayLend: true, MayBorrow: true,
			Preemptible: true, MaxJobDuration: 24 * time.Hour}},
		PriorityClasses:      []scheduler.PriorityClass{{Name: "normal", Value: 100}},
		DefaultPriorityClass: "normal",
		Queues:               []scheduler.Queue{q("nlp"), q("vision")},
	}
	return cfg
}

// getJSON GETs path as token's caller and decodes the body into a generic
// value (so that the test sees the wire's field names).
func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, body)
		}
	}
	return resp.StatusCode
}

// TestPlacementInJobJSON: a job's placement, reservation and expected start
// are in the API's job JSON, for its own team; another team sees neither the
// job nor its reservation.
func TestPlacementInJobJSON(t *testing.T) {
	cfg := placedConfig()
	// EASY backfill: a job behind another team's reservation is told whose it
	// is (under the default, conservative backfill, it reserves for itself).
	cfg.Model.Placement = placement.PlanConfig{Policy: placement.Backfill}
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestHTTP(t, svc)
	submit := func(team string, gpus int, limit time.Duration) scheduler.Job {
		t.Helper()
		j, err := svc.Submit(t.Context(), scheduler.JobSpec{Team: team, Queue: team, GPUs: gpus, Card: "H100-80GB", TimeLimitS: int64(limit / time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		return j
	}
	run := submit("vision", 4, time.Hour)
	big := submit("nlp", 16, 2*time.Hour)
	behind := submit("vision", 8, 2*time.Hour) // behind nlp's reservation
	if j, _ := svc.Job(behind.ID); !strings.Contains(j.WaitReason, big.ID) {
		t.Fatalf("vision's second job's reason %q does not name the reservation's job: the masking below proves nothing", j.WaitReason)
	}

	var own struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if code := getJSON(t, srv+"/v1/jobs?state=queued", "tok-nlp", &own); code != http.StatusOK || len(own.Jobs) != 1 {
		t.Fatalf("nlp's queued jobs: %d %+v", code, own.Jobs)
	}
	j := own.Jobs[0]
	if j["id"] != big.ID || j["expected_start"] != t0.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("nlp's job %v: want %s expected at %s", j, big.ID, t0.Add(time.Hour).Format(time.RFC3339))
	}
	res, _ := j["reserved"].([]any)
	var nodes []string
	for _, r := range res {
		nodes = append(nodes, r.(map[string]any)["node"].(string))
	}
	if !slices.Equal(nodes, []string{"h0", "h1"}) || !strings.HasPrefix(j["wait_reason"].(string), "placement: reserved") {
		t.Fatalf("nlp's job reserves %q (%v), want h0 and h1", nodes, j["wait_reason"])
	}

	var vision struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if code := getJSON(t, srv+"/v1/jobs?state=admitted", "tok-vision", &vision); code != http.StatusOK || len(vision.Jobs) != 1 || vision.Jobs[0]["id"] != run.ID {
		t.Fatalf("vision's running jobs: %d %+v, want only %s", code, vision.Jobs, run.ID)
	}
	if p, _ := vision.Jobs[0]["placement"].([]any); len(p) != 1 {
		t.Fatalf("vision's running job's placement %v, want one node", vision.Jobs[0]["placement"])
	}
	if code := getJSON(t, srv+"/v1/jobs/"+big.ID, "tok-vision", nil); code != http.StatusNotFound {
		t.Fatalf("vision reads nlp's reserved job: %d, want 404", code)
	}
	// vision's waiting job says it waits behind a reservation, not whose.
	var list struct {
		Jobs []map[string]any `json:"jobs"`
	}
	var one map[string]any
	getJSON(t, srv+"/v1/jobs?state=queued", "tok-vision", &list)
	getJSON(t, srv+"/v1/jobs/"+behind.ID, "tok-vision", &one)
	if len(list.Jobs) != 1 {
		t.Fatalf("vision's queued jobs %+v, want its one", list.Jobs)
	}
	for _, why := range []string{list.Jobs[0]["wait_reason"].(string), one["wait_reason"].(string)} {
		if strings.Contains(why, big.ID) || strings.Contains(why, "nlp") || !strings.Contains(why, "another team's job") {
			t.Errorf("vision's wait reason %q: want the reservation's job masked", why)
		}
	}
	// The admin sees whose.
	var all map[string]any
	getJSON(t, srv+"/v1/jobs/"+behind.ID, "tok-admin", &all)
	if !strings.Contains(all["wait_reason"].(string), big.ID) {
		t.Errorf("admin's wait reason %q: want the reservation's job named", all["wait_reason"])
	}
}

// newTestHTTP serves the API over svc with the test tokens; it returns the URL.
// servedAtT0 builds a scheduler from cfg on a clock stopped at t0 (job IDs
// without a prefix) and serves its API behind the test tokens.
func servedAtT0(t *testing.T, cfg scheduler.Config) (*scheduler.Service, *httptest.Server) {
	t.Helper()
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return svc, srv
}

func newTestHTTP(t *testing.T, svc *scheduler.Service) string {
	t.Helper()
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return srv.URL
}
