package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// testConsole serves a console over s (and sched, may be nil).
func testConsole(t *testing.T, s Store, sched Scheduler) *httptest.Server {
	t.Helper()
	opts := []Option{WithPolicies(scheduler.DefaultPolicies())}
	if sched != nil {
		opts = append(opts, WithScheduler(sched))
	}
	cfg := DefaultConfig()
	cfg.Refresh = time.Second // the browser test waits for a live refresh
	c, err := New(cfg, s, newGuard(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// get fetches path with token as a bearer ("" for none), returning the status
// and body; redirects are not followed.
func get(t *testing.T, srv *httptest.Server, path, token string, header ...string) (int, string, http.Header) {
	t.Helper()
	return send(t, srv, http.MethodGet, path, token, nil, header...)
}

// post sends form to path as a browser's form post would, like get otherwise.
func post(t *testing.T, srv *httptest.Server, path, token string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	return send(t, srv, http.MethodPost, path, token, form, header...)
}

func send(t *testing.T, srv *httptest.Server, method, path, token string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Header
}

// loginClient logs in through the form and returns a client holding the cookie.
func loginClient(t *testing.T, srv *httptest.Server, token string) (*http.Client, int) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm(srv.URL+"/login", url.Values{"token": {token}, "next": {"/jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return hc, resp.StatusCode
}

func TestAccess(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	job := firstJob(t, s, "team != 'vision'")
	visionJob := firstJob(t, s, "team = 'vision'")

	t.Run("no token: login page or 401", func(t *testing.T) {
		code, _, h := get(t, srv, "/fleet", "", "Accept", "text/html")
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login?next=%2Ffleet") {
			t.Errorf("browser without a token: %d Location %q, want 303 to /login", code, h.Get("Location"))
		}
		if code, _, _ := get(t, srv, "/fleet", ""); code != http.StatusUnauthorized {
			t.Errorf("script without a token: %d, want 401", code)
		}
		if code, _, _ := get(t, srv, "/chargeback.csv", ""); code != http.StatusUnauthorized {
			t.Errorf("CSV without a token: %d, want 401", code)
		}
		if code, _, _ := get(t, srv, "/fleet", "tok-wrong"); code != http.StatusUnauthorized {
			t.Errorf("unknown token: %d, want 401", code)
		}
	})
	t.Run("a role that is no reader: 403", func(t *testing.T) {
		if code, _, _ := get(t, srv, "/fleet", "tok-agent"); code != http.StatusForbidden {
			t.Errorf("agent: %d, want 403", code)
		}
		if _, code := loginClient(t, srv, "tok-agent"); code != http.StatusUnauthorized {
			t.Errorf("agent login: %d, want 401 (refused)", code)
		}
	})
	t.Run("team:vision cannot see another team's job, nor tell it exists", func(t *testing.T) {
		code, body, _ := get(t, srv, "/jobs/"+escapePath(job), "tok-vision")
		if code != http.StatusNotFound {
			t.Errorf("vision opening %s: %d, want 404 (as for no job)\n%s", job, code, body)
		}
		// The answer is the one for a job that does not exist, but for the ID itself.
		const madeUp = "sched/nlp/no-such-job"
		ncode, nbody, _ := get(t, srv, "/jobs/"+escapePath(madeUp), "tok-vision")
		if ncode != code || strings.ReplaceAll(nbody, madeUp, job) != body {
			t.Errorf("another team's job answers %d, a made-up one %d; bodies differ beyond the ID:\n%s\n---\n%s", code, ncode, body, nbody)
		}
		if code, _, _ := get(t, srv, "/jobs/"+escapePath(visionJob), "tok-vision"); code != http.StatusOK {
			t.Errorf("vision opening its own job %s: %d, want 200", visionJob, code)
		}
		if code, _, _ := get(t, srv, "/jobs/"+escapePath(job), "tok-admin"); code != http.StatusOK {
			t.Errorf("admin opening %s: %d, want 200", job, code)
		}
		_, body, _ = get(t, srv, "/jobs", "tok-vision")
		if strings.Contains(body, job) || !strings.Contains(body, visionJob) {
			t.Errorf("vision's job list: has %s %v, has its own %s %v", job, strings.Contains(body, job), visionJob, strings.Contains(body, visionJob))
		}
	})
	t.Run("login sets an HttpOnly SameSite=Strict cookie", func(t *testing.T) {
		hc, code := loginClient(t, srv, "tok-vision")
		if code != http.StatusSeeOther {
			t.Fatalf("login: %d, want 303", code)
		}
		u, _ := url.Parse(srv.URL)
		if len(hc.Jar.Cookies(u)) != 1 {
			t.Fatalf("cookies after login: %v", hc.Jar.Cookies(u))
		}
		resp, err := hc.Get(srv.URL + "/jobs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("jobs with the cookie: %d", resp.StatusCode)
		}
		// The Set-Cookie header itself.
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/login", strings.NewReader("token=tok-vision"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err = http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ck := resp.Header.Get("Set-Cookie")
		if !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
			t.Errorf("Set-Cookie %q: want HttpOnly and SameSite=Strict", ck)
		}
	})
	t.Run("cross-site login refused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/login", strings.NewReader("token=tok-admin"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site login: %d, want 403", resp.StatusCode)
		}
	})
	t.Run("finance cannot change anything", func(t *testing.T) {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(m, srv.URL+"/jobs/"+escapePath(job), nil)
			req.Header.Set("Authorization", "Bearer tok-finance")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("finance %s job: %d, want 405 (the console changes nothing)", m, resp.StatusCode)
			}
		}
		if code, _, _ := get(t, srv, "/chargeback", "tok-finance"); code != http.StatusOK {
			t.Errorf("finance chargeback: %d, want 200", code)
		}
	})
	t.Run("every page renders", func(t *testing.T) {
		for _, p := range []string{"/fleet", "/pools", "/jobs", "/jobs?state=running", "/jobs/" + escapePath(visionJob), "/findings", "/findings?state=all",
			"/actions", "/chargeback", "/chargeback?period=day&at=2026-11-30", "/chargeback?period=week", "/capacity", "/capacity?add=8&card=H100-80GB",
			"/chargeback.csv", "/chargeback.parquet"} {
			for _, tok := range []string{"tok-admin", "tok-vision"} {
				code, body, _ := get(t, srv, p, tok)
				if code != http.StatusOK {
					t.Errorf("%s as %s: %d\n%.600s", p, tok, code, body)
				}
			}
		}
	})
}

// firstJob is a job key of the store matching cond (a constant condition).
func firstJob(t *testing.T, s Store, cond string) string {
	t.Helper()
	res, err := s.Query(context.Background(), "SELECT job FROM jobs WHERE start_time IS NOT NULL AND "+cond+" ORDER BY job LIMIT 1", nil)
	if err != nil || len(res.Rows) == 0 {
		t.Fatalf("no job where %s: %v", cond, err)
	}
	return res.Rows[0][0].(string)
}
