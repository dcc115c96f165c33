package attribution

import "errors"

// ErrNoProcess means the process is gone: /proc/<pid> no longer exists (or the
// process exited while it was being read). The caller drops the PID rather than
// counting an attribution failure.
var ErrNoProcess = errors.New("no such process")

// ErrBadCgroup means /proc/<pid>/cgroup could not be parsed; the process stays
// unattributed.
var ErrBadCgroup = errors.New("malformed cgroup file")

// ErrKubelet means the kubelet's pod list could not be fetched or decoded. Attribute
// never returns it: a pod's processes are then attributed as "k8s/_/<pod uid>".
var ErrKubelet = errors.New("kubelet pod list unavailable")

// ErrMapping means the mapping file could not be read or is invalid; New returns it.
var ErrMapping = errors.New("invalid mapping file")
