package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gpupool/gpupool/auth"
)

// cookieName holds the token given on the login page.
const cookieName = "gpupool_console"

// readers may open the console at all; a team role then sees its own team's
// jobs, findings, actions and costs only.
var readers = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator, auth.RoleFinance, auth.RoleAnyTeam)

// viewer is who is looking, and what of the pool they may see.
type viewer struct {
	id auth.Identity
	// all sees every team's jobs and costs (admin, operator, finance).
	all bool
	// teams are the team roles' teams (when not all).
	teams []string
}

func viewerOf(id auth.Identity) viewer {
	v := viewer{id: id, all: id.Has(auth.RoleAdmin) || id.Has(auth.RoleOperator) || id.Has(auth.RoleFinance)}
	if !v.all {
		v.teams = id.Teams()
		if v.teams == nil {
			v.teams = []string{}
		}
	}
	return v
}

// sees reports whether the viewer may see a team's jobs and costs.
func (v viewer) sees(team string) bool { return v.all || slices.Contains(v.teams, team) }

// scope is the team filter of the viewer's queries: nil for every team.
func (v viewer) scope() []string {
	if v.all {
		return nil
	}
	return v.teams
}

// Name is the viewer as the page header shows it.
func (v viewer) Name() string { return auth.Describe(v.id) }

// withCookieToken copies the login cookie into the Authorization header of a
// request that has none, so the guard sees one credential either way.
func withCookieToken(r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		return
	}
	if ck, err := r.Cookie(cookieName); err == nil && ck.Value != "" {
		r.Header.Set("Authorization", "Bearer "+ck.Value)
	}
}

// authenticated sends a browser without a valid credential to the login page,
// and serves next, through the guard (rate limits, the identity in the context),
// to the console's readers; other roles get 403.
func (c *Console) authenticated(next http.Handler) http.Handler {
	guarded := c.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.FromContext(r.Context())
		if !readers(id) {
			c.denied(w, r, auth.Describe(id)+" may not open the console (roles: admin, operator, finance or team:<name>)")
			return
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		withCookieToken(r)
		if _, err := c.guard.Authenticate(r); err != nil && wantsHTML(r) && !errors.Is(err, auth.ErrUnavailable) {
			q := url.Values{"next": {r.URL.RequestURI()}}
			if !errors.Is(err, auth.ErrNoCredential) {
				q.Set("error", "refused") // a code, not text: the login page is linkable
			}
			http.Redirect(w, r, "/login?"+q.Encode(), http.StatusSeeOther)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// wantsHTML is a browser's page request (not a script's fetch or a download).
func wantsHTML(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get(fragmentHeader) == "" && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// sameOrigin is the CSRF check of the console's POSTs: a browser sends Origin
// (or Sec-Fetch-Site) on every cross-site POST, which must name this host.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser's cross-site request: those carry Origin
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// localPath is next when it is a path on this console, else /fleet: the login
// page never redirects to another site. A path on this console starts with one
// "/" and holds no backslash and no control character: browsers read "/\" as
// "//" and drop tabs and newlines from a URL ("/<tab>/evil.example" is
// "//evil.example" to them), and http.Redirect cleans the path ("/./\x"
// becomes "/\x"), so a check of the first two bytes alone is not enough.
func localPath(next string) string {
	const home = "/fleet"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || unicode.IsControl(r) || r == utf8.RuneError }) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	return next
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	d := loginData{Next: localPath(r.URL.Query().Get("next"))}
	if r.URL.Query().Get("error") == "refused" {
		d.Error = "your token was refused (unknown, revoked or expired): log in again"
	}
	c.render(w, r, http.StatusOK, "login", viewer{}, d)
}

type loginData struct{ Next, Error string }

// login checks the token given in the form and keeps it in the cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-site login refused", http.StatusForbidden)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "login: "+err.Error(), http.StatusBadRequest)
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	next := localPath(r.PostForm.Get("next"))
	check := r.Clone(r.Context())
	check.Header = http.Header{"Authorization": {"Bearer " + tok}}
	id, err := c.guard.Authenticate(check)
	if err == nil && !readers(id) {
		err = errors.New(auth.Describe(id) + " may not open the console")
	}
	if tok == "" || err != nil {
		msg := "give a token"
		if err != nil && tok != "" {
			msg = "the token was refused: " + err.Error()
		}
		c.render(w, r, http.StatusUnauthorized, "login", viewer{}, loginData{Next: next, Error: msg})
		return
	}
	c.log.Info("console login", "identity", id.String())
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/", HttpOnly: true, Secure: c.cfg.SecureCookie,
		SameSite: http.SameSiteStrictMode, MaxAge: 12 * 3600})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-site logout refused", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: c.cfg.SecureCookie,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// denied answers 403 with a page saying why.
func (c *Console) denied(w http.ResponseWriter, r *http.Request, why string) {
	c.log.Info("console page forbidden", "path", r.URL.Path, "why", why)
	c.render(w, r, http.StatusForbidden, "error", viewer{}, errorData{Status: http.StatusForbidden, Message: why})
}

type errorData struct {
	Status  int
	Message string
}

// viewer is the request's viewer (the guard has put its identity in the context).
func (c *Console) viewer(r *http.Request) viewer {
	id, _ := auth.FromContext(r.Context())
	return viewerOf(id)
}

// isClientError is an error of the request's own parameters.
func isClientError(err error) bool { return errors.Is(err, errNotFound) }
