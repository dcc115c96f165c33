// Package agentexec is the scheduler's executor for processes: it sends signed
// commands to the node agent that runs inside each node's collector
// (collector/agent), over NATS request/reply (the protocol: bus/agentwire). Commands are signed with the
// scheduler's ed25519 private key (executor.AgentConfig.PrivateKeyFile; each agent
// holds the public key), or with a secret shared with the agents (SecretFile, the
// older mode), and name the cluster and node they are for.
//
// In: an executor.Target naming a process — Node, PID and, so that a reused PID is
// never signalled, the Job the PID belonged to — and a grace period. Out: one
// agentwire.Command per call and an executor.Outcome from the agent's Result.
//
// Kill sends Action terminate (SIGTERM, then SIGKILL after grace) when grace > 0,
// and kill (SIGKILL now) when it is 0. The command ID is a hash of (cluster, node,
// job, PID, action), so a retried request is answered by the agent with its first
// result and never signals twice. The request waits grace plus
// executor.AgentConfig.ReplyMargin for the answer. Outcomes map to:
//
//	terminated, killed  Done true
//	exited              Done false (the process was already gone)
//	refused             an error wrapping ErrRefused, with the agent's reason (a PID
//	                    that held no GPU, PID 1, a PID of another job, a bad
//	                    signature, a stale or replayed command, one for
//	                    another node)
//	failed              an error wrapping ErrFailed, with the agent's reason
//
// No agent answering (not running, wrong subject, timeout) is ErrUnreachable, which
// IsRetryable reports. Stop with a PID is Kill (a bare process cannot be requeued);
// Stop without one, and Resume, are executor.ErrUnsupported.
package agentexec
