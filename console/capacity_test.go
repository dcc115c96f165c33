package console

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestCapacityRowsAreCardTypes: the capacity page has a row per card type that
// has GPUs, never one for jobs that accept any card (capacity 0 and every day
// "short"); their demand is named in the note instead. The simulated fleet has
// such jobs.
func TestCapacityRowsAreCardTypes(t *testing.T) {
	s := simStore(t)
	res, err := s.Query(t.Context(), "SELECT count() AS n FROM capacity WHERE card = ''", nil)
	if err != nil {
		t.Fatal(err)
	}
	anyCard, _ := res.Float(0, "n")
	srv := testConsole(t, s, nil)
	code, body, _ := get(t, srv, "/capacity", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("/capacity: %d", code)
	}
	rows := regexp.MustCompile(`<tr data-card="([^"]*)"><td>[^<]*</td><td class="n cap">([^<]*)<`).FindAllStringSubmatch(body, -1)
	if len(rows) == 0 {
		t.Fatalf("no card rows:\n%.2000s", body)
	}
	for _, r := range rows {
		if r[1] == "" || r[2] == "0" || r[2] == "0.0" || r[2] == "0.00" {
			t.Errorf("row for card %q with capacity %q: want a row only for a card type with GPUs", r[1], r[2])
		}
	}
	if strings.Contains(body, "<td>any card</td>") {
		t.Error(`an "any card" row`)
	}
	if anyCard > 0 && !strings.Contains(body, "not shown as a row: any card") {
		t.Error("the any-card demand is not named in the note")
	}
}
