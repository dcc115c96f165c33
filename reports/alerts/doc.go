// Package alerts delivers findings and scheduler notices to people on Slack.
//
// In: JSON messages on gpupool.findings.<kind> (the analyzer's findings as they open,
// escalate, change and resolve) and gpupool.alerts.<team> (the scheduler's notices:
// "will be reclaimed in 15 min"), read from JetStream through a durable consumer and
// decoded with schemas.DecodeFindingMessage.
// Out: Block Kit messages, one per finding, routed to the owning team's channel, sent
// through an incoming webhook or a bot token; with a bot token later events update the
// original message, with a webhook they follow as new messages.
//
// Nothing is lost while Slack is down: a message is acked only after Slack accepted
// it, so JetStream keeps the rest. Nothing is sent twice: which events of which
// finding reached which channel is recorded in a JetStream key-value bucket before the
// message is acked, and checked before sending. Posts are spaced per channel
// (Slack allows about one message per second per channel), and 429 and 5xx answers
// are retried after Slack's Retry-After or a capped backoff.
package alerts
