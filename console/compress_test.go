package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPagesCompressed: a page asked for with gzip comes compressed and decodes
// to the page served plain; the login page and a request without a token are
// not compressed (nothing authenticated to shrink, the 401 as it was).
func TestPagesCompressed(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	code, plain, h := get(t, srv, "/fleet?per=25", "tok-admin")
	if code != http.StatusOK || h.Get("Content-Encoding") != "" {
		t.Fatalf("plain: %d, encoding %q", code, h.Get("Content-Encoding"))
	}
	code, zipped, h := get(t, srv, "/fleet?per=25", "tok-admin", "Accept-Encoding", "gzip")
	if code != http.StatusOK || h.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip asked: %d, encoding %q", code, h.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(zipped) >= len(plain) || !bytes.Contains(page, []byte("<table")) {
		t.Errorf("compressed %d bytes against %d plain; decoded holds a table: %v", len(zipped), len(plain), bytes.Contains(page, []byte("<table")))
	}
	if code, _, h := get(t, srv, "/fleet", "", "Accept-Encoding", "gzip"); code != http.StatusUnauthorized || h.Get("Content-Encoding") != "" {
		t.Errorf("without a token: %d, encoding %q, want a plain 401", code, h.Get("Content-Encoding"))
	}
	if _, _, h := get(t, srv, "/login", "", "Accept-Encoding", "gzip"); h.Get("Content-Encoding") != "" {
		t.Errorf("login page compressed (%q)", h.Get("Content-Encoding"))
	}
}
