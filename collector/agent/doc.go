// Package agent is the node agent inside the collector: it answers reclaim commands
// for its node over NATS request/reply on gpupool.actions.<cluster>.<node>.
//
// In: a signed Command (terminate: SIGTERM, then SIGKILL after a grace period; or
// kill: SIGKILL now) naming a PID. Out: a Result saying what happened (terminated,
// killed, exited, refused, failed).
//
// It acts only on processes that held a GPU in the collector's last sample (and, when
// the command names a job, only if that PID belonged to it), never on PID 1 or
// itself, and only on commands that are signed, fresh and for it:
//
//   - signed with the scheduler's ed25519 private key, checked with its public key
//     (public_key_file; the default), or with a secret shared with the scheduler
//     (secret_file, HMAC-SHA256; any node holding it can sign for every node);
//   - issued within max_skew of the agent's clock;
//   - naming this agent's cluster and node;
//   - with a nonce not seen before: the agent remembers each nonce until its
//     command goes stale, so a replayed message is refused without effect.
//
// A command ID seen before gets the earlier result again, so a retry (sealed anew,
// with a new nonce) never signals twice. The answer is not signed: the bus lets an
// agent answer only the requests it received (bus.RoleAgent).
package agent
