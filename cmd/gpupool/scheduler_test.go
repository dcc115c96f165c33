package main

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
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
	for _, args := range [][]string{{"queue", "ls"}, {"jobs", "ls", "--state", "queued"}, {"actions", "ls", "--since", "24h"}, {"scheduler", "--memory"}} {
		if _, err := p.Parse(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSchedulerCommands runs submit, queue ls, jobs ls and actions ls against a
// scheduler's API.
func TestSchedulerCommands(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithClock(func() time.Time { return now }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(svc, nil))
	defer srv.Close()
	var out bytes.Buffer
	client := schedulerClient{SchedulerURL: srv.URL, Format: "table", out: &out}
	sub := &SubmitCmd{schedulerClient: client, Queue: "dev", Team: "nlp", GPUs: 1, MinMemoryGiB: 40}
	if err := sub.Run(t.Context()); err != nil {
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
		{"queue ls", func() error { return (&QueueLsCmd{client}).Run(t.Context()) }, []string{"QUEUE", "dev", "L40S-48GB", "1/4", "training-exp"}},
		{"jobs ls", func() error { return (&JobsLsCmd{schedulerClient: client, Limit: 10}).Run(t.Context()) }, []string{"sched/nlp/1", "admitted", "L40S-48GB"}},
		{"actions ls", func() error { return (&ActionsLsCmd{schedulerClient: client, Limit: 10}).Run(t.Context()) }, []string{"admit", "ok", "sched/nlp/1"}},
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
		{&SubmitCmd{schedulerClient: client, Queue: "gaming", Team: "nlp", GPUs: 1}, scheduler.ErrUnknownQueue, `unknown queue "gaming"`},
		{&SubmitCmd{schedulerClient: client, Queue: "dev", Team: "nlp", GPUs: 64}, scheduler.ErrOverQuota, "can never run"},
		{&SubmitCmd{schedulerClient: client, Queue: "dev", Team: "nlp", GPUs: 0}, scheduler.ErrInvalidJob, "at least 1"},
	}
	for _, r := range refusals {
		err := r.cmd.Run(t.Context())
		if !errors.Is(err, r.want) || !strings.Contains(err.Error(), r.text) || !strings.HasPrefix(err.Error(), "submit: ") {
			t.Errorf("submit %+v: %v", r.cmd.Queue, err)
		}
	}
	down := &QueueLsCmd{schedulerClient{SchedulerURL: "http://127.0.0.1:1", out: &out}}
	if err := down.Run(t.Context()); !errors.Is(err, api.ErrUnreachable) {
		t.Errorf("queue ls against nothing: %v", err)
	}
}
