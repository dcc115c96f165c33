package auth

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
)

// FuzzParseTokens: any file content parses or is refused, never panics; what
// parses prints back to lines that parse to the same entries.
func FuzzParseTokens(f *testing.F) {
	f.Add([]byte("alice team:nlp,finance " + HashToken("x") + "\n# c\n"))
	f.Add([]byte("a admin sha256:zz\n\n"))
	f.Add([]byte(tokensHeader))
	f.Add([]byte("ci team:vision " + HashToken("y") + " expires=2026-12-31T01:00:00.5+01:00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseTokens(data)
		if err != nil {
			return
		}
		var out []byte
		for _, e := range es {
			out = append(out, e.String()+"\n"...)
		}
		again, err := ParseTokens(out)
		if err != nil || len(again) != len(es) {
			t.Fatalf("%q printed as %q: %v", data, out, err)
		}
		for i := range es {
			if again[i].String() != es[i].String() || !slices.Equal(again[i].Roles, es[i].Roles) {
				t.Fatalf("entry %d: %+v, then %+v", i, es[i], again[i])
			}
		}
	})
}

// FuzzGuardAuthorization: any Authorization header gets 200 for the one known
// token and a JSON 401 otherwise, never a panic.
func FuzzGuardAuthorization(f *testing.F) {
	g := tokenGuard(f, nil, nil, map[string]Role{"ops": RoleOperator})
	h := g.Handler(echo)
	for _, s := range []string{"Bearer tok-ops", "Bearer tok-opsx", "bearer  tok-ops ", "Basic x", "Bearer a.b.c", "", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/v1/queues", nil)
		r.Header["Authorization"] = []string{header}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 200:
			if tok, err := bearerToken(r); err != nil || tok != "tok-ops" {
				t.Fatalf("%q let in as %s", header, w.Body)
			}
		case 401:
			var e errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code != ReasonUnauthenticated {
				t.Fatalf("%q: body %s", header, w.Body)
			}
		default:
			t.Fatalf("%q: status %d", header, w.Code)
		}
	})
}
