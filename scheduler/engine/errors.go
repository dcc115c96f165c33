package engine

import "errors"

// ErrUnknownQueue means a job named a queue the model does not have.
var ErrUnknownQueue = errors.New("unknown queue")

// ErrInvalidJob means a job request is malformed: a size of zero, a card type or
// priority class that does not exist, a time limit past its pool's maximum.
var ErrInvalidJob = errors.New("invalid job")

// ErrOverQuota means a job can never run: it is larger than its queue's quota plus
// what the queue may borrow, or than any cluster has of the card it asks for.
var ErrOverQuota = errors.New("job exceeds what its queue can ever get")

// ErrNotAllowed means the job's team or project may not use the queue, or its
// team none of the clusters it names (Cluster.Teams).
var ErrNotAllowed = errors.New("queue or cluster not open to this team or project")

// ErrUnknownJob means no job has the ID given.
var ErrUnknownJob = errors.New("unknown job")

// ErrJobState means the job is not in a state that allows the request (finishing a
// job that has already finished, reclaiming one that waits in its queue).
var ErrJobState = errors.New("job is not in a state that allows this")

// ErrPriorityNotAllowed means the caller may not name the job's priority class
// in its queue: a team may use only the classes its queue allows it (by default
// those up to the queue's default class); operators and admins may use any.
var ErrPriorityNotAllowed = errors.New("priority class not allowed in this queue")
