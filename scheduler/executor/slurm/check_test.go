package slurm

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// TestCheck: what a restarted scheduler learns of a Slurm job it had running,
// through scontrol stand-ins.
func TestCheck(t *testing.T) {
	target := executor.Target{Job: "slurm/c1/42", Source: "slurm", Cluster: "c1"}
	for _, tc := range []struct {
		name     string
		reply    reply
		wantGone bool
		want     string
		wantErr  error
	}{
		{name: "running", reply: reply{stdout: running}, want: "RUNNING"},
		{name: "requeued and held: still there", reply: reply{stdout: held}, want: "PENDING"},
		{name: "completed", reply: reply{stdout: completed}, wantGone: true, want: "ended (COMPLETED)"},
		{name: "purged from slurmctld", reply: reply{stderr: invalidJob, code: 1}, wantGone: true, want: "no longer knows job 42"},
		{name: "controller down", reply: reply{stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)", code: 1}, wantErr: ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			standIns(t, map[string]reply{show: tc.reply})
			e, err := New(executor.DefaultSlurmConfig())
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Check(t.Context(), target)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Gone != tc.wantGone || !strings.Contains(p.Detail, tc.want) {
				t.Errorf("Check = %+v, want Gone %t and a detail with %q", p, tc.wantGone, tc.want)
			}
		})
	}
}
