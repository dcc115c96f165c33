package executor

import (
	"context"
	"errors"
)

// Owner is whose a job is, as the system that runs it says: the facts read from
// that system (a Kubernetes namespace; a Slurm account, user and partition) and
// what the executor's configuration maps them to. The scheduler acts on an
// external job only by this answer, never by what a finding or a job's labels
// claim about it.
type Owner struct {
	// Team, Queue and Pool are what the configuration maps the facts to; any may
	// be empty (a mapping that names a queue leaves the pool to the model).
	Team  string
	Queue string
	Pool  string
	// Facts, as read from the job's system.
	Namespace string
	Account   string
	User      string
	Partition string
	// Detail says, in words, where the answer comes from ("namespace ml of Job
	// ml/train", "account nlp of Slurm job 42").
	Detail string
}

// Resolver is an executor that can say whose a job (or, for a process executor,
// a process) is in its system. It resolves the target exactly as its actions
// would, so that the owner it reports is the owner of what they would touch.
type Resolver interface {
	// Owner reads the target's owner from the executor's system. A target the
	// system does not have is ErrNotFound; one whose facts the configuration does
	// not map to a team is ErrUnmapped.
	Owner(ctx context.Context, t Target) (Owner, error)
}

// ErrUnmapped means the executor found the job, but its configuration maps its
// namespace, account or user to no team: nobody may act on it through gpupool.
var ErrUnmapped = errors.New("executor: the job's owner is not in the configured mapping")
