package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/schemas"
)

// TestSchedulerFlags: the scheduler commands are wired into the CLI.
func TestSchedulerFlags(t *testing.T) {
	var cli CLI
	p, err := kong.New(&cli, kong.Name("gpupool"))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := p.Parse([]string{"submit", "-q", "dev", "--team", "nlp", "--gpus", "2", "--min-memory-gib", "40",
		"--label", "gpupool.io/no-reclaim=true", "--time-limit", "2h", "--not-preemptible"})
	if err != nil {
		t.Fatal(err)
	}
	s := cli.Submit
	if kctx.Command() != "submit" || s.Queue != "dev" || s.GPUs != 2 || s.MinMemoryGiB != 40 || s.Label["gpupool.io/no-reclaim"] != "true" ||
		s.TimeLimit != 2*time.Hour || !s.NotPreemptible || s.SchedulerURL != api.DefaultURL {
		t.Errorf("parsed %s: %+v", kctx.Command(), s)
	}
	for _, args := range [][]string{{"queue", "ls"}, {"jobs", "ls", "--state", "queued"}, {"actions", "ls", "--since", "24h", "--team", "nlp"}, {"scheduler", "--memory"}} {
		if _, err := p.Parse(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	t.Setenv("GPUPOOL_TOKEN", "tok-env")
	if _, err := p.Parse([]string{"queue", "ls", "--token-file", "t.token", "--ca-file", "ca.pem", "--client-cert", "c.pem", "--client-key", "k.pem"}); err != nil {
		t.Fatal(err)
	}
	if q := cli.Queue.Ls; q.TokenFile != "t.token" || q.Token != "tok-env" || q.CAFile != "ca.pem" || q.ClientCert != "c.pem" || q.ClientKey != "k.pem" {
		t.Errorf("credentials: %+v", q.schedulerClient)
	}
}

// schedulerAPI serves a scheduler's API on a fixed clock, behind a guard whose
// tokens are "tok-<name>" for each name → role; it returns the server, the
// scheduler and a folder holding each token in <name>.token.
func schedulerAPI(t *testing.T, tokens map[string]auth.Role) (*httptest.Server, *scheduler.Service, string) {
	t.Helper()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithClock(func() time.Time { return now }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := auth.DefaultConfig()
	cfg.TokensFile = filepath.Join(dir, "tokens")
	var lines []string
	for name, role := range tokens {
		lines = append(lines, auth.TokenEntry{Name: name, Roles: []auth.Role{role}, Hash: auth.HashToken("tok-" + name)}.String())
		if err := os.WriteFile(filepath.Join(dir, name+".token"), []byte("tok-"+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg.TokensFile, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := auth.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(svc, g))
	t.Cleanup(srv.Close)
	return srv, svc, dir
}

// TestSchedulerCommands runs submit, queue ls, jobs ls and actions ls against a
// scheduler's API, with the admin token of the data dir.
func TestSchedulerCommands(t *testing.T) {
	srv, svc, dir := schedulerAPI(t, map[string]auth.Role{"admin": auth.RoleAdmin})
	g := &Globals{DataDir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(g.DataDir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "admin.token"), filepath.Join(g.DataDir, "auth", "admin.token")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	client := schedulerClient{SchedulerURL: srv.URL, Format: "table", out: &out}
	sub := &SubmitCmd{schedulerClient: client, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, MinMemoryGiB: 40}}
	if err := sub.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "submitted sched/nlp/1 to queue dev") {
		t.Errorf("submit printed %q", out.String())
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
		want []string
	}{
		{"queue ls", func() error { return (&QueueLsCmd{client}).Run(g, t.Context()) }, []string{"QUEUE", "dev", "L40S-48GB", "1/4", "training-exp"}},
		{"jobs ls", func() error { return (&JobsLsCmd{schedulerClient: client, Limit: 10}).Run(g, t.Context()) }, []string{"sched/nlp/1", "admitted", "L40S-48GB"}},
		{"actions ls", func() error { return (&ActionsLsCmd{schedulerClient: client, Limit: 10}).Run(g, t.Context()) },
			[]string{"ACTOR", "submit", "token:admin", "admit", "ok", "sched/nlp/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	refusals := []struct {
		cmd  *SubmitCmd
		want error
		text string
	}{
		{&SubmitCmd{schedulerClient: client, SubmitFlags: api.SubmitFlags{Queue: "gaming", Team: "nlp", GPUs: 1}}, scheduler.ErrUnknownQueue, `unknown queue "gaming"`},
		{&SubmitCmd{schedulerClient: client, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 64}}, scheduler.ErrOverQuota, "can never run"},
		{&SubmitCmd{schedulerClient: client, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 0}}, scheduler.ErrInvalidJob, "at least 1"},
		{&SubmitCmd{schedulerClient: client, SubmitFlags: api.SubmitFlags{Queue: "dev", Team: "nlp", GPUs: 1, MIGProfile: "1g.10gb"}}, scheduler.ErrInvalidJob, `mig_profile: no cluster has instances of "1g.10gb"`},
	}
	for _, r := range refusals {
		err := r.cmd.Run(g, t.Context())
		if !errors.Is(err, r.want) || !strings.Contains(err.Error(), r.text) || !strings.HasPrefix(err.Error(), "submit: ") {
			t.Errorf("submit %+v: %v", r.cmd.Queue, err)
		}
	}
	down := &QueueLsCmd{schedulerClient{SchedulerURL: "http://127.0.0.1:1", out: &out}}
	if err := down.Run(g, t.Context()); !errors.Is(err, api.ErrUnreachable) {
		t.Errorf("queue ls against nothing: %v", err)
	}
}

// TestSchedulerSlurmExecutor runs `gpupool scheduler` with executor slurm and
// stand-in scontrol and scancel: a policy's reclaim of an idle Slurm job, whose
// owner scontrol names, reaches scontrol as a held requeue.
func TestSchedulerSlurmExecutor(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls.log")
	for _, name := range []string{"scontrol", "scancel"} {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> '%s'\n", name, calls)
		if name == "scontrol" {
			script += "case \"$*\" in *'show job 42') echo 'JobId=42 JobName=train UserId=alice(1000) Account=ml-nlp Partition=dev JobState=RUNNING Reason=None';; esac\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script+"exit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "gpupool.yaml")
	yaml := `scheduler:
  interval: 100ms
  executor: slurm
  findings: none
  # The scheduler acts on a Slurm job only once scontrol says whose it is: its
  # account maps to a team, its partition to a pool.
  slurm: {scontrol: scontrol, scancel: scancel, requeue_hold: true, accounts: {ml-nlp: nlp}, partitions: {dev: dev}}
  policies:
    - {name: idle-reclaim, finding: idle, steps: [{action: reclaim, after: 0s}]}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Config: cfg, DataDir: filepath.Join(dir, "data"), LogLevel: "error"}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&SchedulerCmd{Memory: true, Listen: addr}).Run(g, ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	var client *api.Client
	since := time.Now().Add(-time.Hour)
	f := schemas.Finding{ID: "f1", Episode: 1, Kind: schemas.KindIdle, Job: "slurm/c1/42", Pool: "dev", Cluster: "c1", Since: since, FirstSeen: since}
	// The push succeeds once the command's API listens, with the admin token it wrote.
	waitUntil(t, "the finding pushed", 20*time.Second, func() error {
		var err error
		client, err = api.Dial("http://"+addr, api.Credentials{DefaultTokenFile: filepath.Join(g.DataDir, "auth", "admin.token")})
		if err != nil {
			return err
		}
		return client.AddFindings(t.Context(), []schemas.Finding{f})
	})
	waitUntil(t, "a held requeue of job 42", 20*time.Second, func() error {
		data, _ := os.ReadFile(calls)
		if !strings.Contains(string(data), "scontrol requeuehold Incomplete 42") {
			return fmt.Errorf("calls:\n%s", data)
		}
		return nil
	})
	// The row is recorded once the executor's call returns, just after it ran.
	var rows []scheduler.Action
	waitUntil(t, "the reclaim recorded", 20*time.Second, func() error {
		var err error
		if rows, err = client.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecReclaim}); err != nil || len(rows) == 0 {
			return fmt.Errorf("reclaim rows %+v: %v", rows, err)
		}
		return nil
	})
	if len(rows) != 1 || rows[0].Outcome != scheduler.OutcomeOK || rows[0].Executor != "slurm" {
		t.Errorf("reclaim rows: %+v", rows)
	}
}
