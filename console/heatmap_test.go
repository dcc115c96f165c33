package console

import (
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// heatGPUs is a small fleet: two clusters, two card types, three nodes, a GPU
// of each state and health.
var heatGPUs = []fleetGPU{
	{UUID: "G-a0", Cluster: "c1", Node: "n1", Card: "H100", Index: 0, State: "allocated", Act24: 0.95, SMNow: 0.9, Job: "j1", Team: "vision", Health: healthOK},
	{UUID: "G-a1", Cluster: "c1", Node: "n1", Card: "H100", Index: 1, State: "idle", Act24: 0.04, SMNow: 0, Hidden: true, Health: healthXID, XID24: 3},
	{UUID: "G-b0", Cluster: "c1", Node: "n2", Card: "H100", Index: 0, State: "free", Act24: math.NaN(), SMNow: math.NaN(), Health: healthQuiet},
	{UUID: "G-c0", Cluster: "c1", Node: "n3", Card: "L40S", Index: 0, State: "free", Act24: 0.5, SMNow: 0, Health: healthECC, XID: 48},
	{UUID: "G-d0", Cluster: "c2", Node: "n1", Card: "H100", Index: -1, State: "allocated", Act24: 0.3, SMNow: 0.3, Job: "j2", Team: "nlp", Health: healthOK},
}

func TestHeatmapGroups(t *testing.T) {
	h := buildHeatmap(heatGPUs)
	type want struct {
		key                          string
		units, nodes, alloc, idle, f int
		mean                         string
		health                       map[string]int
	}
	wants := []want{
		{"c1 H100", 3, 2, 1, 1, 1, "50 %", map[string]int{healthOK: 1, healthXID: 1, healthQuiet: 1}},
		{"c1 L40S", 1, 1, 0, 0, 1, "50 %", map[string]int{healthECC: 1}},
		{"c2 H100", 1, 1, 1, 0, 0, "30 %", map[string]int{healthOK: 1}},
	}
	if h.Units != len(heatGPUs) || len(h.Groups) != len(wants) {
		t.Fatalf("%d units in %d groups, want %d in %d", h.Units, len(h.Groups), len(heatGPUs), len(wants))
	}
	for i, w := range wants {
		g := h.Groups[i]
		got := want{g.Cluster + " " + g.Card, g.Units, len(g.Nodes), g.Allocated, g.Idle, g.Free, heatPct(g.Mean), g.Health}
		if got.key != w.key || got.units != w.units || got.nodes != w.nodes || got.alloc != w.alloc || got.idle != w.idle ||
			got.f != w.f || got.mean != w.mean || !sameCounts(got.health, w.health) {
			t.Errorf("group %d: %+v, want %+v", i, got, w)
		}
	}
	// The mean skips a GPU that measured nothing: (0.95 + 0.04) / 2.
	if m := h.Groups[0].Mean; math.Abs(m-0.495) > 1e-9 {
		t.Errorf("c1 H100 mean %v, want 0.495", m)
	}
	for _, c := range []struct{ uuid, class string }{
		{"G-a0", "u9"}, {"G-a1", "u0 i x"}, {"G-b0", "un f q"}, {"G-c0", "u5 f e"}, {"G-d0", "u3"},
	} {
		if got := heatClass(gpuOf(t, c.uuid)); got != c.class {
			t.Errorf("%s: class %q, want %q", c.uuid, got, c.class)
		}
	}
	// Another team's job is not named, nor its team.
	if got := heatTitle(gpuOf(t, "G-a1"), 1); got != "n1 GPU 1 · H100 · held, idle · another team's job · SM 4 % 24 h, 0 % now · XID error" {
		t.Errorf("hidden GPU's title %q", got)
	}
	if got := heatTitle(gpuOf(t, "G-a0"), 0); !strings.Contains(got, "j1 (vision)") {
		t.Errorf("own GPU's title %q, want its job and team", got)
	}
	body := string(h.HTML(url.Values{"per": {"25"}}))
	if n := strings.Count(body, `href=?gpu=`); n != len(heatGPUs) {
		t.Errorf("%d cells drawn, want %d", n, len(heatGPUs))
	}
	if !strings.Contains(body, `href="/fleet?cluster=c1&amp;node=n2&amp;per=25"`) {
		t.Errorf("no node link to c1/n2 keeping the other parameters:\n%s", body)
	}
}

func sameCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

func gpuOf(t *testing.T, uuid string) fleetGPU {
	t.Helper()
	for _, g := range heatGPUs {
		if g.UUID == uuid {
			return g
		}
	}
	t.Fatalf("no GPU %s", uuid)
	return fleetGPU{}
}

// heatWindow is the fleet page's 24 hours in the simulated store.
const heatWindow = "hour >= toStartOfHour(toDateTime('2026-11-30 16:00:00')) - INTERVAL 23 HOUR"

var (
	heatGroupRE = regexp.MustCompile(`<section class="hgroup" data-cluster="([^"]*)" data-card="([^"]*)" data-units="(\d+)">.*?<span class="busy">(\d+) busy</span> · <span class="idle">(\d+) idle</span>`)
	heatCellRE  = regexp.MustCompile(`<a class="[^"]*" href=\?gpu=\S* title="([^"]*)"></a>`)
	heatUnitsRE = regexp.MustCompile(`<div id="heatmap" class="heatmap" data-units="(\d+)">`)
	pagerRE     = regexp.MustCompile(`<div class="pager" data-table="gpus" data-total="(\d+)"`)
)

// TestHeatmapAgreesWithSQL checks the heatmap's groups of the simulated fleet
// against the store: the GPU units per cluster and card type that reported in
// the last 24 hours, and those running jobs hold.
func TestHeatmapAgreesWithSQL(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	code, body, _ := get(t, srv, "/fleet", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("fleet: %d", code)
	}
	want := sqlText(t, s, `SELECT arrayStringConcat(groupArray(concat(cluster, ' ', card, ' ', toString(n), ' ', toString(held))), ', ') FROM (
    SELECT cluster, card, count() AS n, countIf(gpu_uuid IN (SELECT arrayJoin(gpu_uuids) FROM jobs WHERE state = 'running')) AS held
    FROM (SELECT gpu_uuid, any(cluster) AS cluster, any(card) AS card FROM gpu_hour WHERE `+heatWindow+` GROUP BY gpu_uuid)
    GROUP BY cluster, card ORDER BY cluster, card)`)
	var got []string
	for _, m := range heatGroupRE.FindAllStringSubmatch(body, -1) {
		busy, _ := strconv.Atoi(m[4])
		idle, _ := strconv.Atoi(m[5])
		got = append(got, m[1]+" "+m[2]+" "+m[3]+" "+strconv.Itoa(busy+idle))
	}
	if strings.Join(got, ", ") != want {
		t.Errorf("heatmap groups (cluster card units held):\n%s\nSQL:\n%s", strings.Join(got, ", "), want)
	}
	units := sqlText(t, s, "SELECT uniqExact(gpu_uuid) FROM gpu_hour WHERE "+heatWindow)
	if n := len(heatCellRE.FindAllString(body, -1)); strconv.Itoa(n) != units {
		t.Errorf("%d cells, the store has %s GPU units", n, units)
	}
}

// TestHeatmapFilters checks that each filter narrows the heatmap and the GPU
// table alike, as SQL counts, and that bad values are refused.
func TestHeatmapFilters(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	inv := "(SELECT gpu_uuid, any(cluster) AS cluster, any(node) AS node, any(card) AS card FROM gpu_hour WHERE " + heatWindow + " GROUP BY gpu_uuid)"
	cluster := sqlText(t, s, "SELECT any(cluster) FROM "+inv)
	card := sqlText(t, s, "SELECT card FROM "+inv+" GROUP BY card ORDER BY count() DESC, card LIMIT 1")
	node := sqlText(t, s, "SELECT node FROM "+inv+" WHERE cluster = '"+cluster+"' ORDER BY node LIMIT 1")
	gpu := sqlText(t, s, "SELECT gpu_uuid FROM "+inv+" WHERE node = '"+node+"' ORDER BY gpu_uuid LIMIT 1")
	cases := []struct{ name, query, sql string }{
		{"cluster", "cluster=" + cluster, "cluster = '" + cluster + "'"},
		{"card", "card=" + url.QueryEscape(card), "card = '" + card + "'"},
		{"node", "cluster=" + cluster + "&node=" + node, "cluster = '" + cluster + "' AND node = '" + node + "'"},
		{"gpu", "gpu=" + url.QueryEscape(gpu), "gpu_uuid = '" + gpu + "'"},
		{"free", "state=free", "gpu_uuid NOT IN (SELECT arrayJoin(gpu_uuids) FROM jobs WHERE state = 'running')"},
		{"none", "node=no-such-node", "0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := get(t, srv, "/fleet?"+c.query, "tok-admin")
			if code != http.StatusOK {
				t.Fatalf("%s: %d", c.query, code)
			}
			want := sqlText(t, s, "SELECT count() FROM "+inv+" WHERE "+c.sql)
			cells := strconv.Itoa(len(heatCellRE.FindAllString(body, -1)))
			units, pager := heatUnitsRE.FindStringSubmatch(body), pagerRE.FindStringSubmatch(body)
			if units == nil || pager == nil || cells != want || units[1] != want || pager[1] != want {
				t.Errorf("%s: %s cells, heatmap %v, table %v; SQL %s", c.query, cells, units, pager, want)
			}
		})
	}
	t.Run("states and healths add up", func(t *testing.T) {
		_, all, _ := get(t, srv, "/fleet", "tok-admin")
		total := heatUnitsRE.FindStringSubmatch(all)[1]
		for _, param := range []struct {
			name   string
			values []string
		}{{"state", fleetStates}, {"health", fleetHealths}} {
			sum := 0
			for _, v := range param.values {
				code, body, _ := get(t, srv, "/fleet?"+param.name+"="+v, "tok-admin")
				if code != http.StatusOK {
					t.Fatalf("%s=%s: %d", param.name, v, code)
				}
				n, _ := strconv.Atoi(heatUnitsRE.FindStringSubmatch(body)[1])
				sum += n
			}
			if strconv.Itoa(sum) != total {
				t.Errorf("the %s filters select %d GPU units in all, the fleet has %s", param.name, sum, total)
			}
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, q := range []struct{ query, names string }{
			{"state=busy", "allocated, idle, free"}, {"health=sick", "ok, xid, ecc, quiet"},
		} {
			code, body, _ := get(t, srv, "/fleet?"+q.query, "tok-admin")
			name := strings.Split(q.query, "=")[0]
			if code != http.StatusBadRequest || !strings.Contains(body, name+" &#34;") || !strings.Contains(body, q.names) {
				t.Errorf("%s: %d, want 400 naming %s and %s\n%.300s", q.query, code, name, q.names, body)
			}
		}
	})
}

// TestHeatmapAccess: no token, no page; a team's viewer reads no other team's
// job or team in the heatmap; hostile values of the new filters are matched
// as they are.
func TestHeatmapAccess(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	for _, q := range []string{"node=x", "gpu=x", "state=idle", "health=xid"} {
		if code, _, _ := get(t, srv, "/fleet?"+q, ""); code != http.StatusUnauthorized {
			t.Errorf("/fleet?%s without a token: %d, want 401", q, code)
		}
	}
	code, body, _ := get(t, srv, "/fleet?per=500", "tok-vision")
	if code != http.StatusOK {
		t.Fatalf("vision's fleet: %d", code)
	}
	others := sqlText(t, s, `SELECT arrayStringConcat(groupArray(job), '|') FROM jobs WHERE state = 'running' AND team != 'vision'`)
	own := sqlText(t, s, `SELECT count() FROM jobs WHERE state = 'running' AND team = 'vision'`)
	if others == "" || own == "0" {
		t.Fatal("the simulation runs no other team's job or none of vision's: the check proves nothing")
	}
	hidden, named := 0, 0
	for _, m := range heatCellRE.FindAllStringSubmatch(body, -1) {
		title := htmlUnescape(m[1])
		if strings.Contains(title, "another team's job") {
			hidden++
		}
		if strings.Contains(title, "(vision)") {
			named++
		}
		for _, j := range strings.Split(others, "|") {
			if strings.Contains(title, " "+j+" ") {
				t.Errorf("vision's heatmap names job %s of another team: %q", j, title)
			}
		}
		for _, team := range []string{"(nlp)", "(speech)", "(recsys)", "(research)"} {
			if strings.Contains(title, team) {
				t.Errorf("vision's heatmap names another team: %q", title)
			}
		}
	}
	if hidden == 0 || named == 0 {
		t.Errorf("vision's heatmap: %d cells of other teams' jobs, %d of its own; want some of each", hidden, named)
	}
	for _, param := range []string{"node", "gpu", "state", "health"} {
		for _, v := range hostileFilters {
			for _, tok := range []string{"tok-admin", "tok-vision"} {
				code, body, _ := get(t, srv, "/fleet?"+url.Values{param: {v}}.Encode(), tok)
				if code >= 500 || engineText.MatchString(body) {
					t.Errorf("%s %s=%s: %d, want no server error nor the engine's text", tok, param, short(v), code)
				}
				if (param == "node" || param == "gpu") && len(v) < 1000 && code != http.StatusOK {
					t.Errorf("%s %s=%s: %d, want 200 (matched as it is)", tok, param, short(v), code)
				}
			}
		}
	}
}
