// Package nats holds the example nats-server configuration of a gpupool
// installation: nats-server.conf, one account with JetStream and one
// least-privilege nkey user per process (each node's collector and agent, ingest,
// the analyzer, the scheduler, the alerter, an operator), with TLS. It has no
// code.
//
// The file is written by bus.ServerConfig from the users its test lists (go test
// ./deploy/nats -update), so it cannot drift from bus.User.Permissions; the test
// then runs a nats-server on it, with TLS, and drives the real collector, agent,
// ingest, analyzer publisher, scheduler publishers and executor, and alerter
// through it with the example credentials: each works, none meets a permissions
// violation, and a node's credential cannot publish another node's samples or
// findings, nor receive another node's commands. The role × subject table is in
// docs/bus-security.md.
package nats
