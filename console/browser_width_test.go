package console

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	chromiumpkg "github.com/gpupool/gpupool/reports/chromium"
)

// narrowWidth is the narrowest screen the console is laid out for.
const narrowWidth = 1280

// TestBrowserFitsNarrowScreen opens every page in a 1280-pixel-wide window and
// checks that none is wider than the window (document scrollWidth): the
// columns that matter are on the screen, the rest a click away.
func TestBrowserFitsNarrowScreen(t *testing.T) {
	ctx := chromiumpkg.Browser(t, narrowWidth, 900)
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	// busy: a scheduler with nodes, many jobs on borrowed quota, reservations
	// and waiting jobs (the browser's login cookie holds the token, sent to
	// both servers of the same host).
	sched := busyScheduler()
	busy := testConsole(t, s, sched)
	reclaim, reservations, waiting, _ := busyCounts(sched, nil)
	// frag: a scheduler with an open fragmentation finding and its plan.
	fragSched, _, _ := fragmentedScheduler(t, "tok-admin")
	frag := testConsole(t, s, fragSched)
	// hist: eight weeks of capacity history (historySeries: four cluster and
	// card types to forecast).
	hs, _ := newHistoryStore(t)
	hist := testConsole(t, hs, nil)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	do("log in", chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "tok-admin"), chromedp.Click(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("gpus")))
	job := sqlText(t, s, `SELECT job FROM findings WHERE job IN (SELECT job FROM jobs WHERE state = 'running') ORDER BY job LIMIT 1`)
	fid := sqlText(t, s, "SELECT id FROM findings WHERE job = '"+job+"' ORDER BY id LIMIT 1")
	const window = "hour >= toStartOfHour(toDateTime('2026-11-30 16:00:00')) - INTERVAL 23 HOUR"
	// count is what the pager of the table wait says the filters select
	// ("500 of 681"), as SQL counts it ("": not checked; "=N": N, the fake
	// scheduler's or history's count). A path starting with http is busy's,
	// hist's or frag's.
	pages := []struct{ name, path, wait, count string }{
		{"fleet", "/fleet?per=25", "gpus", "SELECT uniqExact(gpu_uuid) FROM gpu_hour WHERE " + window},
		{"pools", "/pools", "queues", ""},
		{"jobs", "/jobs?per=25", "jobs", "SELECT count() FROM jobs"},
		{"jobs-running", "/jobs?state=running&sort=ran", "jobs", "SELECT count() FROM jobs WHERE state = 'running'"},
		{"job", "/jobs/" + escapePath(job), "job-key", ""},
		{"findings", "/findings?state=all&range=all", "findings", "SELECT count() FROM (SELECT DISTINCT id, episode FROM findings)"},
		{"finding", "/findings/" + fid, "evidence", ""},
		{"actions", "/actions?per=25&page=2", "actions", "SELECT uniqExact(id) FROM actions"},
		{"actions-notify", "/actions?decision=notify&sort=job", "actions", "SELECT uniqExact(id) FROM actions WHERE decision = 'notify'"},
		{"chargeback", "/chargeback?period=day&at=2026-11-30", "by-team", ""},
		{"capacity", hist.URL + "/capacity?sort=cost&dir=desc", "capacity", "=4"},
		// The further tables of a page, sorted and paged each by its own
		// parameters.
		{"fleet-cards", "/fleet?cards_sort=units&per=25", "card-counts", "SELECT uniqExact(card) FROM gpu_hour WHERE " + window},
		{"pools-sorted", "/pools?queues_sort=waiting&pools_sort=used&wait_sort=p95&wait_per=25&range=all", "queue-wait", "SELECT count() FROM (SELECT DISTINCT queue, pool FROM queue_wait)"},
		{"job-sorted", "/jobs/" + escapePath(job) + "?actions_sort=policy&findings_sort=waste", "job-actions", "SELECT uniqExact(id) FROM actions WHERE job = '" + job + "' OR startsWith(job, '" + job + "/')"},
		{"finding-sorted", "/findings/" + fid + "?episodes_sort=since&actions_sort=time", "evidence", ""},
		{"chargeback-sorted", "/chargeback?period=day&at=2026-11-30&waste_sort=idle_cost&wait_sort=p95&wait_per=25", "top-waste", ""},
		{"finding-evidence", "/findings/" + fid + "?evidence_sort=value&evidence_dir=asc", "evidence", ""},
		{"pools-reclaim", busy.URL + "/pools?reclaim_sort=gpus&reclaim_per=25&reclaim_page=2", "reclaim", "=" + itoa(reclaim)},
		{"pools-reservations", busy.URL + "/pools?reservations_sort=nodes&reservations_dir=desc", "reservations", "=" + itoa(reservations)},
		{"pools-waiting", busy.URL + "/pools?waiting_sort=why&waiting_per=25", "waiting", "=" + itoa(waiting)},
		{"pools-frag-findings", frag.URL + "/pools", "frag-findings", ""},
	}
	var widths []string
	for _, p := range pages {
		url := p.path
		if !strings.HasPrefix(url, "http") {
			url = srv.URL + url
		}
		do("open "+p.name, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID(p.wait)))
		w := evalJS[int](t, ctx, `document.documentElement.scrollWidth`)
		vw := evalJS[int](t, ctx, `document.documentElement.clientWidth`)
		widths = append(widths, p.name+" "+itoa(w))
		if p.count != "" {
			want, fixed := strings.CutPrefix(p.count, "=")
			if !fixed {
				want = sqlText(t, s, p.count)
			}
			pager := `document.querySelector(".pager[data-table='` + p.wait + `']")`
			got := evalJS[string](t, ctx, pager+`.dataset.total`)
			shown := evalJS[string](t, ctx, pager+`.querySelector(".total").textContent.replace(/,/g, "")`)
			rows := evalJS[int](t, ctx, `document.querySelectorAll("#`+p.wait+` tbody tr:not(.total)").length`)
			from, to := evalJS[string](t, ctx, pager+`.dataset.from`), evalJS[string](t, ctx, pager+`.dataset.to`)
			f, _ := strconv.Atoi(from)
			e, _ := strconv.Atoi(to)
			if got != want || shown != want {
				t.Errorf("%s (%s): the pager counts %s (shows %s), SQL %s", p.name, p.path, got, shown, want)
			}
			if n, _ := strconv.Atoi(want); n > 0 && (rows != e-f+1 || rows == 0) {
				t.Errorf("%s (%s): %d rows, the pager says %s–%s", p.name, p.path, rows, from, to)
			}
		}
		if w > vw {
			wide := evalJS[[]string](t, ctx, `[...document.querySelectorAll("main > *, main table")].filter(e => e.scrollWidth > document.documentElement.clientWidth || e.getBoundingClientRect().right > document.documentElement.clientWidth).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`)
			t.Errorf("%s (%s): %d px wide in a %d px window; too wide: %s", p.name, p.path, w, vw, strings.Join(wide, ", "))
		}
	}
	t.Logf("scrollWidth at %d px: %s", narrowWidth, strings.Join(widths, ", "))
}

func itoa(n int) string { return strconv.Itoa(n) }
