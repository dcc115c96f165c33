package main

import (
	"bytes"
	"fmt"
	"github.com/gpupool/gpupool/scheduler/api"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/auth"
)

// parseArgs parses args as gpupool's command line, printing nothing.
func parseArgs(t *testing.T, args ...string) error {
	t.Helper()
	var cli CLI
	var out bytes.Buffer
	_, err := newParser(&cli, kong.Writers(&out, &out), kong.Exit(func(int) { t.Fatal("the parser exited") })).Parse(args)
	return err
}

// TestEnumFlagsListValues walks every flag and argument of every command: each
// one with a fixed set of values, given one it does not know, fails naming
// itself and every valid value.
func TestEnumFlagsListValues(t *testing.T) {
	var cli CLI
	k := newParser(&cli)
	var found []string
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		name := strings.Join(path, " ")
		for _, f := range n.Flags {
			if f.Enum == "" {
				continue
			}
			found = append(found, strings.TrimSpace(name+" --"+f.Name))
			err := parseArgs(t, append(slices.Clone(path), "--"+f.Name, "no-such-value")...)
			for _, v := range f.EnumSlice() {
				if v != "" && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", v))) {
					t.Errorf("%s --%s no-such-value: %v; want every valid value listed (%q missing)", name, f.Name, err, v)
				}
			}
			if err != nil && !strings.Contains(err.Error(), "--"+f.Name) {
				t.Errorf("%s --%s: %v does not name the flag", name, f.Name, err)
			}
		}
		for _, a := range n.Positional {
			if a.Enum != "" {
				t.Errorf("%s <%s>: an enumerated argument: add it to this test", name, a.Name)
			}
		}
		for _, c := range n.Children {
			walk(c, append(slices.Clone(path), c.Name))
		}
	}
	walk(k.Model.Node, nil)
	for _, want := range []string{"--log-level", "sql --format", "collector --source", "jobs ls --state", "report run --format", "token list --format"} {
		if !slices.Contains(found, want) {
			t.Errorf("no enumerated flag %q among %v", want, found)
		}
	}
}

// TestOtherEnumeratedFlagsListValues: flags whose values are a closed set or a
// fixed form that kong does not check (a period, a time zone, a time, a role, an
// expiry; the scheduler's priority classes, queues, cards, clusters and
// workloads) fail naming the valid values or the form.
func TestOtherEnumeratedFlagsListValues(t *testing.T) {
	g := &Globals{DataDir: t.TempDir()}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"demo --start", []string{"demo", "--start", "yesterday"}, `"2006-01-02T15:04:05Z07:00"`},
		{"submit --not-before", []string{"submit", "-q", "dev", "--team", "t", "--not-before", "tomorrow"}, `"2006-01-02T15:04:05Z07:00"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := parseArgs(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	period := func(p, tz string) error {
		return (&ReportRunCmd{Period: p, TimeZone: tz, Format: []string{"csv"}}).Run(g, t.Context())
	}
	if err := period("2026-13", "UTC"); err == nil || !strings.Contains(err.Error(), "want a month (2026-11), a day (2026-11-30) or an ISO week (2026-W48)") {
		t.Errorf("report run --period 2026-13: %v", err)
	}
	if err := period("2026-11", "Mars/Olympus"); err == nil || !strings.Contains(err.Error(), "an IANA name: UTC, Europe/Berlin") {
		t.Errorf("report run --timezone Mars/Olympus: %v", err)
	}
	if err := (&TokenCreateCmd{Name: "bob", Role: []string{"root"}, tokensFile: tokensFile{TokensFile: t.TempDir() + "/tokens"}}).Run(g); err == nil ||
		!strings.Contains(err.Error(), "is not admin, operator, finance, analyzer, agent or team:<name>") {
		t.Errorf("token create --role root: %v", err)
	}
	if err := (&TokenCreateCmd{Name: "bob", Role: []string{"admin"}, Expires: "soon"}).Run(g); err == nil ||
		!strings.Contains(err.Error(), "--expires: expiry \"soon\": want a positive duration from now (720h, 90d), a date") {
		t.Errorf("token create --expires soon: %v", err)
	}

	srv, _, dir := schedulerAPI(t, map[string]auth.Role{"admin": auth.RoleAdmin})
	c := schedulerClient{SchedulerURL: srv.URL, Format: "table", TokenFile: dir + "/admin.token", out: &bytes.Buffer{}}
	for _, tc := range []struct {
		name string
		cmd  SubmitCmd
		want string
	}{
		{"--priority", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Priority: "high"}}, `priority class "high" does not exist (classes: `},
		{"--queue", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "gaming", Team: "nlp", GPUs: 1}}, `unknown queue "gaming" (queues: `},
		{"--card", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Card: "RTX-9090"}}, `card "RTX-9090" does not exist (cards: `},
		{"--cluster", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Cluster: "moon"}}, `cluster "moon" does not exist (clusters: `},
		{"--clusters", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Clusters: []string{"any", "moon"}}}, `clusters[0]: "any" stands alone`},
		{"--locality", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Locality: map[string]string{"region": "moon"}}}, `lacks locality region=moon`},
		{"--workload", SubmitCmd{SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, Workload: "gaming"}}, `workload "gaming" is not training, inference, batch-inference, dev or other`},
	} {
		t.Run("submit "+tc.name, func(t *testing.T) {
			tc.cmd.schedulerClient = c
			if err := tc.cmd.Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

// TestSubmitClustersFlags: --clusters takes a comma-separated list and
// --locality key=value pairs, as the job's clusters and locality.
func TestSubmitClustersFlags(t *testing.T) {
	var cli CLI
	var out bytes.Buffer
	_, err := newParser(&cli, kong.Writers(&out, &out), kong.Exit(func(int) { t.Fatal("the parser exited") })).
		Parse([]string{"submit", "-q", "dev", "--team", "t", "--clusters", "eu-west-b,us-east-a", "--locality", "region=eu"})
	if err != nil {
		t.Fatal(err)
	}
	if s := cli.Submit; !slices.Equal(s.Clusters, []string{"eu-west-b", "us-east-a"}) || len(s.Locality) != 1 || s.Locality["region"] != "eu" {
		t.Errorf("clusters %q, locality %v", s.Clusters, s.Locality)
	}
}
