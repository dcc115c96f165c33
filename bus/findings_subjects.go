package bus

// FindingsPrefix is the root of the analyzer's finding subjects.
const FindingsPrefix = "gpupool.findings"

// FindingsSubject is where the analyzer publishes findings of one kind (idle,
// zombie, memory_bound, wrong_card, low_util, compute_bound) when they open, escalate or resolve.
func FindingsSubject(kind string) string { return FindingsPrefix + "." + Token(kind) }
