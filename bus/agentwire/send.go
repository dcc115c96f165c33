package agentwire

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
)

// Send seals cmd with s, sends it to the agent of cmd.Cluster and cmd.Node and
// returns its answer. The scheduler's executors and tests use it.
func Send(ctx context.Context, nc *nats.Conn, cmd Command, s Signer) (Result, error) {
	data, err := Seal(cmd, s)
	if err != nil {
		return Result{}, err
	}
	msg, err := nc.RequestWithContext(ctx, bus.ActionsSubject(cmd.Cluster, cmd.Node), data)
	if err != nil {
		return Result{}, fmt.Errorf("agent: send %s to %s/%s: %w", cmd.ID, cmd.Cluster, cmd.Node, err)
	}
	var res Result
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return Result{}, fmt.Errorf("agent: answer from %s/%s: %w", cmd.Cluster, cmd.Node, err)
	}
	return res, nil
}
