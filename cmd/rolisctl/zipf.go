package main

import (
	"math"
	"math/rand/v2"
)

// zipf draws 0..n-1 with P(i) ∝ 1/(i+1)^theta, 0 <= theta < 1 (Gray et
// al.'s method, as engine/src/workloads/zipf.h; theta 0 is uniform).
type zipf struct {
	n                          uint64
	theta                      float64
	zetan, alpha, eta, halfPow float64
}

func newZipf(n uint64, theta float64) *zipf {
	z := &zipf{n: n, theta: theta}
	if theta <= 0 || n < 2 {
		return z
	}
	const exact = 10_000_000
	m := min(n, exact)
	for i := uint64(1); i <= m; i++ {
		z.zetan += math.Pow(float64(i), -theta)
	}
	if n > m {
		z.zetan += (math.Pow(float64(n), 1-theta) - math.Pow(float64(m), 1-theta)) / (1 - theta)
	}
	zeta2 := 1 + math.Pow(0.5, theta)
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
	z.halfPow = zeta2
	return z
}

func (z *zipf) next(r *rand.Rand) uint64 {
	if z.theta <= 0 || z.n < 2 {
		return r.Uint64N(z.n)
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.halfPow {
		return 1
	}
	i := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(i, z.n-1)
}

// distinct fills out with distinct draws of next (len(out) <= the range).
func distinct(out []uint64, next func() uint64) {
	for i := range out {
	again:
		out[i] = next()
		for j := range i {
			if out[j] == out[i] {
				goto again
			}
		}
	}
}
