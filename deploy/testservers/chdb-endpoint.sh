#!/usr/bin/env bash
# Serve a chDB endpoint (ClickHouse's native and HTTP protocols on free loopback
# ports, a temporary data path) until Ctrl-C, e.g. to run the clickhouse-go
# backend's tests against it by hand:
#   deploy/testservers/chdb-endpoint.sh        # prints GPUPOOL_TEST_CLICKHOUSE=127.0.0.1:port
# `make test` does not need it: the tests start their own endpoint and stop it.
# It needs libchdb.so (make deps-run, or GPUPOOL_CHDB_LIB).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Built, not go run, so that Ctrl-C and SIGTERM reach it (and its endpoint, which
# dies with it) directly.
go build -o bin/chdbendpoint ./internal/testservers/chdbendpoint
exec bin/chdbendpoint
