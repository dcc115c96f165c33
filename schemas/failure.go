package schemas

import "fmt"

// ReasonPoolReclaim is the failure reason of an attempt the pool's own
// scheduler took back (a policy's reclaim, or a reclaim or preemption for a
// queue's quota or a higher priority): job_failures (migration 0010) calls it
// "preempted", like a preemption by the cluster's scheduler or a spot reclaim,
// and the tables that list failures count it apart: it is the pool's policies
// working, not a job failing.
const ReasonPoolReclaim = "reclaimed_by_pool"

// FailureReasonSQL is job_failures' reason (the column or expression reason)
// with the pool's own reclaims apart: ReasonPoolReclaim where the attempt was
// preempted and the scheduler's decision on it (decision: job_failures'
// scheduler_decision, from actions with outcome ok) was a reclaim or a preempt.
func FailureReasonSQL(reason, decision string) string {
	return fmt.Sprintf(`if(%[1]s = 'preempted' AND %[2]s IN ('reclaim', 'preempt'), '%[3]s', %[1]s)`, reason, decision, ReasonPoolReclaim)
}
