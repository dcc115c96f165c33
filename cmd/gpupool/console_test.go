package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// syncBuffer is a bytes.Buffer safe to read while the demo writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemoServesConsole runs the demo with its console: it prints the console's
// URL and a token, the console shows the demo's fleet to that token (and sends a
// browser without one to the login page), and after the summary the demo prints
// them again and keeps serving until interrupted.
func TestDemoServesConsole(t *testing.T) {
	g := &Globals{DataDir: t.TempDir(), CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	out := &syncBuffer{}
	d := &DemoCmd{Duration: 2 * time.Hour, Speed: 0, Clusters: 1, Nodes: 2, GPUs: 4, Console: true, ConsoleAddr: "127.0.0.1:0", out: out}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(g, ctx) }()
	line := regexp.MustCompile(`Console: (http://\S+)\s+token: (gpupool_\S+)`)
	var url, token string
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("the demo ended before serving its console: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if m := line.FindStringSubmatch(out.String()); m != nil {
			url, token = m[1], m[2]
		}
	}
	for !strings.Contains(out.String(), "The console keeps serving") {
		select {
		case err := <-done:
			t.Fatalf("the demo ended instead of serving its console: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if n := len(line.FindAllString(out.String(), -1)); n != 2 {
		t.Errorf("the console's URL and token printed %d times, want at the start and at the end:\n%s", n, out.String())
	}
	get := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/fleet", nil)
		req.Header.Set("Accept", "text/html")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get(""); code != http.StatusSeeOther {
		t.Errorf("the demo's console without a token: %d, want 303 to the login page", code)
	}
	code, body := get(token)
	if code != http.StatusOK || !regexp.MustCompile(`id="units">([89]|[1-9][0-9]+)<`).MatchString(body) {
		t.Errorf("the demo's console with its token: %d, want the fleet's 8 GPUs or more\n%.1500s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the demo after Ctrl-C: %v", err)
	}
}

// TestConsoleCommand serves `gpupool console` over an existing embedded store:
// a team token sees every page of the empty store, a request without a token gets 401, and a team
// token cannot open another team's job.
func TestConsoleCommand(t *testing.T) {
	dir := t.TempDir()
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	if err := (&MigrateCmd{out: io.Discard}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	tokens := auth.TokenEntry{Name: "ana", Roles: []auth.Role{auth.TeamRole("vision")}, Hash: auth.HashToken("tok-ana")}.String() + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auth", "tokens"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	// The address from the configuration file's console section (no flag).
	g.Config = filepath.Join(dir, "gpupool.yaml")
	if err := os.WriteFile(g.Config, []byte("console:\n  listen: 127.0.0.1:0\n  refresh: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { done <- (&ConsoleCmd{out: out}).Run(g, ctx) }()
	re := regexp.MustCompile(`gpupool console: (http://\S+)`)
	var url string
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("console ended: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
	}
	get := func(path, token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/fleet", "tok-ana", http.StatusOK},
		{"/chargeback", "tok-ana", http.StatusOK},
		{"/pools", "tok-ana", http.StatusOK},
		{"/jobs", "tok-ana", http.StatusOK},
		{"/findings", "tok-ana", http.StatusOK},
		{"/actions", "tok-ana", http.StatusOK},
		{"/capacity", "tok-ana", http.StatusOK},
		{"/chargeback.csv", "tok-ana", http.StatusOK},
		{"/fleet", "", http.StatusUnauthorized},
		{"/fleet", "tok-wrong", http.StatusUnauthorized},
		{"/jobs/sched/nlp/1", "tok-ana", http.StatusNotFound},
	} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("console after Ctrl-C: %v", err)
	}
}
