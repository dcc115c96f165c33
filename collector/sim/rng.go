package sim

// mix64 is the splitmix64 finalizer: a cheap, well-distributed hash of one word.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash3 combines three words into one, so that streams derived from (seed, node,
// time) are independent of each other and of the order they are drawn in.
func hash3(a, b, c uint64) uint64 {
	return mix64(mix64(mix64(a^0x243f6a8885a308d3)^b) ^ c)
}

// noise is a splitmix64 stream for per-tick sample jitter. It is a value type so
// Sample keeps it on the stack: no allocation and no shared state between nodes.
type noise struct{ s uint64 }

func newNoise(seed uint64) noise { return noise{s: seed} }

func (n *noise) next() uint64 {
	n.s += 0x9e3779b97f4a7c15
	return mix64(n.s)
}

// unit returns a uniform float32 in [0, 1).
func (n *noise) unit() float32 { return float32(n.next()>>40) / (1 << 24) }

// tri returns a triangular value in (-1, 1) centred on 0: jitter that is usually
// small and never unbounded, unlike a normal draw.
func (n *noise) tri() float32 { return n.unit() + n.unit() - 1 }

// between returns a uniform float32 in [lo, hi).
func (n *noise) between(lo, hi float32) float32 { return lo + (hi-lo)*n.unit() }

// clamp01 keeps a ratio inside 0..1.
func clamp01(v float32) float32 {
	switch {
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}
