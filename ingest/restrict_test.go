package ingest

import (
	"context"
	"errors"
	"testing"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

func TestCheckSamplesSubject(t *testing.T) {
	for _, tt := range []struct {
		name, subject, cluster, node string
		ok                           bool
	}{
		{"its own", bus.SamplesSubject("c1", "gpu-01"), "c1", "gpu-01", true},
		{"a node name with dots", bus.SamplesSubject("c1", "gpu-01.example.com"), "c1", "gpu-01.example.com", true},
		{"another node", bus.SamplesSubject("c1", "gpu-01"), "c1", "gpu-02", false},
		{"another cluster", bus.SamplesSubject("c1", "gpu-01"), "c2", "gpu-01", false},
		{"no cluster in the batch", bus.SamplesSubject("c1", "gpu-01"), "", "gpu-01", false},
		{"not a samples subject", bus.JobsSubject("c1"), "c1", "gpu-01", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSamplesSubject(tt.subject, tt.cluster, tt.node)
			if (err == nil) != tt.ok || (err != nil && deadLetterReason(err) != "subject_mismatch") {
				t.Fatalf("checkSamplesSubject(%s, %s, %s) = %v (reason %s); want ok %t", tt.subject, tt.cluster, tt.node, err, deadLetterReason(err), tt.ok)
			}
		})
	}
}

func TestCheckJobsSubject(t *testing.T) {
	ev := func(cluster, source string) schemas.JobEvent {
		return schemas.JobEvent{Job: "j", Event: schemas.EventStart, Cluster: cluster, Source: source}
	}
	for _, tt := range []struct {
		name, subject string
		event         schemas.JobEvent
		reason        string // empty: accepted
		scheduler     bool
	}{
		{"a collector's event", bus.JobsSubject("c1"), ev("c1", schemas.SourceKubernetes), "", false},
		{"no source", bus.JobsSubject("c1"), ev("c1", ""), "", false},
		{"another cluster", bus.JobsSubject("c1"), ev("c2", schemas.SourceSlurm), "subject_mismatch", false},
		{"no cluster", bus.JobsSubject("c1"), ev("", schemas.SourceSlurm), "subject_mismatch", false},
		{"source scheduler on a collector's subject", bus.JobsSubject("c1"), ev("c1", schemas.SourceScheduler), "source_not_allowed", false},
		{"the scheduler's event", bus.SchedulerJobsSubject("c1"), ev("c1", schemas.SourceScheduler), "", true},
		{"the scheduler's job not placed yet", bus.SchedulerJobsSubject(""), ev("", schemas.SourceScheduler), "", true},
		{"another source on the scheduler's subject", bus.SchedulerJobsSubject("c1"), ev("c1", schemas.SourceProcess), "source_not_allowed", true},
		{"the scheduler's subject, another cluster", bus.SchedulerJobsSubject("c1"), ev("c2", schemas.SourceScheduler), "subject_mismatch", true},
		{"an unknown jobs subject", "gpupool.jobs.c1.collector", ev("c1", ""), "subject_mismatch", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := checkJobsSubject(tt.subject, []schemas.JobEvent{tt.event})
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("checkJobsSubject(%s, %+v): reason %q (%v), want %q", tt.subject, tt.event, got, err, tt.reason)
			}
			if err == nil && sched != tt.scheduler {
				t.Errorf("scheduler = %t, want %t", sched, tt.scheduler)
			}
		})
	}
}

func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return deadLetterReason(err)
}

// fakeStore answers the identity lookup from a map, or with err.
type fakeStore struct {
	ids   map[string]JobIdentity
	err   error
	asked [][]string
}

func (f *fakeStore) Database() string { return "gpupool" }

func (f *fakeStore) Query(_ context.Context, _ string, p store.Params) (*store.Result, error) {
	if f.err != nil {
		return nil, f.err
	}
	jobs, err := parseArrayParam(p["jobs"])
	if err != nil {
		return nil, err
	}
	f.asked = append(f.asked, jobs)
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "job"}, {Name: "cluster"}, {Name: "team"}, {Name: "project"}, {Name: "queue"}}}
	for _, j := range jobs {
		if id, ok := f.ids[j]; ok {
			res.Rows = append(res.Rows, []any{j, id.Cluster, id.Team, id.Project, id.Queue})
		}
	}
	return res, nil
}

// parseArrayParam reads back store.ArrayParam's literal of plain names.
func parseArrayParam(s string) ([]string, error) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, errors.New("not an array literal: " + s)
	}
	var out []string
	for _, part := range splitTop(s[1 : len(s)-1]) {
		if len(part) < 2 || part[0] != '\'' || part[len(part)-1] != '\'' {
			return nil, errors.New("not a quoted string: " + part)
		}
		out = append(out, part[1:len(part)-1])
	}
	return out, nil
}

func splitTop(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// TestIdentityCheck: a job's cluster, team, project and queue, once given (in the
// store, an earlier message, or earlier in the same message), may be repeated or
// left out but not changed; the scheduler may leave out the cluster of a job not
// placed; a message refused records nothing; a store that cannot be read makes
// the check transient, not a dead letter.
func TestIdentityCheck(t *testing.T) {
	stored := map[string]JobIdentity{
		"k8s/vision/1": {Cluster: "c1", Team: "vision", Project: "detect", Queue: "prod"},
		"slurm/c2/7":   {Cluster: "c2", Team: "nlp"},
	}
	e := func(job, cluster, team, project, queue string) schemas.JobEvent {
		return schemas.JobEvent{Job: job, Event: schemas.EventStart, Cluster: cluster, Team: team, Project: project, Queue: queue}
	}
	for _, tt := range []struct {
		name      string
		events    []schemas.JobEvent
		scheduler bool
		reason    string
	}{
		{"repeats its identity", []schemas.JobEvent{e("k8s/vision/1", "c1", "vision", "detect", "prod")}, false, ""},
		{"partial: leaves everything out but its cluster", []schemas.JobEvent{e("k8s/vision/1", "c1", "", "", "")}, false, ""},
		{"another team", []schemas.JobEvent{e("k8s/vision/1", "c1", "nlp", "", "")}, false, "identity_changed"},
		{"another project", []schemas.JobEvent{e("k8s/vision/1", "c1", "", "other", "")}, false, "identity_changed"},
		{"another queue", []schemas.JobEvent{e("k8s/vision/1", "c1", "", "", "dev")}, false, "identity_changed"},
		{"another cluster's job", []schemas.JobEvent{e("slurm/c2/7", "c1", "", "", "")}, false, "identity_changed"},
		{"another cluster's job, no cluster named", []schemas.JobEvent{e("slurm/c2/7", "", "", "", "")}, false, "identity_changed"},
		{"the scheduler leaves the cluster out", []schemas.JobEvent{e("slurm/c2/7", "", "", "", "")}, true, ""},
		{"gives a field not given yet", []schemas.JobEvent{e("slurm/c2/7", "c2", "nlp", "mt", "batch")}, false, ""},
		{"a new job", []schemas.JobEvent{e("new/1", "c1", "nlp", "", "")}, false, ""},
		{"a new job changed within the message", []schemas.JobEvent{e("new/1", "c1", "nlp", "", ""), e("new/1", "c1", "vision", "", "")}, false, "identity_changed"},
		{"a scheduler job's team, as its key names it", []schemas.JobEvent{e("sched/nlp/4", "c1", "nlp", "", "")}, false, ""},
		{"a scheduler job given another team first", []schemas.JobEvent{e("sched/nlp/4", "c1", "vision", "", "")}, false, "identity_changed"},
		{"a scheduler job's later attempt given another team", []schemas.JobEvent{e("sched/nlp/4/2", "", "vision", "", "")}, true, "identity_changed"},
		{"a new job repeated within the message", []schemas.JobEvent{e("new/1", "c1", "nlp", "", ""), e("new/1", "c1", "nlp", "p", "")}, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ids := newIdentities(&fakeStore{ids: stored}, 10)
			err := ids.check(t.Context(), tt.events, tt.scheduler)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
			_, cached := ids.get(tt.events[0].Job)
			if cached != (err == nil) {
				t.Errorf("job cached = %t after a check that returned %v: a refused message must record nothing, an accepted one its jobs", cached, err)
			}
		})
	}

	t.Run("remembered from an accepted message, with no store", func(t *testing.T) {
		ids := newIdentities(nil, 10)
		if err := ids.check(t.Context(), []schemas.JobEvent{e("j", "c1", "nlp", "", "")}, false); err != nil {
			t.Fatal(err)
		}
		err := ids.check(t.Context(), []schemas.JobEvent{e("j", "c1", "vision", "", "")}, false)
		if !errors.Is(err, ErrIdentityChanged) {
			t.Fatalf("relabelled in a later message: %v, want ErrIdentityChanged", err)
		}
	})
	t.Run("the store is read once per job", func(t *testing.T) {
		st := &fakeStore{ids: stored}
		ids := newIdentities(st, 10)
		for range 3 {
			if err := ids.check(t.Context(), []schemas.JobEvent{e("k8s/vision/1", "c1", "", "", "")}, false); err != nil {
				t.Fatal(err)
			}
		}
		if len(st.asked) != 1 {
			t.Errorf("the store was asked %d times: %v", len(st.asked), st.asked)
		}
	})
	t.Run("store unreadable", func(t *testing.T) {
		ids := newIdentities(&fakeStore{err: errors.New("connection refused")}, 10)
		err := ids.check(t.Context(), []schemas.JobEvent{e("j", "c1", "nlp", "", "")}, false)
		if !errors.Is(err, errTransient) || deadLetterReason(err) != "other" {
			t.Fatalf("err = %v, want a transient error", err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		ids := newIdentities(nil, 2)
		for _, j := range []string{"a", "b", "c"} {
			if err := ids.check(t.Context(), []schemas.JobEvent{e(j, "c1", "nlp", "", "")}, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok := ids.get("a"); ok || ids.lru.Len() != 2 {
			t.Errorf("holds %d jobs (a: %t), want the 2 most recent", ids.lru.Len(), ok)
		}
	})
}
