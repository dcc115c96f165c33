package console

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The fleet's heatmap: one cell per GPU unit, a row per node, the nodes grouped
// by cluster and card type. A cell's colour is the GPU's mean SM activity over
// the last 24 hours (ten steps; grey stripes: no measurement); its shape is its state
// now (square: a job holds it and uses it, square with an orange bar: a job
// holds it idle, round: no job); its outline its health (red: an XID error now
// or in the last 24 hours, double red: an ECC error now, dashed grey: no
// samples in the last 5 minutes). It is drawn on the server as plain HTML (a
// link per cell, its tooltip the cell's title) so that 10,000 GPUs are one
// response of about 1.5 MB and no script.

// GPU health, as the heatmap and the health filter name it.
const (
	healthOK    = "ok"
	healthXID   = "xid"
	healthECC   = "ecc"
	healthQuiet = "quiet"
)

// fleetStates and fleetHealths are the values of the state and health
// filters.
var (
	fleetStates  = []string{"allocated", "idle", "free"}
	fleetHealths = []string{healthOK, healthXID, healthECC, healthQuiet}
)

// eccXIDs are the XIDs that report an ECC error (as migration 0010's gpu_ecc).
var eccXIDs = []int64{48, 63, 64, 92, 94, 95}

// healthOf is a GPU's health: an ECC error now, another XID now or in the
// last 24 hours, no samples in the last 5 minutes, or ok.
func healthOf(g fleetGPU) string {
	switch {
	case slices.Contains(eccXIDs, g.XID):
		return healthECC
	case g.XID != 0 || g.XID24 > 0:
		return healthXID
	case !g.Reporting:
		return healthQuiet
	}
	return healthOK
}

// heatNode is a node's row of cells, in GPU index order.
type heatNode struct {
	Cluster, Node string
	GPUs          []fleetGPU
}

// heatGroup is the GPUs of one cluster and card type.
type heatGroup struct {
	Cluster, Card string
	Nodes         []heatNode
	Units         int
	// Mean is the mean of the GPUs' 24-hour SM activity (NaN: none measured).
	Mean                  float64
	Allocated, Idle, Free int
	// Health counts the GPUs by health (healthOK, healthXID, …).
	Health map[string]int
	// sum and measured make Mean: the activities' sum, the GPUs measured.
	sum      float64
	measured int
}

// heatmap is the filtered GPUs of the fleet page, grouped.
type heatmap struct {
	Groups []heatGroup
	Units  int
}

// buildHeatmap groups gpus by cluster and card type, then node; it keeps gpus'
// order untouched.
func buildHeatmap(gpus []fleetGPU) heatmap {
	sorted := slices.Clone(gpus)
	slices.SortFunc(sorted, func(a, b fleetGPU) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Card, b.Card), cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Index, b.Index), cmp.Compare(a.UUID, b.UUID))
	})
	h := heatmap{Units: len(sorted)}
	for _, g := range sorted {
		if n := len(h.Groups); n == 0 || h.Groups[n-1].Cluster != g.Cluster || h.Groups[n-1].Card != g.Card {
			h.Groups = append(h.Groups, heatGroup{Cluster: g.Cluster, Card: g.Card, Health: map[string]int{}})
		}
		gr := &h.Groups[len(h.Groups)-1]
		if n := len(gr.Nodes); n == 0 || gr.Nodes[n-1].Node != g.Node {
			gr.Nodes = append(gr.Nodes, heatNode{Cluster: g.Cluster, Node: g.Node})
		}
		nd := &gr.Nodes[len(gr.Nodes)-1]
		nd.GPUs = append(nd.GPUs, g)
		gr.add(g)
	}
	for i := range h.Groups {
		h.Groups[i].finish()
	}
	return h
}

func (gr *heatGroup) add(g fleetGPU) {
	gr.Units++
	switch g.State {
	case "allocated":
		gr.Allocated++
	case "idle":
		gr.Idle++
	default:
		gr.Free++
	}
	gr.Health[g.Health]++
	if !math.IsNaN(g.Act24) {
		gr.sum += g.Act24
		gr.measured++
	}
}

// finish sets the group's mean activity.
func (gr *heatGroup) finish() {
	gr.Mean = math.NaN()
	if gr.measured > 0 {
		gr.Mean = gr.sum / float64(gr.measured)
	}
}

// heatClass is a cell's classes: its colour (u0…u9, un: not measured), its
// state (i: held idle, f: free) and its health (x, e, q).
func heatClass(g fleetGPU) string {
	c := "un"
	if !math.IsNaN(g.Act24) {
		c = "u" + strconv.Itoa(min(9, max(0, int(g.Act24*10))))
	}
	switch g.State {
	case "idle":
		c += " i"
	case "free":
		c += " f"
	}
	switch g.Health {
	case healthXID:
		c += " x"
	case healthECC:
		c += " e"
	case healthQuiet:
		c += " q"
	}
	return c
}

// heatTitle is a cell's tooltip. Another team's job is named as such only, as
// the GPU table does.
func heatTitle(g fleetGPU, pos int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s GPU %d · %s", g.Node, pos, g.Card)
	if g.MIG != "" {
		b.WriteString(" " + g.MIG)
	}
	b.WriteString(" · " + stateText[g.State])
	switch {
	case g.Hidden:
		b.WriteString(" · another team's job")
	case g.Job != "":
		b.WriteString(" · " + g.Job + " (" + g.Team + ")")
	}
	fmt.Fprintf(&b, " · SM %s 24 h, %s now", heatPct(g.Act24), heatPct(g.SMNow))
	if g.Health != healthOK {
		b.WriteString(" · " + healthText[g.Health])
	}
	return b.String()
}

// stateText is a state as a cell's tooltip and the legend name it.
var stateText = map[string]string{"allocated": "busy", "idle": "held, idle", "free": "free"}

var healthText = map[string]string{
	healthOK: "ok", healthXID: "XID error", healthECC: "ECC error", healthQuiet: "no samples (5 min)",
}

func heatPct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v*100, 'f', 0, 64) + " %"
}

// heatLink is the fleet page's URL with the filters in set changed (the rest
// of q kept, the GPU table back on its first page).
func heatLink(q url.Values, set ...string) string {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	out.Del("page")
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			out.Del(set[i])
		} else {
			out.Set(set[i], set[i+1])
		}
	}
	return "/fleet?" + out.Encode()
}

// HTML draws the heatmap: a heading per group (its GPU units, mean activity
// and counts, a link that narrows the page to it), then its nodes, each a
// label (a link to the node) and its cells (each a link to its GPU).
func (h heatmap) HTML(q url.Values) template.HTML {
	var b strings.Builder
	e := template.HTMLEscapeString
	fmt.Fprintf(&b, `<div id="heatmap" class="heatmap" data-units="%d">`, h.Units)
	for _, gr := range h.Groups {
		fmt.Fprintf(&b, `<section class="hgroup" data-cluster="%s" data-card="%s" data-units="%d"><h3><a href="%s">%s · %s</a> <span class="hsum">%s GPU units on %s nodes · mean SM %s (24 h) · <span class="busy">%d busy</span> · <span class="idle">%d idle</span> · <span class="free">%d free</span>%s</span></h3><div class="hnodes">`,
			e(gr.Cluster), e(gr.Card), gr.Units, e(heatLink(q, "cluster", gr.Cluster, "card", gr.Card)), e(gr.Cluster), e(gr.Card),
			thousands(gr.Units), thousands(len(gr.Nodes)), heatPct(gr.Mean), gr.Allocated, gr.Idle, gr.Free, healthSummary(gr.Health))
		for _, nd := range gr.Nodes {
			fmt.Fprintf(&b, `<div class="hn"><a class="hl" href="%s" title="%s / %s">%s</a><span class="cells">`,
				e(heatLink(q, "cluster", nd.Cluster, "node", nd.Node, "gpu", "")), e(nd.Cluster), e(nd.Node), e(nd.Node))
			for i, g := range nd.GPUs {
				pos := g.Index
				if pos < 0 {
					pos = i
				}
				// The href unquoted: a query-escaped value holds no space, quote or =.
				fmt.Fprintf(&b, `<a class="%s" href=?gpu=%s title="%s"></a>`, heatClass(g), url.QueryEscape(g.UUID), e(heatTitle(g, pos)))
			}
			b.WriteString(`</span></div>`)
		}
		b.WriteString(`</div></section>`)
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

// healthSummary is a group's GPUs that are not ok, by health.
func healthSummary(n map[string]int) string {
	var out string
	for _, k := range fleetHealths[1:] {
		if n[k] > 0 {
			out += fmt.Sprintf(` · <span class="h-%s">%d %s</span>`, k, n[k], healthText[k])
		}
	}
	return out
}
