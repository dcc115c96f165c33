package console

import (
	"context"
	"fmt"
	"net/http"
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
