package attribution

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMappingErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // in the error
	}{
		{"unknown key", "rules:\n  - match: {exe: x}\n    teem: a\n", "teem"},
		{"unknown selector", "rules:\n  - match: {exe: x, user: bob}\n    team: a\n", "user"},
		{"no selector", "rules:\n  - name: all\n    team: a\n", "rules[0] (all): match: no selector"},
		{"sets nothing", "rules:\n  - match: {exe: x}\n", "sets nothing"},
		{"bad regexp", "rules:\n  - match: {cmdline: '('}\n    team: a\n", "match.cmdline"},
		{"unknown placeholder", "rules:\n  - match: {exe: x}\n    job: 'proc/{host}'\n", "{host}"},
		{"unclosed brace", "rules:\n  - match: {exe: x}\n    team: 'a{node'\n", "unclosed"},
		{"stray brace", "rules:\n  - match: {exe: x}\n    team: 'a}'\n", "'}'"},
		{"uid not a number", "rules:\n  - match: {uids: [bob]}\n    team: a\n", "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMapping([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestParseMappingJSON(t *testing.T) {
	m, err := parseMapping([]byte(`{"rules": [{"match": {"exe": "python3", "uids": [1000]}, "team": "ml", "labels": {"a": "b"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.rules) != 1 || m.rules[0].exe != "python3" || m.rules[0].uids[0] != 1000 {
		t.Fatalf("rules %+v", m.rules)
	}
	if m, err := parseMapping(nil); err != nil || len(m.rules) != 0 {
		t.Fatalf("empty document: %+v, %v", m, err)
	}
}

func TestLoadMappingFile(t *testing.T) {
	m, err := loadMapping("testdata/mapping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.rules) != 4 {
		t.Fatalf("%d rules, want 4", len(m.rules))
	}
	if _, err := loadMapping("testdata/missing.yaml"); !errors.Is(err, ErrMapping) || !strings.HasPrefix(err.Error(), "mapping_file:") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestRuleMatching(t *testing.T) {
	m, err := parseMapping([]byte(`
rules:
  - name: ns
    match: {namespace: research, exe: python3}
    team: lab
  - name: cmd
    match: {cmdline: 'train\.py --run (?P<run>\w+)'}
    job: 'proc/{node}/{run}-{exe}-{pid}'
    model: '{run}'
`))
	if err != nil {
		t.Fatal(err)
	}
	facts := func(ns, cmdline string) *procFacts {
		return &procFacts{
			pid: 7, node: "n1", namespace: ns, exeVal: "python3", exeRead: true, cmdVal: cmdline, cmdRead: true,
			uidRead: true, cgroup: cgroupInfo{Path: "/"},
		}
	}
	tests := []struct {
		name     string
		f        *procFacts
		wantRule string
		wantJob  string
	}{
		{"namespace and exe", facts("research", ""), "ns", "proc/{node}/{pid}/{start}"},
		{"other namespace falls through to cmdline", facts("prod", "python3 train.py --run r42 --lr 3"), "cmd", "proc/n1/r42-python3-7"},
		{"nothing matches", facts("prod", "python3 serve.py"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, groups := m.match(tt.f)
			if tt.wantRule == "" {
				if r != nil {
					t.Fatalf("matched %q", r.name)
				}
				return
			}
			if r == nil || r.name != tt.wantRule {
				t.Fatalf("rule %v, want %q", r, tt.wantRule)
			}
			if tt.wantRule == "cmd" {
				if got := r.job.expand(tt.f.placeholderFunc(groups)); got != tt.wantJob {
					t.Errorf("job %q, want %q", got, tt.wantJob)
				}
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	tmpl, err := parseTemplate("{node}/x/{g}{pid}", map[string]bool{"g": true})
	if err != nil {
		t.Fatal(err)
	}
	got := tmpl.expand(func(n string) string { return "<" + n + ">" })
	if got != "<node>/x/<g><pid>" {
		t.Errorf("got %q", got)
	}
	if empty, _ := parseTemplate("", nil); empty.expand(nil) != "" {
		t.Error("empty template expands to something")
	}
}
