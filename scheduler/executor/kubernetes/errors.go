package kubernetes

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrBlockedByPDB means the Eviction API refused to evict the pod because a
// PodDisruptionBudget allows no disruption now (HTTP 429). It is retryable: the
// budget allows the eviction once enough of the other pods are healthy.
var ErrBlockedByPDB = errors.New("eviction blocked by a PodDisruptionBudget")

// IsRetryable reports whether err is worth retrying unchanged later: an eviction
// blocked by a PodDisruptionBudget, API throttling, a timeout, a conflict or an
// unavailable API server. Not found, forbidden, invalid and unsupported are not.
func IsRetryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrBlockedByPDB), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsConflict(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
