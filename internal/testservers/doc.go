// Package testservers starts real servers that tests need and gpupool does not
// embed — Prometheus, and promtool to check what Prometheus will read — in
// processes of their own on loopback ports and temporary directories, stopped when
// the test ends however it ends. A test that needs one the machine lacks fails,
// saying how to install it (`make deps` does), unless its opt-out variable is set.
//
// The ClickHouse endpoint lives beside the embedded store, in store/chdb/chdbtest,
// so that the store's own tests can use it.
package testservers
