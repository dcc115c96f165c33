package auth

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ParseExpiry reads a token's expiry as a person writes it: "" (never), a
// duration from now (Go's, 720h, or whole days, 90d), a date (2026-12-31, midnight
// UTC) or an RFC 3339 time.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n > 0 {
			return now.Add(time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("expiry %q: want a positive duration from now (720h, 90d), a date (2026-12-31, midnight UTC) or an RFC 3339 time (2026-12-31T18:00:00Z)", s)
}

// ExpiryText is the entry's expiry as a person reads it: never, the time, or the
// time and "(expired)" at now.
func (e TokenEntry) ExpiryText(now time.Time) string {
	switch {
	case e.Expires.IsZero():
		return "never"
	case e.Expired(now):
		return e.Expires.Format(time.RFC3339) + " (expired)"
	}
	return e.Expires.Format(time.RFC3339)
}

// tokenRow is one token as WriteTokens writes it in JSON: never the hash.
type tokenRow struct {
	Name    string     `json:"name"`
	Roles   []Role     `json:"roles"`
	Expires *time.Time `json:"expires,omitempty"`
	Expired bool       `json:"expired"`
}

// WriteTokens writes the entries' names, roles and expiry at now (never their
// hashes) as a table, or as a JSON array.
func WriteTokens(w io.Writer, es []TokenEntry, now time.Time, asJSON bool) error {
	if asJSON {
		rows := make([]tokenRow, len(es))
		for i, e := range es {
			rows[i] = tokenRow{Name: e.Name, Roles: e.Roles, Expired: e.Expired(now)}
			if !e.Expires.IsZero() {
				rows[i].Expires = &es[i].Expires
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLES\tEXPIRES")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.RoleList(), e.ExpiryText(now))
	}
	return tw.Flush()
}
