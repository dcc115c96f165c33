package console

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A finding's evidence is a map of the detector's figures by field name
// (sm_active_p50 0.03, mem_used_mib 1843, samples 179). The finding page shows
// each with a name a person reads and its unit: "SM activity, median 3 %",
// "Memory used 1.8 GiB", "Samples 179".

// evidenceItem is one figure as the page shows it: Num is its number, by which
// the Value column sorts.
type evidenceItem struct {
	Key, Name, Value string
	Num              float64
}

// evidenceTable is the evidence's order: by name by default. A detector writes
// a fixed, tiny set of figures (twenty at most), so the table is sorted but
// never paged. Value sorts by the figure's number, whatever its unit.
var evidenceTable = &tableDef{name: "evidence", prefix: "evidence_", id: "evidence", sort: "figure", fixed: true, cols: []sortCol{
	{Key: "figure", Label: "Figure"}, {Key: "value", Label: "Value", Num: true, Desc: true},
}}

var evidenceCmps = map[string]func(a, b evidenceItem) int{
	"figure": byStr(func(e evidenceItem) string { return e.Name }),
	"value":  byNum(func(e evidenceItem) float64 { return e.Num }),
}

// evidenceNames are the figures whose name the rules below would not say well.
var evidenceNames = map[string]string{
	"gpus":                  "GPUs",
	"samples":               "Samples",
	"tenants":               "Processes sharing the GPU (most)",
	"shared_gpus":           "GPUs shared with other processes",
	"other_jobs":            "Other jobs on the GPUs",
	"other_tenants":         "Other processes on the GPUs",
	"share_tenants":         "Jobs that could share a GPU",
	"share_frees_gpus":      "GPUs sharing would free",
	"pid":                   "Process ID",
	"end_time":              "Job ended",
	"card_mem_mib":          "The card's memory",
	"denied_mem_mib":        "Memory asked for beyond the card",
	"memory_share":          "Memory share of the GPU",
	"drop_skew_seconds":     "Skew between the GPUs' drops",
	"baseline_minutes":      "Baseline before the drop",
	"hung_minutes":          "Hung for",
	"window_minutes":        "Detection window",
	"active_threshold":      "Activity threshold",
	"price_per_gpu_hour":    "Price per GPU-hour now",
	"minutes_since_job_end": "Since the job ended",
}

// evidenceWords spell a field's words.
var evidenceWords = map[string]string{
	"sm": "SM", "dram": "DRAM", "pcie": "PCIe", "gpu": "GPU", "gpus": "GPUs", "mem": "memory", "mib": "",
	"w": "", "per": "per", "s": "", "fraction": "", "p10": "", "p50": "", "p90": "", "p95": "", "max": "",
}

// evidenceStats name a field's statistic (its last word).
var evidenceStats = map[string]string{
	"p10": "10th percentile", "p50": "median", "p90": "90th percentile", "p95": "95th percentile", "max": "peak",
}

// readEvidence turns a finding's evidence into named figures with units,
// sorted by name; money is in currency.
func readEvidence(ev map[string]float64, currency string) []evidenceItem {
	out := make([]evidenceItem, 0, len(ev))
	for k, v := range ev {
		out = append(out, evidenceItem{Key: k, Name: evidenceName(k), Value: evidenceValue(k, v, currency), Num: v})
	}
	slices.SortFunc(out, func(a, b evidenceItem) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// evidenceName is a field's name in words: sm_active_p50 → "SM active, median".
func evidenceName(key string) string {
	if n, ok := evidenceNames[key]; ok {
		return n
	}
	words := strings.Split(key, "_")
	stat := ""
	if s, ok := evidenceStats[words[len(words)-1]]; ok {
		stat, words = s, words[:len(words)-1]
	}
	var out []string
	for _, w := range words {
		if sp, ok := evidenceWords[w]; ok {
			if sp != "" {
				out = append(out, sp)
			}
			continue
		}
		out = append(out, w)
	}
	name := strings.Join(out, " ")
	switch {
	case strings.HasSuffix(key, "_fraction") && !strings.Contains(name, "share"):
		name += " (share of the time)"
	case strings.Contains(key, "bytes_per_s"):
		name = strings.TrimSuffix(name, " bytes per")
	}
	if name == "" {
		name = key
	}
	name = strings.ToUpper(name[:1]) + name[1:]
	if stat != "" {
		name += ", " + stat
	}
	return name
}

// evidenceValue is a figure with its unit, by the field's name.
func evidenceValue(key string, v float64, currency string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	switch {
	case key == "end_time":
		if v > 1e9 {
			return time.Unix(int64(v), 0).UTC().Format("2006-01-02 15:04") + " UTC"
		}
	case strings.Contains(key, "price") || strings.Contains(key, "savings"):
		unit := currency
		if unit == "" {
			unit = "(price units)"
		}
		if strings.Contains(key, "per_gpu_hour") {
			unit += " per GPU-hour"
		} else if strings.HasSuffix(key, "per_day") {
			unit += " per day"
		} else if strings.HasSuffix(key, "per_month") {
			unit += " per month"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + " " + unit
	case strings.HasSuffix(key, "_mib"):
		return mib(v)
	case strings.Contains(key, "bytes_per_s"):
		return bytesPerSecond(v)
	case strings.HasSuffix(key, "_minutes"):
		return minutesText(v)
	case strings.HasSuffix(key, "_seconds"):
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	case strings.Contains(key, "power_w") || strings.HasSuffix(key, "_w"):
		return strconv.FormatFloat(v, 'f', 0, 64) + " W"
	case strings.Contains(key, "fraction") || strings.Contains(key, "active") || strings.Contains(key, "share") ||
		strings.Contains(key, "util") || key == "active_threshold":
		if v <= 1.5 {
			return pctText(v)
		}
	case key == "gpus" || strings.HasSuffix(key, "_gpus"):
		return countText(v, "GPU", "GPUs")
	case key == "samples":
		return countText(v, "sample", "samples")
	case key == "pid":
		return strconv.FormatFloat(v, 'f', 0, 64)
	case strings.HasSuffix(key, "per_day"):
		return strconv.FormatFloat(v, 'f', 1, 64) + " per day"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e12 {
		return thousands(int(v))
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func pctText(v float64) string {
	p := v * 100
	if p != 0 && math.Abs(p) < 10 {
		return strconv.FormatFloat(p, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + " %"
}

func countText(v float64, one, many string) string {
	if v == 1 {
		return "1 " + one
	}
	return thousands(int(math.Round(v))) + " " + many
}

// mib writes mebibytes, as GiB from 1 GiB up.
func mib(v float64) string {
	if math.Abs(v) >= 1024 {
		return strconv.FormatFloat(v/1024, 'f', 1, 64) + " GiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " MiB"
}

func bytesPerSecond(v float64) string {
	for _, u := range []struct {
		f    float64
		name string
	}{{1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}} {
		if math.Abs(v) >= u.f {
			return strconv.FormatFloat(v/u.f, 'f', 1, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " B/s"
}

// minutesText writes minutes as "45 min" or "3 h 20 min".
func minutesText(v float64) string {
	m := int(math.Round(v))
	if m < 120 {
		return strconv.Itoa(m) + " min"
	}
	if m%60 == 0 {
		return strconv.Itoa(m/60) + " h"
	}
	return strconv.Itoa(m/60) + " h " + strconv.Itoa(m%60) + " min"
}
