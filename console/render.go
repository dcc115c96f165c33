package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/auth"
)

//go:embed web
var webFS embed.FS

// fragmentHeader asks for a page's content only: the live pages' script sends it.
const fragmentHeader = "X-Console-Fragment"

// Sentinel errors of a page's build, answered 404 and 403.
var (
	errNotFound  = errors.New("not found")
	errForbidden = errors.New("forbidden")
)

// pageDef is one page: its route, its template and what fills it.
type pageDef struct {
	pattern, name, title string
	// live pages reload their content every Config.Refresh.
	live bool
	// ownWindow says what window a page that ignores the time range shows
	// ("": it uses the range).
	ownWindow string
	build     func(ctx context.Context, r *http.Request, v viewer) (any, error)
}

func (c *Console) pages() []pageDef {
	return []pageDef{
		{"GET /fleet", "fleet", "Fleet", true, "this page: now, and the last 24 hours", c.fleetPage},
		{"GET /pools", "pools", "Pools and queues", true, "", c.poolsPage},
		{"GET /jobs", "jobs", "Jobs", true, "", c.jobsPage},
		{"GET /jobs/{job...}", "job", "Job", true, "this page: the job's run", c.jobPage},
		{"GET /findings", "findings", "Findings", true, "", c.findingsPage},
		{"GET /findings/{id}", "finding", "Finding", false, "this page: the finding's episode", c.findingPage},
		{"GET /actions", "actions", "Actions", true, "", c.actionsPage},
		{"GET /chargeback", "chargeback", "Chargeback", false, "this page: the period picked below", c.chargebackPage},
		{"GET /capacity", "capacity", "Capacity", false, "this page: the 8 weeks before now, forecast 4 weeks ahead", c.capacityPage},
	}
}

// layoutData is what the layout renders around a page.
type layoutData struct {
	Title, Nav string
	Viewer     viewer
	LoggedIn   bool
	Live       bool
	RefreshMs  int64
	Now        time.Time
	Data       any
	// Picker is the time-range picker; NavQuery what the navigation's links
	// carry (the range picked); OwnWindow what a page that ignores it shows.
	Picker    template.HTML
	NavQuery  string
	OwnWindow string
}

var funcs = template.FuncMap{
	"pct": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v*100, 'f', 0, 64) + " %"
	},
	"hours": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"num":   func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"int":   func(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', 0, 64) },
	"money": money,
	"moneyp": func(v *float64, cur string) string {
		if v == nil {
			return "unpriced"
		}
		if cur == "" { // priced, with nothing billed (a period with no jobs of its own): the report's 0.00
			return strconv.FormatFloat(*v, 'f', 2, 64)
		}
		return money(*v, cur)
	},
	"fmtTime": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"ptime": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"dur": func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		return d.Round(time.Minute).String()
	},
	"jobURL": func(job string) string { return "/jobs/" + escapePath(job) },
	"findingURL": func(id string, ep uint32) string {
		return fmt.Sprintf("/findings/%s?episode=%d", url.PathEscape(id), ep)
	},
	"join": strings.Join,
	"dash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"sel":   func(a, b string) bool { return a == b },
	"deref": func(v *float64) float64 { return *v },
	// optPct and optNum show a figure that may be missing ("–": none).
	"optPct": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
	},
	"optNum": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}

// money formats an amount in a currency; "–" with none (unpriced).
func money(v float64, cur string) string {
	if cur == "" || math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + cur
}

// escapePath escapes each segment of a job key (sched/vision/12/2) for a URL.
func escapePath(s string) string {
	parts := strings.Split(s, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

var templates = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	names, err := fs.Glob(webFS, "web/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "web/"), ".html")
		if name == "layout" || name == "parts" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(webFS, "web/layout.html", "web/parts.html", n))
	}
	return out
}()

// render writes a page: the layout around it, or with the fragment header its
// content only.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v viewer, data any) {
	c.renderPage(w, r, status, pageDef{name: name, title: strings.ToUpper(name[:1]) + name[1:]}, v, data)
}

func (c *Console) renderPage(w http.ResponseWriter, r *http.Request, status int, p pageDef, v viewer, data any) {
	t := templates[p.name]
	if t == nil {
		http.Error(w, "console: no template "+p.name, http.StatusInternalServerError)
		return
	}
	ld := layoutData{Title: p.title, Nav: p.name, Viewer: v, LoggedIn: v.id.Name != "", Live: p.live,
		RefreshMs: c.cfg.Refresh.Milliseconds(), Data: data}
	if ld.LoggedIn {
		ld.Now = c.now(r.Context())
		ld.Picker, ld.NavQuery, ld.OwnWindow = rangePicker(r), navQuery(r), p.ownWindow
	}
	tmpl := "layout"
	if r.Header.Get(fragmentHeader) != "" {
		tmpl = "content"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, ld); err != nil {
		c.log.Error("console render failed", "page", p.name, "err", err)
		http.Error(w, internalErrorMessage, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// internalErrorMessage is what a viewer reads of a failure that is not the
// request's own (the store's or the console's): the details are in the log.
const internalErrorMessage = "the console could not build this page (an internal error; its details are in the console's log)"

// page serves one page to the identity the guard put into the context.
func (c *Console) page(p pageDef) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.FromContext(r.Context())
		v := viewerOf(id)
		// The time range is checked on every page, those that do not use it too.
		_, err := pageWindow(r, time.Time{}, 0)
		var data any
		if err == nil {
			data, err = p.build(r.Context(), r, v)
		}
		switch {
		case errors.Is(err, errForbidden):
			c.log.Info("console page forbidden", "path", r.URL.Path, "identity", id.String())
			c.renderPage(w, r, http.StatusForbidden, pageDef{name: "error", title: "Forbidden"}, v,
				errorData{Status: http.StatusForbidden, Message: err.Error()})
		case errors.Is(err, errBadRequest):
			c.renderPage(w, r, http.StatusBadRequest, pageDef{name: "error", title: "Bad request"}, v,
				errorData{Status: http.StatusBadRequest, Message: err.Error()})
		case errors.Is(err, errNotFound):
			c.renderPage(w, r, http.StatusNotFound, pageDef{name: "error", title: "Not found"}, v,
				errorData{Status: http.StatusNotFound, Message: err.Error()})
		case err != nil:
			// The error names the store's query and its engine's exception: the
			// log keeps it, the viewer gets a message that says nothing of either.
			c.log.Warn("console page failed", "path", r.URL.Path, "identity", id.String(), "err", err)
			c.renderPage(w, r, http.StatusInternalServerError, pageDef{name: "error", title: "Error"}, v,
				errorData{Status: http.StatusInternalServerError, Message: internalErrorMessage})
		default:
			c.renderPage(w, r, http.StatusOK, p, v, data)
		}
	})
}

func staticHandler() http.Handler {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		panic(err)
	}
	fsrv := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		fsrv.ServeHTTP(w, r)
	})
}
