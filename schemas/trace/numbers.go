package trace

import (
	"bytes"
	"math"
)

var float32pow10 = [...]float32{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// parseFloat32Exact parses the common "-12.345" and "3100000000" without strconv
// when the digits fit a float32 mantissa exactly: one exact multiplication or
// division by a power of ten then rounds correctly, as strconv's own fast path
// does. ok is false for anything else.
func parseFloat32Exact(lit []byte) (float32, bool) {
	i, neg := 0, false
	if len(lit) > 0 && lit[0] == '-' {
		i, neg = 1, true
	}
	end, zeros := len(lit), 0
	if bytes.IndexByte(lit, '.') < 0 {
		for end > i+1 && lit[end-1] == '0' {
			end--
			zeros++
		}
	}
	var mant uint32
	exp, dot := 0, false
	for ; i < end; i++ {
		c := lit[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint32(c-'0')
			if mant >= 1<<24 {
				return 0, false
			}
			if dot {
				exp++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if exp >= len(float32pow10) || zeros >= len(float32pow10) {
		return 0, false
	}
	v := float32(mant)
	if zeros > 0 {
		v *= float32pow10[zeros]
	} else {
		v /= float32pow10[exp]
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseDigits parses a plain non-negative integer literal exactly.
func parseDigits(lit []byte) (uint64, bool) {
	if len(lit) == 0 || len(lit) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
