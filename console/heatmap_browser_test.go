package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpupool/gpupool/ingest"
	chromiumpkg "github.com/gpupool/gpupool/reports/chromium"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// The big fleet: 10,000 GPUs, 1,250 nodes of 8 in two clusters, four card
// types, for the 24 hours to bigEnd, generated straight into the store (as
// bench_test.go's fleet): the hourly rollup of the first 22 hours, raw samples
// every minute of the last 5 minutes (rolled up as ingest does), and a running
// job of 4 GPUs on three slots of every four, one in ten of them idle. A few
// GPUs report an XID, a few an ECC XID, a few no samples.
var bigEnd = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

const (
	bigGPUs  = 10000
	bigTeams = `['vision', 'nlp', 'speech', 'recsys', 'research']`
)

// bigGPU names GPU g's node, cluster, card, UUID, job and activity.
const bigGPU = `
    intDiv(g, 8) AS n, 'gpu-node-' || leftPad(toString(n), 4, '0') AS node_name, ['us-east-1', 'eu-west-1'][n % 2 + 1] AS cluster_name,
    ['H100-80GB', 'A100-80GB', 'A100-40GB', 'L40S-48GB'][intDiv(n, 2) % 4 + 1] AS card_name,
    'GPU-' || toString(toUUID(concat('6a1f0000-0000-4000-8000-', leftPad(toString(g), 12, '0')))) AS uuid,
    intDiv(g, 4) AS s, s % 4 != 3 AS held, s % 10 = 0 AS idle,
    if(held AND NOT idle, 0.3 + 0.6 * ((g * 7) % 11) / 11, 0) AS sm,
    multiIf(g % 997 = 0, 79, g % 1999 = 5, 48, 0) AS xid_now, g % 1013 = 7 AS quiet`

func bigFill(t testing.TB, s store.Store) {
	t.Helper()
	ctx := context.Background()
	end := bigEnd.Format(time.DateTime)
	stmts := []string{
		fmt.Sprintf(`INSERT INTO gpu_hour (hour, gpu_uuid, cluster, node, card, mig_profile, samples, activity_samples, active_samples,
    gr_engine_active_sum, gr_engine_active_samples, sm_active_sum, sm_active_samples, xid_samples)
SELECT toDateTime('%[1]s', 'UTC') - toIntervalHour(23 - h), uuid, cluster_name, node_name, card_name, '', 60, 60, if(sm > 0.01, 60, 0),
    sm * 60, 60, sm * 60, 60, if(xid_now != 0 AND h = 20, 1, 0)
FROM (SELECT number %% %[2]d AS g, intDiv(number, %[2]d) AS h, %[3]s FROM numbers(%[2]d * 22))`, end, bigGPUs, bigGPU),
		fmt.Sprintf(`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile, fb_total_mib, fb_used_mib,
    gr_engine_active, sm_active, gpu_util, power_w, energy_mj, temp_c, xid)
SELECT toDateTime64('%[1]s', 3, 'UTC') - toIntervalMinute(5 - m), cluster_name, node_name, uuid, toUInt16(g %% 8), 'NVIDIA ' || card_name,
    card_name, '', 81920, if(held, 60000, 0), sm, sm, sm, 80 + 500 * sm, m * 1000, 40 + 30 * sm, xid_now
FROM (SELECT number %% %[2]d AS g, intDiv(number, %[2]d) AS m, %[3]s FROM numbers(%[2]d * 5)) WHERE NOT quiet`, end, bigGPUs, bigGPU),
		fmt.Sprintf(`INSERT INTO job_events (ts, job, event, source, cluster, team, project, queue, pool, model_name, workload, gpus, card,
    nodes, gpu_uuids, status, exit_code, attempt, rerun_of, labels)
SELECT toDateTime64('%[1]s', 3, 'UTC') - toIntervalHour(if(ev = 'submit', 7, 6)), 'big/' || toString(s), ev, 'scheduler', cluster_name,
    %[3]s[s %% 5 + 1] AS team, team || '-p', team || '-q', 'training-exp', 'model', 'training', 4, card_name, [node_name],
    arrayMap(j -> 'GPU-' || toString(toUUID(concat('6a1f0000-0000-4000-8000-', leftPad(toString(s * 4 + j), 12, '0')))), range(4)),
    '', 0, 1, '', map()
FROM (SELECT number * 4 AS g, %[4]s FROM numbers(%[2]d / 4)) ARRAY JOIN ['submit', 'start'] AS ev WHERE held`, end, bigGPUs, bigTeams, bigGPU),
	}
	for _, q := range stmts {
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	if err := ingest.RollUpLoaded(ctx, s, bigEnd.Add(-10*time.Minute), bigEnd); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFleetAt10000GPUs opens the fleet page of 10,000 GPUs in a
// 1280-pixel window: one heatmap cell per GPU unit the store holds, no wider
// than the window; a cluster and card filter, a node's drill-down and a GPU's
// narrow it to what SQL counts. It logs the page's size and load time (not
// asserted; the size only against a generous bound).
func TestBrowserFleetAt10000GPUs(t *testing.T) {
	s := chdbtest.Open(t)
	if _, err := store.Migrate(context.Background(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	bigFill(t, s)
	t.Logf("filled the store in %s", time.Since(t0).Round(time.Millisecond))
	cfg := DefaultConfig()
	cfg.Refresh = 10 * time.Minute // no live refresh while the test counts
	c, err := New(cfg, s, newGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)

	inv := `(SELECT gpu_uuid, any(cluster) AS cluster, any(node) AS node, any(card) AS card FROM gpu_hour
WHERE hour >= toDateTime('` + bigEnd.Add(-23*time.Hour).Format(time.DateTime) + `') GROUP BY gpu_uuid)`
	count := func(where string) string { return sqlText(t, s, "SELECT count() FROM "+inv+" WHERE "+where) }
	if n := count("1"); n != itoa(bigGPUs) {
		t.Fatalf("the store holds %s GPU units, want %d", n, bigGPUs)
	}
	// The page's size uncompressed, and the
	// server's time to build it.
	t1 := time.Now()
	code, body, _ := get(t, srv, "/fleet", "tok-admin")
	heat := body[strings.Index(body, `<div id="heatmap"`):]
	heat = heat[:strings.Index(heat, `<h2>GPUs</h2>`)]
	t.Logf("GET /fleet at %d GPUs: %d, %d bytes (the heatmap %d) in %s", bigGPUs, code, len(body), len(heat), time.Since(t1).Round(time.Millisecond))
	if len(body) > 4<<20 {
		t.Errorf("the fleet page at %d GPUs is %d bytes, over 4 MiB", bigGPUs, len(body))
	}
	// What a browser receives: the page gzip-compressed.
	if code, zipped, h := get(t, srv, "/fleet", "tok-admin", "Accept-Encoding", "gzip"); code != http.StatusOK || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("the fleet page with gzip accepted: %d, encoding %q", code, h.Get("Content-Encoding"))
	} else {
		t.Logf("GET /fleet at %d GPUs, gzip: %d bytes on the wire", bigGPUs, len(zipped))
	}

	ctx := chromiumpkg.Browser(t, narrowWidth, 900)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check := func(what, want string, rows int) {
		t.Helper()
		cells := evalJS[int](t, ctx, `document.querySelectorAll("#heatmap .cells > a").length`)
		units := evalJS[string](t, ctx, `document.getElementById("heatmap").dataset.units`)
		total := evalJS[string](t, ctx, `document.querySelector(".pager[data-table='gpus']").dataset.total`)
		if itoa(cells) != want || units != want || total != want {
			t.Errorf("%s: %d cells (heatmap says %s, the table %s), SQL %s", what, cells, units, total, want)
		}
		if got := evalJS[int](t, ctx, `document.querySelectorAll("#gpus tbody tr").length`); got != rows {
			t.Errorf("%s: %d table rows, want %d", what, got, rows)
		}
		w, vw := evalJS[int](t, ctx, `document.documentElement.scrollWidth`), evalJS[int](t, ctx, `document.documentElement.clientWidth`)
		if w > vw {
			t.Errorf("%s: %d px wide in a %d px window", what, w, vw)
		}
	}
	do("log in", chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "tok-admin"), chromedp.Click(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("gpus")))
	t2 := time.Now()
	do("open the fleet", chromedp.Navigate(srv.URL+"/fleet"), chromedp.WaitVisible(chromedp.ID("heatmap")))
	t.Logf("the browser loaded /fleet at %d GPUs in %s (load event %d ms after navigation start)", bigGPUs, time.Since(t2).Round(time.Millisecond),
		evalJS[int](t, ctx, `Math.round(performance.getEntriesByType("navigation")[0].loadEventEnd)`))
	check("all", count("1"), 100)
	if g := evalJS[int](t, ctx, `document.querySelectorAll("#heatmap .hgroup").length`); itoa(g) != sqlText(t, s, "SELECT uniqExact(cluster, card) FROM "+inv) {
		t.Errorf("%d groups, want one per cluster and card type", g)
	}

	do("filter a cluster and card", chromedp.Navigate(srv.URL+"/fleet?cluster=eu-west-1&card=A100-40GB"), chromedp.WaitVisible(chromedp.ID("heatmap")))
	check("cluster and card", count("cluster = 'eu-west-1' AND card = 'A100-40GB'"), 100)
	if *updateScreenshots {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("heatmap")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "console", "fleet-heatmap.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := evalJS[string](t, ctx, `document.querySelector("#heatmap .hn a.hl").textContent`)
	do("drill down to a node", chromedp.Click(chromedp.CSS(`#heatmap .hn a.hl`)), chromedp.WaitVisible(chromedp.CSS(`#gpus a.node`)))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "node="+node) {
		t.Errorf("the node's link went to %s, want node=%s", loc, node)
	}
	check("node "+node, count("cluster = 'eu-west-1' AND node = '"+node+"'"), 8)
	gpu := evalJS[string](t, ctx, `new URL(document.querySelector("#heatmap .cells > a").href).searchParams.get("gpu")`)
	do("drill down to a GPU", chromedp.Click(chromedp.CSS(`#heatmap .cells > a`)), chromedp.WaitVisible(chromedp.ID("gpu-filter")))
	check("GPU "+gpu, count("gpu_uuid = '"+gpu+"'"), 1)
	if open := evalJS[bool](t, ctx, `!!document.querySelector('#gpus tr[data-gpu="`+gpu+`"] details[open]')`); !open {
		t.Errorf("GPU %s's details are not open", gpu)
	}
}
