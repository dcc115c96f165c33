// Package agent is the node agent inside the collector: it answers reclaim commands
// for its node over NATS request/reply on gpupool.actions.<cluster>.<node>.
//
// In: a signed Command (terminate: SIGTERM, then SIGKILL after a grace period; or
// kill: SIGKILL now) naming a PID. Out: a Result saying what happened (terminated,
// killed, exited, refused, failed).
//
// It acts only on processes that held a GPU in the collector's last sample, never
// on PID 1 or itself. Before it signals, it attributes the PID afresh from its
// cgroup and environment (WithAttributor; the collector's attribution): the PID
// must still belong to the job of the last sample and to the job the command
// names, and neither the pool the command carries (the scheduler's) nor the pool
// attribution gives the job may be one of protected_pools; a known pool other
// than the command's is refused too. A refusal is answered with its reason and
// logged. It acts only on commands that are signed, fresh and for it:
//
//   - signed with the scheduler's ed25519 private key, checked with its public key
//     (public_key_file; the default), or with a secret shared with the scheduler
//     (secret_file, HMAC-SHA256; any node holding it can sign for every node);
//   - issued within max_skew of the agent's clock;
//   - naming this agent's cluster and node;
//   - with a nonce not seen before: the agent remembers each nonce until its
//     command goes stale, so a replayed message is refused without effect. The
//     nonces are written to state_dir (commands.jsonl, 0600 in a 0700 directory)
//     and synced before the command is carried out, so an agent that restarts
//     refuses a replay of a command it accepted before.
//
// A command ID seen before gets the earlier result again, so a retry (sealed anew,
// with a new nonce) never signals twice. The answer is not signed: the bus lets an
// agent answer only the requests it received (bus.RoleAgent).
package agent
