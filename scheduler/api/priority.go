package api

import (
	"errors"
	"net/http"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// mayUsePriority refuses (403) a team caller's job whose priority class its
// queue does not allow a team (scheduler.Model.CheckTeamPriority: by default,
// nothing above the queue's default class), naming the classes it may use.
// Operators and admins may use any class. A queue or class the model lacks is
// left to Submit, which says so after checking the request's identifiers.
// false means it replied.
func (h *handler) mayUsePriority(w http.ResponseWriter, r *http.Request, spec scheduler.JobSpec) bool {
	id := caller(r)
	if writeAll(id) {
		return true
	}
	if err := h.b.Model().CheckTeamPriority(spec.Queue, spec.PriorityClass); errors.Is(err, scheduler.ErrPriorityNotAllowed) {
		h.g.Forbid(w, r, auth.Describe(id)+" may not submit at this priority: "+err.Error())
		return false
	}
	return true
}
