// Command chdbendpoint serves a chDB endpoint — clickhouse-local speaking
// ClickHouse's native TCP and HTTP protocols on free loopback ports, on a temporary
// data path — until interrupted, for running the clickhouse-go backend's tests or
// gpupool against it by hand (deploy/testservers/chdb-endpoint.sh). `make test`
// needs none of this: the tests start their own (store/chdb/chdbtest).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chdbendpoint:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "gpupool-chdb-endpoint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ep, err := chdbtest.StartEndpoint(ctx, dir)
	if err != nil {
		return err
	}
	defer ep.Stop()
	fmt.Printf("ClickHouse %s: native %s, HTTP http://%s, data %s\n", ep.Version, ep.TCPAddr, ep.HTTPAddr, dir)
	fmt.Printf("GPUPOOL_TEST_CLICKHOUSE=%s\n", ep.TCPAddr)
	<-ctx.Done()
	return nil
}
