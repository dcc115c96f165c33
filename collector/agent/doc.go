// Package agent is the node agent inside the collector: it answers reclaim commands
// for its node over NATS request/reply on gpupool.actions.<cluster>.<node>.
//
// In: a signed Command (terminate: SIGTERM, then SIGKILL after a grace period; or
// kill: SIGKILL now) naming a PID. Out: a Result saying what happened (terminated,
// killed, exited, refused, failed).
//
// It acts only on processes that held a GPU in the collector's last sample (and, when
// the command names a job, only if that PID belonged to it), never on PID 1 or
// itself, and only on commands signed with the scheduler's shared secret
// (HMAC-SHA256 over the command) and issued recently. A command ID seen before gets
// the earlier result again, so a retried request never signals twice.
package agent
