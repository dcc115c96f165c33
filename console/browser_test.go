package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	chromiumpkg "github.com/gpupool/gpupool/reports/chromium"

	"github.com/chromedp/chromedp"

	"github.com/gpupool/gpupool/store"
)

func chromium(t *testing.T) string { return chromiumpkg.Path(t) }

// browser drives one tab of a headless Chromium with the console's window size.
func browser(t *testing.T) context.Context { return chromiumpkg.Browser(t, screenshotWidth, 1000) }

// screenshotWidth is the window of the browser test and its screenshots: the
// widest screen the console is laid out for.
const screenshotWidth = 1440

// shots writes the pages' screenshots: into a temporary folder, and with
// -update-screenshots into docs/console/ too, for the README.
type shots struct {
	t   *testing.T
	dir string
}

func (s shots) take(ctx context.Context, name string) {
	s.t.Helper()
	// A screenshot shows the page as a 1440-pixel screen does: all of it.
	if w := evalJS[int](s.t, ctx, `document.documentElement.scrollWidth`); w > screenshotWidth {
		s.t.Errorf("%s: %d px wide, wider than the %d px window", name, w, screenshotWidth)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{s.dir}
	if *updateScreenshots {
		dirs = append(dirs, filepath.Join("..", "docs", "console"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

// sqlText is the first cell of a query's result, as text.
func sqlText(t *testing.T, s store.Store, sql string) string {
	t.Helper()
	res, err := s.Query(context.Background(), sql, nil)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(res.Rows) == 0 {
		t.Fatalf("%s: no row", sql)
	}
	return store.FormatValue(res.Rows[0][0])
}

// TestBrowser drives the console in headless Chromium over a store filled by a
// short simulation: it logs in with a token, opens every page, checks the
// figures against the SQL views, clicks from the fleet to a job, to its finding,
// to the action taken on it, sees a live page refresh in place, and checks that a
// team:vision token sees no other team's job. It writes a screenshot of every
// page.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	sh := shots{t: t, dir: t.TempDir()}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		out, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(out)
	}
	location := func() string {
		t.Helper()
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}

	// Log in: a page asks for the token and comes back to where it was asked.
	var loc string
	run("open the fleet", chromedp.Navigate(srv.URL+"/fleet"), chromedp.WaitVisible(chromedp.ID("token")))
	loc = location()
	if !strings.Contains(loc, "/login?next=") {
		t.Fatalf("without a token the fleet page went to %s, want the login page", loc)
	}
	sh.take(ctx, "login")
	run("log in", chromedp.SendKeys(chromedp.ID("token"), "tok-admin"), chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("gpus")))
	loc = location()
	if !strings.HasSuffix(loc, "/fleet") {
		t.Errorf("after login: %s, want /fleet", loc)
	}
	if v := text("#viewer"); !strings.Contains(v, "admin") {
		t.Errorf("header names %q, want the admin token's identity", v)
	}

	// Fleet: the GPU units that reported in the last 24 h, and those jobs hold.
	const window = "hour >= toStartOfHour(toDateTime('2026-11-30 16:00:00')) - INTERVAL 23 HOUR"
	units := sqlText(t, s, "SELECT uniqExact(gpu_uuid) FROM gpu_hour WHERE "+window)
	held := sqlText(t, s, `SELECT uniqExact(g) FROM (SELECT arrayJoin(gpu_uuids) AS g FROM jobs WHERE state = 'running')
WHERE g IN (SELECT gpu_uuid FROM gpu_hour WHERE `+window+`)`)
	if got := text("#units"); got != units {
		t.Errorf("fleet: %s GPU units, the store has %s", got, units)
	}
	alloc, _ := strconv.Atoi(text("#allocated"))
	idle, _ := strconv.Atoi(text("#idle"))
	free, _ := strconv.Atoi(text("#free"))
	if strconv.Itoa(alloc+idle) != held {
		t.Errorf("fleet: %d allocated + %d idle, running jobs hold %s", alloc, idle, held)
	}
	if n, _ := strconv.Atoi(units); alloc+idle+free != n {
		t.Errorf("fleet: %d + %d + %d units, want %d", alloc, idle, free, n)
	}
	// Drivers: GPU units per driver version over the page's last 5 minutes.
	drivers := sqlText(t, s, `WITH (SELECT max(minute) + INTERVAL 1 MINUTE FROM gpu_minute) AS now
SELECT arrayStringConcat(groupArray(concat(v, ' on ', toString(n), ' GPU units')), ', ') FROM (
    SELECT v, count() AS n FROM (
        SELECT gpu_uuid, argMax(driver_version, ts) AS v FROM gpu_samples
        WHERE ts >= now - INTERVAL 5 MINUTE AND ts < now AND gpu_uuid IN (SELECT gpu_uuid FROM gpu_hour WHERE `+window+`)
        GROUP BY gpu_uuid)
    WHERE v != '' GROUP BY v ORDER BY n DESC, v)`)
	if got := text("#drivers"); drivers == "" || !strings.Contains(got, drivers) {
		t.Errorf("fleet: drivers %q, the store has %q", got, drivers)
	}
	sparks := evalJS[int](t, ctx, `document.querySelectorAll("#gpus svg.spark polyline").length`)
	if sparks == 0 {
		t.Error("fleet: no sparkline drawn")
	}
	sh.take(ctx, "fleet")

	// Live: the fleet's content reloads in place (no navigation), and a GPU's
	// details opened before stay open.
	run("open a GPU's details", chromedp.Click(chromedp.CSS(`#gpus td.gpu summary`)))
	openGPU := evalJS[string](t, ctx, `document.querySelector("#gpus details[open]").closest("tr").dataset.gpu`)
	refreshed, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById("content").dataset.refreshed || ""`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("wait for a live refresh: %v", err)
	}
	if refreshed == "" {
		t.Error("the fleet page did not refresh")
	}
	if still := evalJS[bool](t, ctx, `!!document.querySelector('#gpus tr[data-gpu="`+openGPU+`"] details[open]')`); !still {
		t.Errorf("GPU %s's details closed when the page refreshed", openGPU)
	}

	// Fleet → job → finding → action: a running job with a finding.
	job := sqlText(t, s, `SELECT job FROM findings WHERE job IN (SELECT job FROM jobs WHERE state = 'running') ORDER BY job LIMIT 1`)
	run("click the job on the fleet page", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#gpus a.job[href="/jobs/%s"]`, escapePath(job)))),
		chromedp.WaitVisible(chromedp.ID("job-key")))
	if got := text("#job-key"); got != job {
		t.Errorf("job page of %s, clicked %s", got, job)
	}
	wantHours := sqlText(t, s, "SELECT round(sum(gpu_hours), 2) FROM chargeback_priced WHERE job = '"+job+"'")
	if got := text("#job-cost .gpu-hours"); !sameNumber(got, wantHours) {
		t.Errorf("job %s: %s GPU-hours, chargeback_priced has %s", job, got, wantHours)
	}
	charts := evalJS[int](t, ctx, `document.querySelectorAll("#timelines svg polyline").length`)
	if charts < 4 {
		t.Errorf("job page: %d timeline lines, want one per metric and GPU (≥ 4)", charts)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#timelines .marker[data-decision="notify"]').length`); n < 4 {
		t.Errorf("job page: %d notify markers, want the policy's notify on each of the 4 timelines", n)
	}
	sh.take(ctx, "job")
	run("click the job's finding", chromedp.Click(chromedp.CSS(".findings a.finding")), chromedp.WaitVisible(chromedp.ID("evidence")))
	fid := text("#finding-id")
	if got := sqlText(t, s, "SELECT any(job) FROM findings WHERE id = '"+fid+"'"); got != job {
		t.Errorf("finding %s is of job %s, clicked from %s", fid, got, job)
	}
	evidence := evalJS[int](t, ctx, `document.querySelectorAll("#evidence tbody tr").length`)
	if evidence == 0 {
		t.Error("finding page: no evidence")
	}
	sh.take(ctx, "finding")
	run("click the action taken", chromedp.Click(chromedp.CSS(".actions a.action")), chromedp.WaitVisible(chromedp.ID("actions")))
	loc = location()
	aid := loc[strings.LastIndex(loc, "#action-")+len("#action-"):]
	if got := sqlText(t, s, "SELECT any(finding_id) FROM actions WHERE id = '"+aid+"'"); got != fid {
		t.Errorf("action %s is about finding %q, clicked from %s", aid, got, fid)
	}
	shown := evalJS[bool](t, ctx, `!!document.getElementById("action-`+aid+`")`)
	if !shown {
		t.Errorf("the actions page has no row for action %s", aid)
	}
	sh.take(ctx, "actions")

	// Findings: the open episodes, as the findings table has them.
	run("open findings", chromedp.Navigate(srv.URL+"/findings"), chromedp.WaitVisible(chromedp.ID("findings")))
	open := sqlText(t, s, "SELECT count() FROM (SELECT argMax(state, updated_at) AS st FROM findings GROUP BY id, episode) WHERE st != 'resolved'")
	if got := text("#open-total"); got != open {
		t.Errorf("findings: %s open, the findings table has %s", got, open)
	}
	next := evalJS[[]string](t, ctx, `[...document.querySelectorAll("#findings td.next")].map(td => td.textContent).filter(s => s.includes(" at "))`)
	if len(next) == 0 {
		t.Error("findings: no open finding says what a policy does next and when")
	}
	sh.take(ctx, "findings")

	// Jobs.
	run("open jobs", chromedp.Navigate(srv.URL+"/jobs?state=running"), chromedp.WaitVisible(chromedp.ID("jobs")))
	if got, want := text("#n-running"), sqlText(t, s, "SELECT count() FROM jobs WHERE state = 'running'"); got != want {
		t.Errorf("jobs: %s running, the jobs view has %s", got, want)
	}
	sh.take(ctx, "jobs")

	// Chargeback: the day's figures, as chargeback_daily (gpupool report run) has them.
	run("open chargeback", chromedp.Navigate(srv.URL+"/chargeback?period=day&at=2026-11-30"), chromedp.WaitVisible(chromedp.ID("by-team")))
	if got, want := text("#total-gpu-hours"), sqlText(t, s, "SELECT round(sum(gpu_hours), 2) FROM chargeback_daily WHERE day = '2026-11-30'"); !sameNumber(got, want) {
		t.Errorf("chargeback: %s GPU-hours, chargeback_daily has %s", got, want)
	}
	cost := sqlText(t, s, "SELECT round(sum(cost), 2) FROM chargeback_daily WHERE day = '2026-11-30'")
	if got := text("#total-cost"); !sameNumber(strings.Fields(got)[0], cost) {
		t.Errorf("chargeback: cost %s, chargeback_daily has %s", got, cost)
	}
	vision := sqlText(t, s, "SELECT round(sum(gpu_hours), 2) FROM chargeback_daily WHERE day = '2026-11-30' AND team = 'vision'")
	if got := text(`#by-team tr[data-key="vision"] .gpu-hours`); !sameNumber(got, vision) {
		t.Errorf("chargeback: vision %s GPU-hours, chargeback_daily has %s", got, vision)
	}
	sh.take(ctx, "chargeback")

	// Capacity and pools.
	// Capacity over eight weeks of history (the simulation's hours are too
	// few to forecast): the report's figures, the forecast used named.
	hs, _ := newHistoryStore(t)
	hist := testConsole(t, hs, nil)
	run("open capacity", chromedp.Navigate(hist.URL+"/capacity"), chromedp.WaitVisible(chromedp.ID("capacity")))
	if a := text("#assumption"); !strings.Contains(a, "naive forecast is used where it does as well or better") {
		t.Errorf("capacity: the forecast's assumption is not stated: %q", a)
	}
	if got := text(`#capacity tr[data-key="c1/L40S-48GB"] .method`); got != "trend+season" {
		t.Errorf("capacity: the L40S's forecast used is %q, want trend+season", got)
	}
	sh.take(ctx, "capacity")
	run("open pools", chromedp.Navigate(srv.URL+"/pools"), chromedp.WaitVisible(chromedp.ID("queues")))
	queues := evalJS[int](t, ctx, `document.querySelectorAll("#queues tbody tr").length`)
	reclaim := evalJS[int](t, ctx, `document.querySelectorAll("#reclaim tbody tr").length`)
	if queues != 5 || reclaim != 1 {
		t.Errorf("pools: %d queues and %d reclaimable jobs, want the default model's 5 and the one borrowing job", queues, reclaim)
	}
	sh.take(ctx, "pools")

	// team:vision sees its own jobs only.
	run("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("token")))
	run("log in as vision", chromedp.SendKeys(chromedp.ID("token"), "tok-vision"), chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("gpus")))
	run("vision's jobs", chromedp.Navigate(srv.URL+"/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	teams := evalJS[[]string](t, ctx, `[...document.querySelectorAll("#jobs tr[data-team]")].map(r => r.dataset.team)`)
	if len(teams) == 0 {
		t.Error("vision sees no job of its own")
	}
	for _, tm := range teams {
		if tm != "vision" {
			t.Errorf("vision's job list holds a job of team %s", tm)
		}
	}
	run("vision's fleet", chromedp.Navigate(srv.URL+"/fleet"), chromedp.WaitVisible(chromedp.ID("gpus")))
	fleetJobs := evalJS[[]string](t, ctx, `[...document.querySelectorAll("#gpus a.job")].map(a => a.textContent)`)
	for _, j := range fleetJobs {
		if team := sqlText(t, s, "SELECT any(team) FROM jobs WHERE job = '"+j+"'"); team != "vision" {
			t.Errorf("vision's fleet page links job %s of team %s", j, team)
		}
	}
	other := sqlText(t, s, "SELECT job FROM jobs WHERE team != 'vision' ORDER BY job LIMIT 1")
	run("open another team's job", chromedp.Navigate(srv.URL+"/jobs/"+escapePath(other)), chromedp.WaitVisible(chromedp.ID("error")))
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if !strings.HasPrefix(title, "Not found") {
		t.Errorf("vision opening %s: page %q, want Not found (as for a job that does not exist)", other, title)
	}
	run("vision's chargeback", chromedp.Navigate(srv.URL+"/chargeback?period=day&at=2026-11-30"), chromedp.WaitVisible(chromedp.ID("by-team")))
	rows := evalJS[[]string](t, ctx, `[...document.querySelectorAll("#by-team tbody tr")].map(r => r.dataset.key)`)
	if len(rows) != 1 || rows[0] != "vision" {
		t.Errorf("vision's chargeback lists teams %v, want vision only", rows)
	}
	if got := text("#total-gpu-hours"); !sameNumber(got, vision) {
		t.Errorf("vision's chargeback total %s GPU-hours, its chargeback_daily rows %s", got, vision)
	}
	sh.take(ctx, "chargeback-team-vision")
	t.Logf("screenshots in %s", sh.dir)
}

// evalJS evaluates a JavaScript expression in the page.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// sameNumber compares two decimal texts as numbers to the cent.
func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	return err1 == nil && err2 == nil && fmt.Sprintf("%.2f", x) == fmt.Sprintf("%.2f", y)
}
