package billing

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpupool/gpupool/reports"
)

// fakeSlack is a local server answering the Slack calls reports make: an
// incoming webhook, chat.postMessage and the files upload (get an upload URL,
// upload to it, complete the upload).
type fakeSlack struct {
	*httptest.Server
	mu       sync.Mutex
	webhook  []map[string]any
	messages []map[string]string
	uploads  map[string][]byte // file name → content
	complete []map[string]string
	fail     bool
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{uploads: map[string][]byte{}}
	mux := http.NewServeMux()
	form := func(r *http.Request) map[string]string {
		_ = r.ParseForm()
		out := map[string]string{}
		for k := range r.PostForm {
			out[k] = r.PostForm.Get(k)
		}
		return out
	}
	mux.HandleFunc("/hooks/reports", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fail {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		f.webhook = append(f.webhook, m)
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/api/chat.postMessage", func(w http.ResponseWriter, r *http.Request) {
		m := form(r)
		m["auth"] = r.Header.Get("Authorization")
		f.mu.Lock()
		f.messages = append(f.messages, m)
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": m["channel"], "ts": "1764576000.000100"})
	})
	mux.HandleFunc("/api/files.getUploadURLExternal", func(w http.ResponseWriter, r *http.Request) {
		m := form(r)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "upload_url": f.URL + "/upload/" + m["filename"], "file_id": "F1"})
	})
	mux.HandleFunc("/upload/", func(w http.ResponseWriter, r *http.Request) {
		file, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(file)
		f.mu.Lock()
		f.uploads[hdr.Filename] = data
		f.mu.Unlock()
		_, _ = io.WriteString(w, "OK")
	})
	mux.HandleFunc("/api/files.completeUploadExternal", func(w http.ResponseWriter, r *http.Request) {
		m := form(r)
		f.mu.Lock()
		f.complete = append(f.complete, m)
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "files": []map[string]string{{"id": "F1", "title": "report"}}})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func TestSlackWebhookPostsSummaryOnly(t *testing.T) {
	srv := newFakeSlack(t)
	p, err := NewSlackPoster(reports.SlackConfig{WebhookURL: srv.URL + "/hooks/reports", UploadFormat: "html"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	r := goldenReport(t)
	if err := p.Post(t.Context(), "#finance", r, []string{"/nonexistent/chargeback-2026-11.html"}); err != nil {
		t.Fatal(err)
	}
	if len(srv.webhook) != 1 {
		t.Fatalf("%d webhook posts, want 1", len(srv.webhook))
	}
	text, _ := srv.webhook[0]["text"].(string)
	for _, want := range []string{"GPU chargeback 2026-11", "78.15 USD", "+275.7 %", "Top teams: nlp 51.75", "vision 16.80"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary %q lacks %q", text, want)
		}
	}
	if _, ok := srv.webhook[0]["blocks"]; !ok {
		t.Error("webhook message has no blocks")
	}
	if len(srv.uploads) != 0 {
		t.Error("a webhook poster uploaded a file")
	}

	srv.fail = true
	if err := p.Post(t.Context(), "", r, nil); !errors.Is(err, ErrSlack) {
		t.Errorf("a refused webhook post returned %v, want ErrSlack", err)
	}
}

func TestSlackBotPostsAndUploads(t *testing.T) {
	srv := newFakeSlack(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("xoxb-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := goldenReport(t)
	paths, err := WriteFiles(dir, "chargeback", r, []string{"html", "csv"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewSlackPoster(reports.SlackConfig{BotTokenFile: tokenFile, APIURL: srv.URL + "/api/", UploadFormat: "csv"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Post(t.Context(), "C0FINANCE", r, paths); err != nil {
		t.Fatal(err)
	}
	if len(srv.messages) != 1 || srv.messages[0]["channel"] != "C0FINANCE" ||
		(srv.messages[0]["token"] != "xoxb-test" && srv.messages[0]["auth"] != "Bearer xoxb-test") {
		t.Fatalf("messages %+v", srv.messages)
	}
	if !strings.Contains(srv.messages[0]["text"], "Top teams: nlp") {
		t.Errorf("message text %q", srv.messages[0]["text"])
	}
	want, _ := os.ReadFile(filepath.Join(dir, "chargeback-2026-11.csv"))
	if got := srv.uploads["chargeback-2026-11.csv"]; string(got) != string(want) || len(srv.uploads) != 1 {
		t.Errorf("uploaded %d files; the CSV matches: %v", len(srv.uploads), string(got) == string(want))
	}
	if len(srv.complete) != 1 || srv.complete[0]["channel_id"] != "C0FINANCE" || srv.complete[0]["thread_ts"] != "1764576000.000100" {
		t.Errorf("completeUploadExternal %+v, want the file shared in the summary's thread", srv.complete)
	}
}

func TestSlackBotTokenFileMissing(t *testing.T) {
	_, err := NewSlackPoster(reports.SlackConfig{BotTokenFile: filepath.Join(t.TempDir(), "none"), UploadFormat: "html"}, nil)
	if err == nil || !strings.Contains(err.Error(), "bot_token_file") {
		t.Errorf("err = %v", err)
	}
}
