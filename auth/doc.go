// Package auth authenticates and limits the callers of gpupool's HTTP APIs and
// says who they are: an Identity with roles, in the request's context, for the
// API to authorise each call against.
//
// In: a Config (the auth: section of the configuration file) naming how callers
// prove who they are — static bearer tokens from a file that holds only their
// SHA-256 hashes (re-read when it changes), OIDC ID tokens from the company's
// identity provider (groups mapped to roles), TLS client certificates (subject
// CN or OU mapped to roles) — and the limits per identity (requests per second,
// body bytes). Out: a Guard, an http.Handler middleware that answers 401
// {"error": …, "code": "unauthenticated"} without a valid credential, 429 past the
// rate limit and 413 past the body limit, and puts the caller's Identity into the
// request context; Forbid and Allow answer 403 {"code": "forbidden"}. Denials are
// counted in gpupool_api_requests_denied_total{reason}.
//
// Roles: admin (everything), operator (queues, policies, actions on any job),
// team:<name> (its own jobs), finance (read-only), analyzer (the one identity
// that pushes findings), agent (a node agent). What each may do on an API is that
// API's decision (scheduler/api); this package only carries the roles.
//
// Secure by default: Mode "token" (the default) requires a credential on every
// request, and EnsureAdminToken writes a first admin token (0600) for the
// operator; Mode "none" is refused by CheckListen unless the listen address is
// loopback, and a non-loopback address needs TLS or an explicit Insecure.
package auth
