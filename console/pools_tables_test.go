package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
)

// fakeScheduler answers the console's questions from fixed lists: a model
// with nodes (so the pools page shows reservations and waiting jobs), its
// queues and its jobs.
type fakeScheduler struct {
	model  scheduler.Model
	queues []scheduler.QueueStatus
	jobs   []scheduler.Job
}

func (f *fakeScheduler) Model(context.Context) (scheduler.Model, error) { return f.model, nil }

func (f *fakeScheduler) Queues(context.Context) ([]scheduler.QueueStatus, error) {
	return slices.Clone(f.queues), nil
}

func (f *fakeScheduler) Jobs(_ context.Context, fl scheduler.JobFilter) ([]scheduler.Job, error) {
	var out []scheduler.Job
	for _, j := range f.jobs {
		if (fl.Queue == "" || j.Spec.Queue == fl.Queue) && (fl.Team == "" || j.Spec.Team == fl.Team) && (fl.State == "" || j.State == fl.State) {
			out = append(out, j)
		}
	}
	return out, nil
}

// busyTeams are the fake scheduler's teams, a queue each in pool train.
var busyTeams = []string{"audio", "nlp", "vision"}

// busyScheduler is a fake scheduler with, per team, 10 jobs running on
// borrowed quota (and one on its own), and 11 waiting: every other one
// holding a reservation, every fourth with no expected start yet, some behind
// another team's job. Times, GPUs and nodes vary from job to job.
func busyScheduler() *fakeScheduler {
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := &fakeScheduler{model: scheduler.Model{
		Cards:    []scheduler.Card{{Name: "H100-80GB", MemoryGiB: 80}, {Name: "A100-80GB", MemoryGiB: 80}},
		Clusters: []scheduler.Cluster{{Name: "c1", Nodes: []scheduler.NodeGroup{{Name: "h", Count: 8, Card: "H100-80GB", GPUs: 8}}}},
		Pools:    []scheduler.Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 64}, MayLend: true, MayBorrow: true}},
	}}
	for ti, team := range busyTeams {
		f.queues = append(f.queues, scheduler.QueueStatus{Name: team, Pool: "train", Team: team, Cohort: "all", Weight: 1, Running: 11, Pending: 11,
			Cards: []scheduler.CardUsage{{Card: "H100-80GB", Nominal: 8, Used: 20, Borrowed: 12}}})
		for n := range 11 {
			k := ti*11 + n
			j := scheduler.Job{ID: fmt.Sprintf("sched/%s/%d", team, n), Pool: "train", State: scheduler.StateAdmitted,
				Spec: scheduler.JobSpec{Name: "run", Team: team, Queue: team, GPUs: 1 + k%8}, Card: []string{"H100-80GB", "A100-80GB"}[k%2],
				Borrowed: k % 4, AdmitTime: base.Add(-time.Duration(k*7) * time.Minute)}
			if n == 0 {
				j.Borrowed = 0 // on its own quota: no reclaim would stop it
			} else if j.Borrowed == 0 {
				j.Borrowed = 1
			}
			f.jobs = append(f.jobs, j)
		}
		for n := range 11 {
			k := ti*11 + n
			j := scheduler.Job{ID: fmt.Sprintf("sched/%s/%d", team, 100+n), Pool: "train", State: scheduler.StateQueued,
				Spec:       scheduler.JobSpec{Name: "wait", Team: team, Queue: team, GPUs: 1 + (k*3)%8},
				WaitReason: []string{"waits for quota", "waits for nodes", "behind sched/" + busyTeams[(ti+1)%3] + "/101"}[k%3]}
			if n%4 != 0 {
				j.ExpectedStart = base.Add(time.Duration(k*13) * time.Minute)
			}
			if n%2 == 1 {
				j.Reserved = []placement.NodeAlloc{{Node: "h" + strconv.Itoa(k%8), GPUs: make([]int, 1+k%8)}}
			}
			f.jobs = append(f.jobs, j)
		}
	}
	return f
}

// busyCounts is what busyScheduler has of each table for a viewer of teams
// (nil: every team): the jobs on borrowed quota, the reservations (every
// team's: another's without its job), the viewer's own waiting jobs and their
// own reservations.
func busyCounts(f *fakeScheduler, teams []string) (reclaim, reservations, waiting, ownReserved int) {
	for _, j := range f.jobs {
		own := teams == nil || slices.Contains(teams, j.Spec.Team)
		switch {
		case j.State == scheduler.StateAdmitted && j.Borrowed > 0:
			reclaim++
		case j.State == scheduler.StateQueued:
			if len(j.Reserved) > 0 {
				reservations++
				if own {
					ownReserved++
				}
			}
			if own {
				waiting++
			}
		}
	}
	return
}

// TestPoolsJobTablesSortAndPage: the pools page's tables of jobs (who would be
// reclaimed, the reservations, the viewer's waiting jobs) sort by each column
// both ways, page with the fake scheduler's counts and answer a bad sort value
// 400 naming its parameter.
func TestPoolsJobTablesSortAndPage(t *testing.T) {
	sched := busyScheduler()
	srv := testConsole(t, simStore(t), sched)
	admin := func(path string) (int, string) {
		code, body, _ := get(t, srv, path, "tok-admin")
		return code, body
	}
	reclaim, reservations, waiting, _ := busyCounts(sched, nil)
	for _, st := range []smallTable{
		{page: "/pools", def: reclaimTable, want: func() int { return reclaim }},
		{page: "/pools", def: reservationsTable, want: func() int { return reservations }},
		{page: "/pools", def: waitingTable, want: func() int { return waiting }},
	} {
		t.Run(st.def.name, func(t *testing.T) { checkSmallTable(t, admin, st) })
	}
}

var valueRe = regexp.MustCompile(`data-value="([^"]*)"`)

// TestEvidenceSort: a finding's evidence (a fixed, tiny set of figures) sorts
// by figure both ways by name and by value both ways by the figures' numbers,
// has no pager, and a bad sort value is 400 naming evidence_sort.
func TestEvidenceSort(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	admin := func(path string) (int, string) {
		code, body, _ := get(t, srv, path, "tok-admin")
		return code, body
	}
	fid := sqlText(t, s, `SELECT id FROM findings ORDER BY length(mapKeys(evidence)) DESC, id LIMIT 1`)
	eps, err := findings.Episodes(t.Context(), s, findings.EpisodeFilter{ID: fid})
	if err != nil || len(eps) == 0 {
		t.Fatalf("finding %s: %d episodes, %v", fid, len(eps), err)
	}
	want := len(eps[0].Evidence) // the page shows the latest seen
	if want < 2 {
		t.Fatalf("finding %s has %d figures; the test needs two or more", fid, want)
	}
	page := "/findings/" + fid
	for _, dir := range []string{"asc", "desc"} {
		sign := 1
		if dir == "desc" {
			sign = -1
		}
		path := page + "?evidence_sort=figure&evidence_dir=" + dir
		code, body := admin(path)
		cells, ok := columnOf(tableHTML(body, "evidence"), "figure")
		if code != http.StatusOK || !ok || len(cells) != want {
			t.Fatalf("%s: %d, %d figures (header %v), want %d", path, code, len(cells), ok, want)
		}
		if i := ordered(cells, sign); i >= 0 {
			t.Errorf("%s: figures out of order at row %d: %q then %q", path, i, cells[i-1], cells[i])
		}
		path = page + "?evidence_sort=value&evidence_dir=" + dir
		_, body = admin(path)
		var nums []float64
		for _, m := range valueRe.FindAllStringSubmatch(tableHTML(body, "evidence"), -1) {
			n, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatalf("%s: data-value %q: %v", path, m[1], err)
			}
			nums = append(nums, n)
		}
		if len(nums) != want || nums[0] == nums[len(nums)-1] {
			t.Fatalf("%s: values %v, want %d of them, not all alike", path, nums, want)
		}
		for i := 1; i < len(nums); i++ {
			if float64(sign)*(nums[i]-nums[i-1]) < 0 {
				t.Errorf("%s: values out of order at row %d: %v then %v", path, i, nums[i-1], nums[i])
			}
		}
	}
	bad := page + "?evidence_sort=nope"
	if code, body := admin(bad); code != http.StatusBadRequest || !strings.Contains(body, `evidence_sort &#34;nope`) || !strings.Contains(body, "figure, value") {
		t.Errorf("%s: %d, want 400 naming evidence_sort and its values\n%.300s", bad, code, body)
	}
	if _, body := admin(page + "?evidence_page=2&evidence_per=25"); strings.Contains(body, `data-table="evidence"`) || len(valueRe.FindAllString(body, -1)) != want {
		t.Errorf("%s: the evidence has a pager or is cut; it is a fixed set, never paged", page)
	}
}

// TestPoolsJobTablesAccess: the new tables' parameters without a token (or
// with an unknown one) are 401, for a role that reads nothing 403, a bad value
// 400 for every reader; as team:vision the waiting jobs are its own only, and
// the reclaim candidates and reservations every team's (counted as the fake
// scheduler has them) with another team's job named nowhere on the page.
func TestPoolsJobTablesAccess(t *testing.T) {
	sched := busyScheduler()
	s := simStore(t)
	srv := testConsole(t, s, sched)
	fid := sqlText(t, s, `SELECT id FROM findings WHERE team = 'vision' ORDER BY id LIMIT 1`)
	for _, c := range []struct {
		page string
		def  *tableDef
	}{{"/pools", reclaimTable}, {"/pools", reservationsTable}, {"/pools", waitingTable}, {"/findings/" + fid, evidenceTable}} {
		d := c.def
		q := sortedPagedQuery(c.page, d)
		checkDeniedReaders(t, srv, q)
		for _, tok := range []string{"tok-admin", "tok-vision", "tok-finance"} {
			if d.fixed && tok == "tok-finance" {
				continue // finance reads no finding
			}
			bad := join(c.page, d.param("dir")+"=up")
			if code, body, _ := get(t, srv, bad, tok); code != http.StatusBadRequest || !strings.Contains(body, d.param("dir")+` &#34;up`) {
				t.Errorf("%s as %s: %d, want 400 naming %s\n%.300s", bad, tok, code, d.param("dir"), body)
			}
		}
	}
	if code, _, _ := get(t, srv, "/findings/"+fid+"?evidence_sort=value", "tok-nlp"); code != http.StatusNotFound {
		t.Errorf("vision's finding %s sorted, as nlp: %d, want 404", fid, code)
	}
	checkVisionPools(t, srv, sched)
}

// checkVisionPools reads the pools page as team:vision, its job tables sorted
// by job both ways: the pagers count the fake scheduler's rows for vision, the
// waiting jobs and the named reservations are vision's, and no other team's
// job ID is on the page.
func checkVisionPools(t *testing.T, srv *httptest.Server, sched *fakeScheduler) {
	t.Helper()
	reclaim, reservations, waiting, ownReserved := busyCounts(sched, []string{"vision"})
	teamOf := regexp.MustCompile(`data-team="([^"]*)"`)
	for _, dir := range []string{"asc", "desc"} {
		path := "/pools?reclaim_sort=job&reservations_sort=job&waiting_sort=job&reclaim_dir=" + dir + "&reservations_dir=" + dir + "&waiting_dir=" + dir
		code, body, _ := get(t, srv, path, "tok-vision")
		if code != http.StatusOK {
			t.Fatalf("%s as vision: %d", path, code)
		}
		for _, c := range []struct {
			def        *tableDef
			want, ours int
		}{{reclaimTable, reclaim, -1}, {reservationsTable, reservations, ownReserved}, {waitingTable, waiting, waiting}} {
			if !strings.Contains(body, `data-table="`+c.def.name+`" data-total="`+strconv.Itoa(c.want)+`"`) {
				t.Errorf("%s as vision: #%s's pager does not count %d", path, c.def.id, c.want)
			}
			rows := teamOf.FindAllStringSubmatch(tableHTML(body, c.def.id), -1)
			vision := 0
			for _, m := range rows {
				if m[1] == "vision" {
					vision++
				} else if c.def == waitingTable || (c.def == reservationsTable && m[1] != "") {
					t.Errorf("%s as vision: #%s lists a row of team %q", path, c.def.id, m[1])
				}
			}
			if len(rows) != c.want || (c.ours >= 0 && vision != c.ours) {
				t.Errorf("%s as vision: #%s has %d rows, %d of vision; want %d, %d of vision", path, c.def.id, len(rows), vision, c.want, c.ours)
			}
		}
		for _, other := range []string{"sched/nlp/", "sched/audio/"} {
			if strings.Contains(body, other) {
				t.Errorf("%s as vision names another team's job %s…", path, other)
			}
		}
	}
}
