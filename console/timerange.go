package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The time range is one query parameter, range, picked in the header of every
// page and carried by the navigation's links, so that moving from the jobs to
// the findings to the actions keeps the window. A page with a window of its
// own (the fleet's last 24 hours, the chargeback's period, the capacity
// page's weeks) says so beside the picker.

// timeRange is a choice of the picker.
type timeRange struct {
	Key   string
	Label string
	D     time.Duration
}

var timeRanges = []timeRange{
	{"1h", "1 hour", time.Hour},
	{"6h", "6 hours", 6 * time.Hour},
	{"24h", "24 hours", 24 * time.Hour},
	{"7d", "7 days", 7 * 24 * time.Hour},
	{"30d", "30 days", 30 * 24 * time.Hour},
	{"90d", "90 days", 90 * 24 * time.Hour},
	{"all", "all time", 0},
}

func rangeKeys() string {
	k := make([]string, len(timeRanges))
	for i, r := range timeRanges {
		k[i] = r.Key
	}
	return strings.Join(k, ", ")
}

// window is the time window a page shows: From (zero: from the start) to the
// console's now.
type window struct {
	Key   string // the range parameter ("": the page's default)
	Label string
	From  time.Time
}

// pageWindow reads the range parameter of r; def is the page's default window
// (0: all time).
func pageWindow(r *http.Request, now time.Time, def time.Duration) (window, error) {
	key := r.URL.Query().Get("range")
	d := def
	if key != "" {
		found := false
		for _, tr := range timeRanges {
			if tr.Key == key {
				d, found = tr.D, true
			}
		}
		if !found {
			return window{}, badParam("range", key, "one of "+rangeKeys())
		}
	}
	w := window{Key: key, Label: "all time", From: time.Unix(0, 0).UTC()}
	if d > 0 {
		w.From = now.Add(-d)
		w.Label = "the last " + durLabel(d)
	}
	return w, nil
}

func durLabel(d time.Duration) string {
	for _, tr := range timeRanges {
		if tr.D == d {
			return tr.Label
		}
	}
	return d.String()
}

// rangePicker is the header's picker: a link per range to this page with the
// range set (the page's other parameters kept, its page number dropped).
func rangePicker(r *http.Request) template.HTML {
	q := r.URL.Query()
	cur := q.Get("range")
	var b strings.Builder
	b.WriteString(`<div class="range" id="range"><span class="muted">Time range:</span>`)
	for _, tr := range timeRanges {
		if tr.Key == cur {
			b.WriteString(` <b data-range="` + tr.Key + `">` + tr.Key + `</b>`)
			continue
		}
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("range", tr.Key)
		nq.Del("page")
		b.WriteString(` <a data-range="` + tr.Key + `" href="` + template.HTMLEscapeString(r.URL.Path+"?"+nq.Encode()) + `">` + tr.Key + `</a>`)
	}
	if cur == "" {
		b.WriteString(` <span class="muted">(this page's default)</span>`)
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

// navQuery is what the navigation's links carry: the range picked.
func navQuery(r *http.Request) string {
	k := r.URL.Query().Get("range")
	for _, tr := range timeRanges {
		if tr.Key == k {
			return "?range=" + k
		}
	}
	return ""
}
