// Package redact hides secrets in text that goes to logs and error messages:
// passwords and tokens in URLs' user information (a DSN's password, a NATS
// token), Slack webhook paths (the path is the credential), secret query
// parameters, Slack and gpupool tokens, and key=value passwords.
//
// In: a URL, any text (an error's message), or an error. Out: the same with
// each secret replaced by Mask; everything else is kept, so that a log line
// still says which host and what failed.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// secretParams are query parameter and key=value names whose value is a secret
// (compared lower-case).
var secretParams = map[string]bool{
	"password": true, "passwd": true, "pwd": true, "pass": true, "secret": true, "token": true,
	"access_token": true, "auth_token": true, "api_key": true, "apikey": true, "key": true,
	"sig": true, "signature": true, "x-amz-signature": true, "client_secret": true, "auth": true,
}

// secretPaths are path prefixes after which the rest of a URL's path is a
// credential: Slack's incoming webhooks (/services/T…/B…/secret) and workflow
// triggers (/workflows/…, /triggers/…).
var secretPaths = []string{"/services/", "/workflows/", "/triggers/"}

// URL is raw with its secrets masked: the user information's password (a lone
// user name too, which NATS and others take as a token), a webhook path after
// its prefix, and secret query parameters. Text that does not parse as a URL is
// masked as String does.
func URL(raw string) string {
	if strings.Contains(raw, ",") { // a list of servers: each URL on its own
		return String(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return String(raw)
	}
	return maskURL(u)
}

func maskURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		if _, ok := c.User.Password(); ok {
			c.User = url.UserPassword(c.User.Username(), Mask)
		} else {
			c.User = url.User(Mask)
		}
	}
	for _, p := range secretPaths {
		if i := strings.Index(c.Path, p); i >= 0 && len(c.Path) > i+len(p) {
			c.Path, c.RawPath = c.Path[:i+len(p)]+Mask, ""
			break
		}
	}
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			c.RawQuery = Mask
		} else {
			changed := false
			for k := range q {
				if secretParams[strings.ToLower(k)] {
					q[k] = []string{Mask}
					changed = true
				}
			}
			if changed {
				c.RawQuery = q.Encode()
			}
		}
	}
	// Keep Mask readable (url.String would escape nothing here, but a user
	// name of Mask is written as is too).
	return c.String()
}

var (
	// urlPattern finds URLs in free text: a scheme, "://", then up to the first
	// space, quote or comma (a list of servers is masked URL by URL).
	urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>,` + "`" + `]+`)
	// quotedURLPattern finds a URL quoted in an error message (url.Error's
	// parse "…": …), which may hold spaces.
	quotedURLPattern = regexp.MustCompile(`"[A-Za-z][A-Za-z0-9+.-]*://[^"]*"`)
	// tokenPattern finds Slack tokens (xoxb-, xoxp-, xapp-…) and gpupool tokens.
	tokenPattern = regexp.MustCompile(`\b(?:xox[abposr]|xapp)-[A-Za-z0-9-]+|\bgpupool_[A-Za-z0-9_-]{8,}`)
	// keyValuePattern finds key=value and key: value pairs whose key names a
	// secret (a DSN in key=value form, a header dumped in an error).
	keyValuePattern = regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|token|access_token|api_key|client_secret)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&;,"']+)`)
	// bearerPattern finds an Authorization header's credential.
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)
)

// Addr is a server address as configured (host:port, or a URL or DSN pasted in
// its place) with any user information masked: "u:p@db:9000" is
// "REDACTED@db:9000".
func Addr(s string) string {
	if strings.Contains(s, "://") {
		return URL(s)
	}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		return Mask + s[at:]
	}
	return String(s)
}

// String is s with every URL in it masked as URL does, and Slack and gpupool
// tokens, bearer credentials and key=value secrets replaced by Mask.
func String(s string) string {
	s = quotedURLPattern.ReplaceAllStringFunc(s, func(m string) string {
		inner := m[1 : len(m)-1]
		u, err := url.Parse(inner)
		if err != nil || u.Scheme == "" {
			return `"` + maskUnparsed(inner) + `"`
		}
		return `"` + maskURL(u) + `"`
	})
	s = urlPattern.ReplaceAllStringFunc(s, func(m string) string {
		// A URL quoted in an error (parse "…": …) ends at the quote; trailing
		// punctuation is not part of it.
		trail := ""
		for len(m) > 0 && strings.ContainsRune(".,;:)]}", rune(m[len(m)-1])) {
			trail = m[len(m)-1:] + trail
			m = m[:len(m)-1]
		}
		u, err := url.Parse(m)
		if err != nil || u.Scheme == "" {
			return maskUnparsed(m) + trail
		}
		return maskURL(u) + trail
	})
	s = tokenPattern.ReplaceAllString(s, Mask)
	s = bearerPattern.ReplaceAllString(s, "$1 "+Mask)
	return keyValuePattern.ReplaceAllString(s, "${1}${2}"+Mask)
}

// maskUnparsed masks a URL that does not parse: its user information and
// everything after a webhook prefix or a '?'.
func maskUnparsed(m string) string {
	if i := strings.Index(m, "://"); i >= 0 {
		rest := m[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 && !strings.Contains(rest[:at], "/") {
			m = m[:i+3] + Mask + rest[at:]
		}
	}
	for _, p := range secretPaths {
		if i := strings.Index(m, p); i >= 0 {
			return m[:i+len(p)] + Mask
		}
	}
	if i := strings.IndexByte(m, '?'); i >= 0 {
		return m[:i+1] + Mask
	}
	return m
}

// Error is err with its message masked as String does; errors.Is and errors.As
// still see err. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if _, done := err.(*redacted); done {
		return err
	}
	return &redacted{err: err, msg: String(err.Error())}
}

type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
