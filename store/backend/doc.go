// Package backend opens the store the configuration names: the embedded ClickHouse
// engine (chDB, store/chdb) or a ClickHouse server or cluster (store/clickhouse).
//
// In: the store section of the configuration file (Config). Out: a store.Store,
// opened read-only or for writing, and for writing brought up to the newest schema
// with the embedded migrations. It is the one place that knows both backends, so
// the components above take a store.Store and never choose. chDB's library is
// loaded only when the embedded backend is opened.
package backend
