// Package daemon is `gpupool scheduler` as a process: the scheduler service with
// its audit trail and the analyzer's open findings in the store, its job events
// and notices to owners on the bus, the executors scheduler.executor lists, and
// its HTTP API.
//
// In: Config (the scheduler section, the store and bus sections, where the jobs
// are kept across restarts, or memory mode with neither store nor bus). Out: the
// API on scheduler.listen, admission and policy passes until ctx ends, their
// decisions in the actions table and their job events on gpupool.jobs.<cluster>.
package daemon
