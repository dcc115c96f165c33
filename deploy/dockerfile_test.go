package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Dockerfile cannot be built here (no Docker daemon), so its rules are checked
// as hadolint would: pinned bases, non-root users, no remote ADD, apt without
// recommends and with its lists removed, a HEALTHCHECK or the reason there is none,
// COPY --chown into the images, and chDB only in the image that needs it.

const dockerfile = "../Dockerfile"

// finalTargets are the images `make image` builds (Dockerfile targets).
var finalTargets = []string{"server", "server-chdb", "collector"}

// instruction is one Dockerfile instruction with its line continuations joined,
// and the comment lines just above it.
type instruction struct {
	line    int
	cmd     string // upper case: FROM, RUN, …
	args    string
	comment string
}

// stage is a FROM and what follows it.
type stage struct {
	name, base string
	ins        []instruction
}

func parseDockerfile(text string) (args map[string]string, stages []*stage) {
	args = map[string]string{}
	var comment []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			comment = nil
			continue
		}
		if strings.HasPrefix(l, "#") {
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(l, "#")))
			continue
		}
		start := i + 1
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmd, rest, _ := strings.Cut(l, " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(rest), comment: strings.Join(comment, " ")}
		comment = nil
		switch {
		case in.cmd == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			st := &stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
		case len(stages) > 0:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return args, stages
}

var argRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// lintDockerfile returns each rule text breaks, one message each.
func lintDockerfile(text string) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	args, stages := parseDockerfile(text)
	if len(stages) == 0 {
		return []string{"no FROM"}
	}
	names := map[string]*stage{}
	for _, st := range stages {
		if st.name != "" {
			names[st.name] = st
		}
	}
	for _, st := range stages {
		base := argRef.ReplaceAllStringFunc(st.base, func(m string) string { return args[argRef.FindStringSubmatch(m)[1]] })
		if _, ok := names[base]; ok {
			continue // a stage built on an earlier one
		}
		_, tag, hasTag := strings.Cut(base[strings.LastIndex(base, "/")+1:], ":")
		if !strings.Contains(base, "@sha256:") && (!hasTag || tag == "latest" || tag == "") {
			bad("stage %s: base %q is not pinned to a tag or digest (DL3006, DL3007)", st.name, base)
		}
		for _, in := range st.ins {
			if in.cmd == "ADD" {
				bad("line %d: ADD %s: use COPY (and a RUN that fetches and checks a download) (DL3020)", in.line, in.args)
			}
			if in.cmd == "RUN" && strings.Contains(in.args, "apt-get install") {
				if !strings.Contains(in.args, "--no-install-recommends") {
					bad("line %d: apt-get install without --no-install-recommends (DL3015)", in.line)
				}
				if !strings.Contains(in.args, "rm -rf /var/lib/apt/lists/*") {
					bad("line %d: apt lists not removed in the same RUN (DL3009)", in.line)
				}
				if !strings.Contains(in.args, "apt-get update") {
					bad("line %d: apt-get install without apt-get update in the same RUN (DL3019)", in.line)
				}
			}
			if in.cmd == "RUN" && regexp.MustCompile(`\b(sudo|curl|wget)\b`).MatchString(in.args) {
				bad("line %d: sudo, curl or wget in a RUN: nothing is downloaded outside the package managers (DL3004)", in.line)
			}
		}
	}
	for _, name := range finalTargets {
		st := names[name]
		if st == nil {
			bad("no target %s (make image builds it)", name)
			continue
		}
		var user, entry string
		var health *instruction
		for i, in := range st.ins {
			switch in.cmd {
			case "USER":
				user = in.args
			case "ENTRYPOINT":
				entry = in.args
			case "HEALTHCHECK":
				health = &st.ins[i]
			case "COPY":
				if !strings.Contains(in.args, "--chown=") {
					bad("target %s line %d: COPY without --chown", name, in.line)
				}
			}
		}
		if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
			bad("target %s: last USER is %q, want a non-root user (DL3002)", name, user)
		}
		if entry != `["/usr/local/bin/gpupool"]` {
			bad("target %s: ENTRYPOINT %s, want [\"/usr/local/bin/gpupool\"] (the Helm chart passes only args)", name, entry)
		}
		switch {
		case health == nil:
			bad("target %s: no HEALTHCHECK (or HEALTHCHECK NONE with the reason above it)", name)
		case health.args == "NONE" && !strings.Contains(health.comment, "No HEALTHCHECK:"):
			bad("target %s line %d: HEALTHCHECK NONE needs a comment above it saying why", name, health.line)
		}
	}
	// chDB (180 MB) only where the embedded store is used.
	for _, st := range stages {
		for _, in := range st.ins {
			if in.cmd == "COPY" && strings.Contains(in.args, "libchdb.so") && st.name != "server-chdb" {
				bad("stage %s line %d copies libchdb.so: only server-chdb should have it", st.name, in.line)
			}
		}
	}
	if c := names["collector"]; c != nil && !strings.Contains(argRef.ReplaceAllStringFunc(c.base, func(m string) string { return args[argRef.FindStringSubmatch(m)[1]] }), "nvidia/cloud-native/dcgm") {
		bad("collector is built on %s, want NVIDIA's DCGM image (libdcgm)", c.base)
	}
	return problems
}

func TestDockerfileLint(t *testing.T) {
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lintDockerfile(string(data)) {
		t.Error(p)
	}
}

// TestDockerfileLintCatches feeds the linter a Dockerfile breaking each rule.
func TestDockerfileLintCatches(t *testing.T) {
	good := "FROM golang:1.26.8-bookworm AS build\nRUN go build\n" +
		"FROM gcr.io/distroless/cc-debian12:nonroot AS server\nCOPY --from=build --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\n" +
		"FROM server AS server-chdb\nCOPY --from=build --chown=65532:65532 /x/libchdb.so /l/libchdb.so\nUSER 65532\n# No HEALTHCHECK: as server.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\n" +
		"FROM nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04 AS collector\nCOPY --from=build --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\n"
	if p := lintDockerfile(good); len(p) != 0 {
		t.Fatalf("the good example fails: %v", p)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"latest", "golang:1.26.8-bookworm", "golang:latest", "not pinned"},
		{"untagged", "golang:1.26.8-bookworm", "golang", "not pinned"},
		{"root", "USER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\nFROM server", "USER root\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\nFROM server", "non-root"},
		{"add url", "RUN go build", "ADD https://example.com/x.tgz /x", "ADD"},
		{"apt recommends", "RUN go build", "RUN apt-get update && apt-get install -y gcc && rm -rf /var/lib/apt/lists/*", "no-install-recommends"},
		{"apt lists", "RUN go build", "RUN apt-get update && apt-get install -y --no-install-recommends gcc", "lists not removed"},
		{"no chown", "COPY --from=build --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\nFROM server", "COPY --from=build /out/gpupool /usr/local/bin/gpupool\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\nFROM server", "without --chown"},
		{"healthcheck unexplained", "# No HEALTHCHECK: as server.\n", "", "HEALTHCHECK"},
		{"chdb in collector", "COPY --from=build --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\n", "COPY --from=build --chown=65532:65532 /x/libchdb.so /l/libchdb.so\nUSER 65532\n# No HEALTHCHECK: none.\nHEALTHCHECK NONE\nENTRYPOINT [\"/usr/local/bin/gpupool\"]\n", "libchdb"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("%s: the replacement changed nothing", c.name)
		}
		p := lintDockerfile(bad)
		if !strings.Contains(strings.Join(p, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one about %q", c.name, p, c.want)
		}
	}
}

// TestMakeImageBuildsEveryTarget checks make image builds each final target.
func TestMakeImageBuildsEveryTarget(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(mk), "\nimage:\n")
	if !ok {
		t.Fatal("Makefile has no image target")
	}
	body, _, _ = strings.Cut(body, "\n\n")
	var built []string
	for _, m := range regexp.MustCompile(`--target (\S+)`).FindAllStringSubmatch(body, -1) {
		built = append(built, m[1])
	}
	for _, want := range finalTargets {
		if !slices.Contains(built, want) {
			t.Errorf("make image does not build --target %s", want)
		}
	}
}
