// Package agentwire is the protocol between the scheduler and the node agents
// (collector/agent): a Command to stop one process, sealed (Seal) with the
// scheduler's ed25519 private key or a shared secret, sent over NATS
// request/reply on gpupool.actions.<cluster>.<node> (Send), opened and checked
// by the agent (Open: signature, algorithm, fields, freshness), and the agent's
// Result. It sits on the bus's floor so that the scheduler's executor and the
// agent share it without either importing the other.
//
// In: a Command and a Signer (Seal, Send); bytes from the bus and a Verifier
// (Open). Out: the sealed bytes; the checked Command or an error wrapping
// ErrBadSignature, ErrBadCommand or ErrStale; the agent's Result.
package agentwire
