package scheduler

import (
	"github.com/gpupool/gpupool/scheduler/executor"
)

// processIn is a fake executor's answer that every process and job it is asked
// about is in pool, of no team.
func processIn(pool string) func(executor.Target) (executor.Owner, error) {
	return func(executor.Target) (executor.Owner, error) {
		return executor.Owner{Pool: pool, Detail: "fake: in pool " + pool}, nil
	}
}

// ownedBy is a fake executor's answer that every job it is asked about is
// team's, in pool.
func ownedBy(team, pool string) func(executor.Target) (executor.Owner, error) {
	return func(executor.Target) (executor.Owner, error) {
		return executor.Owner{Team: team, Pool: pool, Detail: "fake: team " + team}, nil
	}
}
