package schemas

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCheckIdentifiers(t *testing.T) {
	big := strings.Repeat("x", 7<<20)
	for _, tc := range []struct {
		name  string
		check func(string, string) error
		v     string
		want  string // "" accepts
	}{
		{"team", CheckName, "nlp", ""},
		{"kubernetes namespace", CheckName, "ml-training", ""},
		{"slurm account", CheckName, "physics_dept", ""},
		{"card", CheckName, "H100-80GB", ""},
		{"mig profile-like", CheckName, "1g.10gb", ""},
		{"empty name (optional)", CheckName, "", ""},
		{"63 bytes", CheckName, strings.Repeat("a", 63), ""},
		{"64 bytes", CheckName, strings.Repeat("a", 64), `is 64 bytes, longer than 63`},
		{"7 MB team", CheckName, big, `is 7340032 bytes, longer than 63`},
		{"sql", CheckName, `nlp' OR team='vision`, `has '\'' at byte 3`},
		{"slash in name", CheckName, "a/b", `has '/' at byte 1`},
		{"leading dot", CheckName, ".hidden", "begins with '.' (allowed: ASCII letters a-z and A-Z, digits 0-9"},
		{"non-ASCII first letter", CheckName, "Équipe", "has the non-ASCII character 'É' at byte 0 (allowed: ASCII letters a-z and A-Z, digits 0-9 and \"-_.\", beginning with a letter or digit; no accented or other non-ASCII letters)"},
		{"non-ASCII letter", CheckName, "café", "has the non-ASCII character 'é' at byte 3 (allowed: ASCII letters"},
		{"non-ASCII in a key", CheckKey, "k8s/équipe/p", "has the non-ASCII character 'é' at byte 4 (allowed: ASCII letters a-z and A-Z, digits 0-9 and \"-_./:@+\""},
		{"newline", CheckName, "dev\n", `has '\n' at byte 3`},
		{"invalid utf-8", CheckName, "a\xff", "invalid UTF-8 byte 0xff at byte 1"},
		{"k8s job key", CheckKey, "k8s/nlp-chat/6f1d2c3b-7a8e-4f90-9b1c-2d3e4f5a6b7c", ""},
		{"slurm het job key", CheckKey, "slurm/us-east/481516+0", ""},
		{"proc job key", CheckKey, "proc/gpu-node-a/1014/1767306600", ""},
		{"scheduler attempt key", CheckKey, "sched/nlp/tbq3k0.12/2", ""},
		{"MIG uuid", CheckKey, "MIG-GPU-1c2e7a40/1/0", ""},
		{"key with space", CheckKey, "job 1", `has ' ' at byte 3`},
		{"254-byte key", CheckKey, strings.Repeat("k", 254), "longer than 253"},
		{"model name", CheckText, "meta-llama/Llama-3.1-70B Instruct é", ""},
		{"sql text", CheckText, `nlp' OR team='vision`, ""},
		{"control in text", CheckText, "a\x00b", `has '\x00' at byte 1`},
		{"long text", CheckText, strings.Repeat("é", 129), "is 258 bytes, longer than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check("team", tc.v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%q refused: %v", Truncate(tc.v, 80), err)
			case tc.want != "" && err == nil:
				t.Fatalf("%q accepted, want %q", Truncate(tc.v, 80), tc.want)
			case err != nil:
				if !errors.Is(err, ErrInvalidIdentifier) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "team: ") {
					t.Errorf("error %q: want ErrInvalidIdentifier naming team and saying %q", err, tc.want)
				}
				if len(err.Error()) > 300 {
					t.Errorf("error of %d bytes copies the value", len(err.Error()))
				}
			}
		})
	}
	if err := RequireName("team", ""); err == nil || !strings.Contains(err.Error(), "team: missing") {
		t.Errorf("RequireName of empty: %v", err)
	}
}

func TestCheckLabels(t *testing.T) {
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, tc := range map[string]struct {
		m    map[string]string
		want string
	}{
		"kubernetes labels": {map[string]string{"app.kubernetes.io/name": "trainer", "gpupool.io/team": "nlp"}, ""},
		"too many":          {many, "65 labels, more than 64"},
		"empty key":         {map[string]string{"": "v"}, "empty key"},
		"long value":        {map[string]string{"k": strings.Repeat("v", 300)}, `labels."k": "vvv`},
	} {
		err := CheckLabels("labels", tc.m)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"nlp":                   "nlp",
		"Team NLP":              "Team_NLP",
		"-x":                    "x",
		"a/b\n":                 "a_b_",
		strings.Repeat("a", 99): strings.Repeat("a", 63),
		"ééé":                   "",
	} {
		got, changed := SanitizeName(in)
		if got != want || changed != (in != want) {
			t.Errorf("SanitizeName(%q) = %q, %v; want %q", in, got, changed, want)
		}
		if CheckName("x", got) != nil {
			t.Errorf("SanitizeName(%q) = %q, not a name", in, got)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want time.Duration
		err  string
	}{
		{0, 0, ""},
		{3600, time.Hour, ""},
		{MaxSeconds, time.Duration(MaxSeconds) * time.Second, ""},
		{MaxSeconds + 1, 0, "more than a duration holds"},
		{math.MaxInt64, 0, "more than a duration holds"},
		{-1, 0, "is negative"},
		{math.MinInt64, 0, "is negative"},
	} {
		got, err := Seconds("time_limit_s", tc.v)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !errors.Is(err, ErrOutOfRange) ||
			!strings.Contains(err.Error(), "time_limit_s: ") || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Seconds(%d) = %v, %v; want %v, %q", tc.v, got, err, tc.want, tc.err)
		}
		if err == nil && got < 0 {
			t.Errorf("Seconds(%d) = %v, negative", tc.v, got)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -0.5, 1e19, float64(MaxSeconds)} {
		if d, err := SecondsFloat("grace_seconds", v); err == nil {
			t.Errorf("SecondsFloat(%v) = %v, want an error", v, d)
		}
	}
	if d, err := SecondsFloat("grace_seconds", 1.5); err != nil || d != 1500*time.Millisecond {
		t.Errorf("SecondsFloat(1.5) = %v, %v", d, err)
	}
	if _, err := SecondsToMillis("start", math.MaxInt64/1000+1); err == nil {
		t.Error("SecondsToMillis accepted an overflowing time")
	}
}

// FuzzCheckIdent: the validators never panic, accept only what their rules
// allow, never copy a long value into their error, and SanitizeName always
// returns a name.
func FuzzCheckIdent(f *testing.F) {
	for _, s := range []string{"nlp", "k8s/ns/uid", "", "-x", "a\xffb", "Team NLP", strings.Repeat("z", 300), "é/é", "sched/nlp/1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, c := range []struct {
			check func(string, string) error
			max   int
			chars string
		}{{CheckName, MaxNameLen, nameChars}, {CheckKey, MaxKeyLen, keyChars}} {
			err := c.check("f", v)
			if err != nil && len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			if err == nil && v != "" {
				if len(v) > c.max || !isAlnum(v[0]) {
					t.Fatalf("%q accepted", v)
				}
				for i := 0; i < len(v); i++ {
					if !isNameByte(v[i], c.chars) {
						t.Fatalf("%q accepted with byte %#x", v, v[i])
					}
				}
			}
		}
		if err := CheckText("f", v); err == nil && (len(v) > MaxTextLen || !utf8.ValidString(v)) {
			t.Fatalf("text %q accepted", v)
		}
		s, changed := SanitizeName(v)
		if CheckName("f", s) != nil || !changed && s != v {
			t.Fatalf("SanitizeName(%q) = %q, %v", v, s, changed)
		}
		if c := Clip(v); len(c) > 400 {
			t.Fatalf("Clip of %d bytes", len(c))
		}
	})
}

// TestBatchIdentifiers: a sample batch whose cluster or node breaks the rules
// is refused by both validators, as an invalid identifier (ingest's reason
// invalid_identifier).
func TestBatchIdentifiers(t *testing.T) {
	for _, tc := range []struct{ cluster, node, want string }{
		{"c1", "node 1", "node: "}, {"c1", strings.Repeat("n", 300), "longer than 253"}, {"us east", "n1", "cluster: "},
	} {
		g := NewGPUSample()
		g.TimeMs, g.GPUUUID = 1_700_000_000_000, "GPU-1"
		b := SampleBatch{Cluster: tc.cluster, Node: tc.node, GPUs: []GPUSample{g}}
		err := Validate(&b, 0, 0)
		if !errors.Is(err, ErrInvalidIdentifier) || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q, %.20q): %v", tc.cluster, tc.node, err)
		}
		data, err := NewEncoder().Encode(nil, &b)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := NewDecoder().DecodeColumns(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateColumns(pb, 0, 0); !errors.Is(err, ErrInvalidIdentifier) {
			t.Errorf("ValidateColumns(%q, %.20q): %v", tc.cluster, tc.node, err)
		}
	}
}
