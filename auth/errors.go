package auth

import "errors"

// ErrNoCredential means the request carries no credential an authenticator
// reads (no Authorization header, no client certificate).
var ErrNoCredential = errors.New("no credential")

// ErrInvalidCredential means a credential was presented and refused: an unknown
// token, a bad signature, an expired token, a wrong audience.
var ErrInvalidCredential = errors.New("invalid credential")

// ErrUnauthenticated is what a client sees for a 401 (code "unauthenticated").
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrForbidden is what a client sees for a 403 (code "forbidden"): the caller is
// known, and its roles do not allow the call.
var ErrForbidden = errors.New("forbidden")

// ErrRateLimited is what a client sees for a 429 (code "rate_limited").
var ErrRateLimited = errors.New("rate limited")

// ErrBodyTooLarge is what a client sees for a 413 (code "too_large").
var ErrBodyTooLarge = errors.New("request body too large")

// ErrUnavailable means a credential could not be checked now (the OIDC provider
// does not answer): a 503, not the caller's fault.
var ErrUnavailable = errors.New("authentication unavailable")

// ErrTokenExists means a token of that name is already in the tokens file (revoke
// it first to replace it).
var ErrTokenExists = errors.New("token name already in the tokens file")

// ErrNoSuchToken means the tokens file has no token of that name.
var ErrNoSuchToken = errors.New("no token of that name in the tokens file")

// ErrTokensFileExposed means the tokens file may be read or changed by someone
// other than its owner, or is owned by someone other than the user editing it:
// the token commands leave it alone.
var ErrTokensFileExposed = errors.New("tokens file not private to its owner")
