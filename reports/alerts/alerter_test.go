package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/schemas"
)

// fakeSlack is a local HTTP server playing Slack: incoming webhooks under /hooks/,
// and the Web API's chat.postMessage and chat.update.
type fakeSlack struct {
	mu        sync.Mutex
	posts     []recorded
	throttle  atomic.Int32 // answer this many requests with 429
	fail5xx   atomic.Int32 // answer this many with 503
	nextTS    int
	srv       *httptest.Server
	updatesTo map[string]int
}

type recorded struct {
	Path    string
	Channel string
	TS      string
	Text    string
	Body    string
}

func (f *fakeSlack) handler(w http.ResponseWriter, r *http.Request) {
	if f.throttle.Load() > 0 {
		f.throttle.Add(-1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if f.fail5xx.Load() > 0 {
		f.fail5xx.Add(-1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := recorded{Path: r.URL.Path, Body: string(body)}
	switch {
	case strings.HasPrefix(r.URL.Path, "/hooks/"):
		var m struct{ Text string }
		_ = json.Unmarshal(body, &m)
		rec.Text = m.Text
		f.posts = append(f.posts, rec)
		_, _ = w.Write([]byte("ok"))
	case r.URL.Path == "/api/chat.postMessage" || r.URL.Path == "/api/chat.update":
		q, _ := url.ParseQuery(string(body))
		rec.Channel, rec.Text, rec.TS = q.Get("channel"), q.Get("text"), q.Get("ts")
		ts := rec.TS
		if r.URL.Path == "/api/chat.postMessage" {
			f.nextTS++
			ts = "1700000000." + strings.Repeat("0", 5) + string(rune('0'+f.nextTS))
		} else {
			f.updatesTo[ts]++
		}
		f.posts = append(f.posts, rec)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": rec.Channel, "ts": ts})
	default:
		http.NotFound(w, r)
	}
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{updatesTo: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handler))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.posts...)
}

// waitFor checks cond every 10 ms until it holds, and fails the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitSettled waits until the alerter reading through the durable consumer is done
// with every message in the findings stream: all delivered, and each acknowledged
// (sent, filtered out or a duplicate) or terminated (undecodable), none held for a
// retry. Slack receives nothing more from it until something new is published.
func waitSettled(t *testing.T, b *bustest.Bus, durable string) {
	t.Helper()
	waitFor(t, "consumer "+durable+" to settle", func() bool {
		st, err := b.JS.Stream(t.Context(), bus.StreamFindings)
		if err != nil {
			return false
		}
		c, err := b.JS.Consumer(t.Context(), bus.StreamFindings, durable)
		if err != nil {
			return false
		}
		ci, err := c.Info(t.Context())
		if err != nil {
			return false
		}
		return ci.NumPending == 0 && ci.NumAckPending == 0 && ci.AckFloor.Stream == st.CachedInfo().State.LastSeq
	})
}

func publishAlert(t *testing.T, b *bustest.Bus, m *schemas.FindingMessage) {
	t.Helper()
	data, err := schemas.EncodeFindingMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Publish(t.Context(), bus.FindingsSubject(string(m.Finding.Kind)), data); err != nil {
		t.Fatal(err)
	}
}

func startAlerter(t *testing.T, b *bustest.Bus, cfg Config, opts ...Option) (stop func()) {
	t.Helper()
	cfg.ChannelInterval = 10 * time.Millisecond
	a, err := New(cfg, b.JS, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func idle(event schemas.FindingEvent, updated time.Duration) *schemas.FindingMessage {
	return &schemas.FindingMessage{Event: event, Finding: schemas.Finding{ID: "f-idle-1", Kind: schemas.KindIdle, State: schemas.StateOpen, Episode: 1, Severity: schemas.SeverityWarning,
		Node: "gpu-a-001", Job: "k8s/nlp/pod-1", Team: "nlp", Project: "chat", Card: "H100-80GB",
		GPUUUIDs: []string{"GPU-1", "GPU-2"}, FirstSeen: t0, UpdatedAt: t0.Add(updated),
		Evidence: map[string]float64{"active_fraction": 0.01, "window_minutes": 30}, WasteGPUHours: 1.5, WasteCost: 6, Currency: "USD"}}
}

func TestWebhookRoutingFilteringAndDedup(t *testing.T) {
	b := bustest.Start(t)
	slack := newFakeSlack(t)
	cfg := DefaultConfig()
	cfg.WebhookURL = slack.srv.URL + "/hooks/default"
	cfg.Routes = []Route{{Team: "cv", WebhookURL: slack.srv.URL + "/hooks/cv"}}
	m := NewMetrics(nil)
	stop := startAlerter(t, b, cfg, WithMetrics(m))

	publishAlert(t, b, idle(schemas.EventOpened, 0))
	publishAlert(t, b, idle(schemas.EventEscalated, 10*time.Minute))
	zombie := &schemas.FindingMessage{Event: schemas.EventOpened, Finding: schemas.Finding{ID: "f-z", Kind: schemas.KindZombie, Episode: 1, Team: "cv", Node: "n2", PID: 4242, UpdatedAt: t0}}
	publishAlert(t, b, zombie)
	publishAlert(t, b, &schemas.FindingMessage{Event: schemas.EventOpened, Finding: schemas.Finding{ID: "f-hint", Kind: schemas.KindMemoryBound, Team: "nlp", UpdatedAt: t0}})
	if _, err := b.JS.Publish(t.Context(), bus.FindingsSubject("idle"), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three posts", func() bool { return len(slack.recorded()) >= 3 })
	waitSettled(t, b, cfg.Durable)
	// The same event again (a republish) and a restarted alerter send nothing more.
	publishAlert(t, b, idle(schemas.EventOpened, 0))
	stop()
	startAlerter(t, b, cfg, WithMetrics(m))
	publishAlert(t, b, idle(schemas.EventResolved, time.Hour))
	waitFor(t, "the resolution", func() bool { return len(slack.recorded()) >= 4 })
	waitSettled(t, b, cfg.Durable)
	posts := slack.recorded()
	if len(posts) != 4 {
		t.Fatalf("%d posts, want 4 (opened, escalated, zombie, resolved): %+v", len(posts), posts)
	}
	if n := testutil.ToFloat64(m.duplicates); n != 1 {
		t.Errorf("%v duplicates skipped, want 1 (the republished opening)", n)
	}
	if n := testutil.ToFloat64(m.dropped); n != 1 {
		t.Errorf("%v messages dropped, want 1 (the one that is not JSON)", n)
	}
	if posts[2].Path != "/hooks/cv" || !strings.Contains(posts[2].Body, "PID 4242") {
		t.Errorf("zombie alert went to %s: %s", posts[2].Path, posts[2].Body)
	}
	for _, p := range []int{0, 1, 3} {
		if posts[p].Path != "/hooks/default" {
			t.Errorf("nlp alert %d went to %s", p, posts[p].Path)
		}
	}
	if !strings.Contains(posts[0].Body, "k8s/nlp/pod-1") || !strings.Contains(posts[0].Body, `"type":"header"`) || !strings.Contains(posts[0].Body, "1.0%") {
		t.Errorf("Block Kit message lacks the job, a header or the evidence: %s", posts[0].Body)
	}
	if !strings.Contains(posts[3].Body, "Resolved") {
		t.Errorf("resolution message: %s", posts[3].Text)
	}
}

func TestRateLimitAndOutage(t *testing.T) {
	b := bustest.Start(t)
	slack := newFakeSlack(t)
	cfg := DefaultConfig()
	cfg.WebhookURL = slack.srv.URL + "/hooks/default"
	cfg.MaxBackoff = 2 * time.Second
	m := NewMetrics(nil)
	startAlerter(t, b, cfg, WithMetrics(m))

	slack.throttle.Store(2)
	slack.fail5xx.Store(1)
	publishAlert(t, b, idle(schemas.EventOpened, 0))
	waitFor(t, "the alert after 429s and a 503", func() bool { return len(slack.recorded()) == 1 })
	waitSettled(t, b, cfg.Durable)
	if n := len(slack.recorded()); n != 1 {
		t.Fatalf("%d posts after 429s and a 503, want exactly 1", n)
	}
	if n := testutil.ToFloat64(m.retries); n != 3 {
		t.Errorf("%v retries, want 3 (two 429s, one 503)", n)
	}

	// Slack unreachable: the alert waits in JetStream and arrives once it is back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens: connection refused
	cfg2 := DefaultConfig()
	cfg2.WebhookURL = "http://" + addr + "/hooks/default"
	cfg2.MaxBackoff = time.Second
	cfg2.Durable, cfg2.StateBucket = "outage", "outage_state"
	m2 := NewMetrics(nil)
	startAlerter(t, b, cfg2, WithMetrics(m2))
	waitFor(t, "a delivery refused by the outage", func() bool { return testutil.ToFloat64(m2.retries) >= 1 })
	slack2 := &fakeSlack{updatesTo: map[string]int{}}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(slack2.handler)}
	go func() { _ = srv.Serve(ln2) }()
	defer srv.Close()
	waitFor(t, "the held alert after the outage", func() bool { return len(slack2.recorded()) >= 1 })
	waitSettled(t, b, cfg2.Durable)
	if n := len(slack2.recorded()); n != 1 {
		t.Fatalf("%d posts after the outage, want exactly 1", n)
	}
}

func TestBotTokenUpdatesTheMessage(t *testing.T) {
	b := bustest.Start(t)
	slack := newFakeSlack(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("xoxb-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.BotTokenFile, cfg.APIURL, cfg.DefaultChannel = tok, slack.srv.URL+"/api/", "#gpu-waste"
	cfg.Routes = []Route{{Team: "nlp", Channel: "#nlp-alerts"}}
	startAlerter(t, b, cfg)
	publishAlert(t, b, idle(schemas.EventOpened, 0))
	waitFor(t, "the first post", func() bool { return len(slack.recorded()) >= 1 })
	f := idle(schemas.EventOpened, 15*time.Minute).Finding
	notice := &schemas.FindingMessage{Event: schemas.EventNotice, Notice: &schemas.Notice{
		Time: f.UpdatedAt, Team: f.Team, Project: f.Project, Job: f.Job, Finding: f, NextAction: "reclaim", NextAt: t0.Add(45 * time.Minute),
	}, Finding: f}
	publishAlert(t, b, notice)
	waitFor(t, "the update", func() bool { return len(slack.recorded()) >= 2 })
	posts := slack.recorded()
	if posts[0].Path != "/api/chat.postMessage" || posts[0].Channel != "#nlp-alerts" {
		t.Fatalf("first: %+v", posts[0])
	}
	if posts[1].Path != "/api/chat.update" || posts[1].TS == "" || !strings.Contains(posts[1].Body, "reclaim") {
		t.Fatalf("the notice did not update the first message: %+v", posts[1])
	}
}
