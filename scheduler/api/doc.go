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
//	GET    /v1/actions            the audit trail (?since=&until= RFC 3339, &job=&decision=&pool=&limit=)
//	POST   /v1/findings           push findings: {"findings": [schemas.Finding…]} → 202
//	GET    /healthz
//
// Errors are {"error": "...", "code": "..."} with a status that says what kind:
// 400 invalid (bad JSON, invalid size, unknown card), 403 not_allowed, 404
// unknown_queue or unknown_job, 409 job_state, 422 over_quota, 500 internal. The
// client turns them back into errors that match the scheduler's sentinels with
// errors.Is.
package api
