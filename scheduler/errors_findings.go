package scheduler

import "errors"

// ErrTooManyFindings means a findings push would leave its identity holding
// more pushed findings than Config.MaxPushedFindings allows.
var ErrTooManyFindings = errors.New("too many findings")

// ErrNotOwner means a job's labels name an external job (a Kubernetes Job or
// Kueue Workload, a Slurm job) that its executor says is not the job's team's,
// or whose owner it could not confirm: the scheduler does not act on it.
var ErrNotOwner = errors.New("the external job is not the team's")
