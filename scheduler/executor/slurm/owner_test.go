package slurm

import (
	"errors"
	"testing"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// TestOwner: a Slurm job's team is its account's, else its user's; its pool is
// its partition's; a job whose account and user are unmapped is nobody's, and
// one Slurm does not know is not found. Only scontrol show job is run.
func TestOwner(t *testing.T) {
	const line = "JobId=42 JobName=train UserId=ana(1000) GroupId=ana(1000) Account=nlp Priority=4294 JobState=RUNNING Partition=gpu Reason=None\n"
	for _, tc := range []struct {
		name      string
		accounts  map[string]string
		users     map[string]string
		replies   map[string]reply
		wantTeam  string
		wantPool  string
		wantErr   error
		wantCalls int
	}{
		{name: "by account", accounts: map[string]string{"nlp": "team-nlp"}, users: map[string]string{"ana": "team-ana"},
			replies: map[string]reply{show: {stdout: line}}, wantTeam: "team-nlp", wantPool: "dev"},
		{name: "by user when the account is unmapped", users: map[string]string{"ana": "team-ana"},
			replies: map[string]reply{show: {stdout: line}}, wantTeam: "team-ana", wantPool: "dev"},
		{name: "unmapped", accounts: map[string]string{"other": "x"},
			replies: map[string]reply{show: {stdout: line}}, wantErr: executor.ErrUnmapped},
		{name: "unknown job", accounts: map[string]string{"nlp": "team-nlp"},
			replies: map[string]reply{show: {stderr: invalidJob, code: 1}}, wantErr: executor.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := standIns(t, tc.replies)
			cfg := executor.DefaultSlurmConfig()
			cfg.Accounts, cfg.Users, cfg.Partitions = tc.accounts, tc.users, map[string]string{"gpu": "dev"}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			o, err := e.Owner(t.Context(), executor.Target{Job: "slurm/c1/42", Source: "slurm"})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Owner() error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && (o.Team != tc.wantTeam || o.Pool != tc.wantPool || o.Account != "nlp" || o.User != "ana" || o.Partition != "gpu") {
				t.Fatalf("Owner() = %+v, want team %s pool %s", o, tc.wantTeam, tc.wantPool)
			}
			if got := calls(); len(got) != 1 || got[0] != showCall {
				t.Fatalf("calls %v, want only %s", got, showCall)
			}
		})
	}
}
