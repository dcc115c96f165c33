// Package console is `gpupool console`: the web view of the whole pool, served by
// the gpupool binary, for platform engineers, team leads and finance.
//
// In: the store (the same tables and finance views `gpupool report run` and
// `gpupool sql` read: gpu_samples, gpu_minute, gpu_hour, process_minute, jobs,
// chargeback_priced, capacity, queue_wait, findings, actions) and, when one is
// configured, the scheduler's API (queues, quotas, the model's pools, its jobs).
// Out: HTML pages, each a URL with its filters in the query string: Fleet,
// Pools and queues, Jobs and a job's page, Findings and a finding's page, the
// audit trail (Actions), Chargeback (with CSV and Parquet downloads) and
// Capacity. Charts are inline SVG drawn on the server; the one script, embedded
// like the stylesheet, refreshes the live pages' content in place every few
// seconds. Nothing is fetched from another origin: the console works offline.
//
// Access: every page is behind auth.Guard (a bearer token, or the token given on
// the login page, kept in an HttpOnly, SameSite=Strict cookie). Roles: admin,
// operator and finance see everything; a team:<name> role sees the fleet's GPUs
// (without other teams' jobs), and only its own team's jobs, findings, actions
// and costs; other roles get 403. The console changes nothing (login and logout
// aside, which check the request's Origin).
//
// Times: the console's "now" is the newest minute in the store (a simulated
// fleet's clock, in the demo), so the last 24 hours are the data's last 24 hours.
// Units: GPU-hours, ratios 0..1 shown as percentages, MiB, watts, money in the
// price book's currency.
package console
