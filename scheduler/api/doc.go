// Package api is the scheduler's HTTP API (JSON) and its client, which the
// `gpupool submit`, `queue ls`, `jobs ls` and `actions ls` commands use.
//
//	GET    /v1/queues             queues with quota and use per card type
//	GET    /v1/model              cards, clusters, pools, priority classes, queues
//	POST   /v1/jobs               submit a scheduler.JobSpec → 201 and the job
//	GET    /v1/jobs               list jobs (?queue=&team=&state=&limit=)
//	GET    /v1/jobs/{id}          one job (its ID or an attempt's key)
//	POST   /v1/jobs/{id}          report its end: {"status": "succeeded"|"failed"|"cancelled"}
//	DELETE /v1/jobs/{id}          cancel it
//	GET    /v1/actions            the audit trail (?since=&until= RFC 3339, &job=&decision=&pool=&team=&limit=)
//	POST   /v1/findings           push findings: {"findings": [schemas.Finding…]} → 202
//	GET    /healthz               (no credential needed)
//
// Every route but /healthz is behind an auth.Guard: a caller without a valid
// credential gets 401 unauthenticated. Who may call what is in authz.go: admin
// and operator act on every job, finance reads everything, a team:<name> role
// submits, finishes, cancels and lists its own team's jobs and audit rows (403
// forbidden on another team's; another team's job named by its ID is 404
// unknown_job, the answer for a job that does not exist, so a team cannot tell
// whether an ID is taken) and reads the queues and the model, and only the
// analyzer (and admin) pushes findings. The changes a call makes are recorded in
// the audit trail with the caller as their actor.
//
// Errors are {"error": "...", "code": "..."} with a status that says what kind:
// 400 invalid (bad JSON, invalid size, unknown card), 401 unauthenticated, 403
// forbidden (the caller's role) or not_allowed (the queue is another team's), 404
// unknown_queue or unknown_job, 409 job_state, 413 too_large, 422 over_quota, 429
// rate_limited, 500 internal. The client turns them back into errors that match
// the scheduler's and auth's sentinels with errors.Is.
package api
