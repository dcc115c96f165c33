package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/gpupool/gpupool/scheduler/api"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// TestSchedulerCommandsAuth: without a token the commands get 401 with a hint
// of what to pass; GPUPOOL_TOKEN and --token-file are sent; a team's token may
// not submit for another team (403), and nothing is queued.
func TestSchedulerCommandsAuth(t *testing.T) {
	srv, svc, dir := schedulerAPI(t, map[string]auth.Role{"nlp": auth.TeamRole("nlp")})
	g := &Globals{DataDir: t.TempDir()} // no admin token in it
	var out bytes.Buffer
	none := schedulerClient{SchedulerURL: srv.URL, Format: "table", out: &out}
	err := (&QueueLsCmd{none}).Run(g, t.Context())
	if !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "--token-file or GPUPOOL_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
	env := none
	env.Token = "tok-nlp" // what GPUPOOL_TOKEN sets
	if err := (&QueueLsCmd{env}).Run(g, t.Context()); err != nil {
		t.Fatalf("GPUPOOL_TOKEN: %v", err)
	}
	file := none
	file.TokenFile = filepath.Join(dir, "nlp.token")
	if err := (&SubmitCmd{schedulerClient: file, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1}}).Run(g, t.Context()); err != nil {
		t.Fatalf("--token-file, own team: %v", err)
	}
	err = (&SubmitCmd{schedulerClient: file, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "vision", GPUs: 1}}).Run(g, t.Context())
	if !errors.Is(err, auth.ErrForbidden) || !strings.Contains(err.Error(), `may not submit jobs for team "vision"`) {
		t.Fatalf("another team's submit: %v", err)
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 1 || jobs[0].Spec.Team != "nlp" {
		t.Errorf("jobs after a refused submit: %+v", jobs)
	}
	missing := none
	missing.TokenFile = filepath.Join(dir, "missing.token")
	if err := (&JobsLsCmd{schedulerClient: missing}).Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("a missing --token-file: %v", err)
	}
}

// TestSchedulerCommandsInjection passes SQL-ish strings through every string flag
// of jobs ls and actions ls, as admin and as a team: each lists nothing (no
// string is taken for anything but a value), and a team never sees another
// team's rows.
func TestSchedulerCommandsInjection(t *testing.T) {
	srv, _, dir := schedulerAPI(t, map[string]auth.Role{"admin": auth.RoleAdmin, "nlp": auth.TeamRole("nlp")})
	g := &Globals{DataDir: t.TempDir()}
	as := func(name string, out *bytes.Buffer) schedulerClient {
		return schedulerClient{SchedulerURL: srv.URL, Format: "json", TokenFile: filepath.Join(dir, name+".token"), out: out}
	}
	var out bytes.Buffer
	for _, team := range []string{"nlp", "vision"} {
		if err := (&SubmitCmd{schedulerClient: as("admin", &out), SubmitFlags: api.SubmitFlags{Queue: "dev", Team: team, GPUs: 1}}).Run(g, t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, inj := range []string{`x' OR 1=1 --`, `nlp' OR team='vision`, `'; DROP TABLE actions; --`, `nlp') OR (1=1`} {
		for _, who := range []string{"admin", "nlp"} {
			cmds := map[string]func(c schedulerClient) error{
				"jobs ls --queue": func(c schedulerClient) error { return (&JobsLsCmd{schedulerClient: c, Queue: inj}).Run(g, t.Context()) },
				"actions ls --job": func(c schedulerClient) error {
					return (&ActionsLsCmd{schedulerClient: c, Job: inj}).Run(g, t.Context())
				},
				"actions ls --decision": func(c schedulerClient) error {
					return (&ActionsLsCmd{schedulerClient: c, Decision: inj}).Run(g, t.Context())
				},
				"actions ls --pool": func(c schedulerClient) error {
					return (&ActionsLsCmd{schedulerClient: c, Pool: inj}).Run(g, t.Context())
				},
			}
			if who == "admin" {
				cmds["jobs ls --team"] = func(c schedulerClient) error { return (&JobsLsCmd{schedulerClient: c, Team: inj}).Run(g, t.Context()) }
				cmds["actions ls --team"] = func(c schedulerClient) error {
					return (&ActionsLsCmd{schedulerClient: c, Team: inj}).Run(g, t.Context())
				}
			}
			for name, run := range cmds {
				out.Reset()
				if err := run(as(who, &out)); err != nil {
					t.Fatalf("%s %q as %s: %v", name, inj, who, err)
				}
				var rows []json.RawMessage
				if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 0 {
					t.Errorf("%s %q as %s listed %s", name, inj, who, out.String())
				}
			}
			err := (&JobsLsCmd{schedulerClient: as("nlp", &out), Team: inj}).Run(g, t.Context())
			if !errors.Is(err, auth.ErrForbidden) {
				t.Errorf("jobs ls --team %q as team nlp: %v, want 403", inj, err)
			}
		}
	}
	out.Reset()
	if err := (&ActionsLsCmd{schedulerClient: as("nlp", &out)}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	var rows []scheduler.Action
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("team nlp's actions: %s %v", out.String(), err)
	}
	for _, r := range rows {
		if r.Team != "nlp" {
			t.Errorf("team nlp sees a row of team %q", r.Team)
		}
	}
}
