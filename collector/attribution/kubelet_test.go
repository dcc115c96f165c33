package attribution

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

func newTestKubeletClient(t *testing.T, k *kubeletServer, clock *fakeClock, mutate func(*Config)) *kubeletClient {
	t.Helper()
	cfg := testConfig()
	k.configure(&cfg)
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := newKubeletClient(cfg, nil, clock.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKubeletClient(t *testing.T) {
	k := newKubeletServer(t)
	clock := newFakeClock()
	c := newTestKubeletClient(t, k, clock, nil)
	ctx := t.Context()

	pod, err := c.lookup(ctx, podA)
	if err != nil {
		t.Fatal(err)
	}
	if pod == nil || pod.Namespace != "ml-training" || pod.Name != "train-resnet-0" ||
		pod.Labels["gpupool.io/team"] != "vision" || pod.StartMs != ms("2026-01-02T08:00:05Z") {
		t.Fatalf("pod %+v", pod)
	}
	if pod, _ := c.lookup(ctx, podC); pod == nil || pod.StartMs != ms("2026-01-03T10:00:00Z") {
		t.Errorf("pod without startTime: %+v, want creationTimestamp as start", pod)
	}
	if n := k.requests.Load(); n != 1 {
		t.Fatalf("%d requests for two known pods, want 1", n)
	}

	t.Run("unknown pod refreshes at most once per min refresh", func(t *testing.T) {
		for range 3 {
			pod, err := c.lookup(ctx, podE)
			if pod != nil || err != nil {
				t.Fatalf("unknown pod: %+v, %v; want nil, nil", pod, err)
			}
		}
		if n := k.requests.Load(); n != 1 {
			t.Fatalf("%d requests, want 1 (the list is younger than kubelet_min_refresh)", n)
		}
		clock.Advance(5 * time.Second)
		_, _ = c.lookup(ctx, podE)
		_, _ = c.lookup(ctx, podE)
		if n := k.requests.Load(); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
	})
	t.Run("stale list is refreshed after cache_ttl", func(t *testing.T) {
		clock.Advance(time.Minute)
		if _, err := c.lookup(ctx, podA); err != nil {
			t.Fatal(err)
		}
		if n := k.requests.Load(); n != 3 {
			t.Fatalf("%d requests, want 3", n)
		}
	})
	t.Run("failed refresh keeps serving known pods", func(t *testing.T) {
		k.fail.Store(true)
		t.Cleanup(func() { k.fail.Store(false) })
		clock.Advance(time.Minute)
		if pod, err := c.lookup(ctx, podA); err != nil || pod == nil {
			t.Fatalf("known pod during an outage: %+v, %v", pod, err)
		}
		clock.Advance(5 * time.Second)
		if _, err := c.lookup(ctx, podE); !errors.Is(err, ErrKubelet) {
			t.Fatalf("unknown pod during an outage: err %v, want ErrKubelet", err)
		}
		if f, fails := c.stats(); f != 5 || fails != 2 {
			t.Errorf("fetches %d, failures %d; want 5, 2", f, fails)
		}
	})
}

func TestKubeletClientErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"wrong token", func(c *Config) {
			c.KubeletTokenFile = writeTemp(t, "wrong")
		}},
		{"no token", func(c *Config) { c.KubeletTokenFile = "" }},
		{"untrusted certificate", func(c *Config) { c.KubeletCAFile = "" }},
		{"wrong path", func(c *Config) { c.KubeletURL += "/api" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKubeletServer(t)
			c := newTestKubeletClient(t, k, newFakeClock(), tt.mutate)
			pod, err := c.lookup(t.Context(), podA)
			if pod != nil || !errors.Is(err, ErrKubelet) {
				t.Fatalf("got %+v, %v; want ErrKubelet", pod, err)
			}
		})
	}
}

func TestKubeletInsecureSkipVerify(t *testing.T) {
	k := newKubeletServer(t)
	c := newTestKubeletClient(t, k, newFakeClock(), func(c *Config) {
		c.KubeletCAFile = ""
		c.KubeletInsecureSkipVerify = true
	})
	if pod, err := c.lookup(t.Context(), podB); err != nil || pod == nil || pod.Namespace != "inference" {
		t.Fatalf("got %+v, %v", pod, err)
	}
}

func TestKubeletWithHTTPClient(t *testing.T) {
	k := newKubeletServer(t)
	cfg := testConfig()
	k.configure(&cfg)
	cfg.KubeletCAFile = "testdata/does-not-exist" // unused: the client is given
	c, err := newKubeletClient(cfg, k.srv.Client(), time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if pod, err := c.lookup(t.Context(), podD); err != nil || pod == nil || pod.Namespace != "default" {
		t.Fatalf("got %+v, %v", pod, err)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := t.TempDir() + "/f"
	writeFile(t, p, content)
	return p
}
