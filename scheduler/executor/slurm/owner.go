package slurm

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/gpupool/gpupool/scheduler/executor"
)

var _ executor.Resolver = (*Executor)(nil)

var (
	accountField   = regexp.MustCompile(`(?:^|\s)Account=(\S*)`)
	userField      = regexp.MustCompile(`(?:^|\s)UserId=([^\s(]*)`)
	partitionField = regexp.MustCompile(`(?:^|\s)Partition=(\S*)`)
)

// jobOwner is who scontrol show job says a job belongs to (its first record:
// an array's tasks share their account and user).
type jobOwner struct{ account, user, partition string }

// parseOwner reads the account, user and partition of scontrol --oneliner show
// job output.
func parseOwner(out string) (jobOwner, error) {
	for line := range strings.Lines(out) {
		if !stateField.MatchString(line) {
			continue
		}
		var o jobOwner
		if m := accountField.FindStringSubmatch(line); m != nil && m[1] != "(null)" {
			o.account = m[1]
		}
		if m := userField.FindStringSubmatch(line); m != nil {
			o.user = m[1]
		}
		if m := partitionField.FindStringSubmatch(line); m != nil && m[1] != "(null)" {
			o.partition = m[1]
		}
		return o, nil
	}
	return jobOwner{}, fmt.Errorf("no job record in scontrol show job output %q", truncate(out, 200))
}

// Owner reads the job's account, user and partition with scontrol show job and
// maps them through SlurmConfig.Accounts (else Users) and Partitions. A job
// Slurm does not know is ErrNotFound; one whose account and user the mapping
// lacks is ErrUnmapped.
func (e *Executor) Owner(ctx context.Context, t executor.Target) (executor.Owner, error) {
	o, err := e.owner(ctx, t)
	if err != nil {
		return o, fmt.Errorf("slurm: owner of %s: %w", describe(t), err)
	}
	return o, nil
}

func (e *Executor) owner(ctx context.Context, t executor.Target) (executor.Owner, error) {
	id, err := e.jobID(t)
	if err != nil {
		return executor.Owner{}, err
	}
	r := e.run(ctx, e.cfg.Scontrol, "--oneliner", "show", "job", id)
	if r.err != nil {
		return executor.Owner{}, r.error()
	}
	jo, err := parseOwner(r.stdout)
	if err != nil {
		return executor.Owner{}, fmt.Errorf("%s: %w", r.cmd, err)
	}
	o := executor.Owner{Account: jo.account, User: jo.user, Partition: jo.partition,
		Detail: fmt.Sprintf("account %q, user %q, partition %q of Slurm job %s", jo.account, jo.user, jo.partition, id)}
	o.Pool = e.cfg.Partitions[jo.partition]
	switch {
	case jo.account != "" && e.cfg.Accounts[jo.account] != "":
		o.Team = e.cfg.Accounts[jo.account]
	case jo.user != "" && e.cfg.Users[jo.user] != "":
		o.Team = e.cfg.Users[jo.user]
	default:
		return o, fmt.Errorf("%w: account %q, user %q (scheduler.slurm.accounts, scheduler.slurm.users)", executor.ErrUnmapped, jo.account, jo.user)
	}
	return o, nil
}
