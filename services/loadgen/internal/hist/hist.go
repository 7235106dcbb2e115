// Package hist is a log-linear latency histogram in microseconds: exact below 256 µs,
// within 1/128 (0.8%) of the value above, fixed size, mergeable, no allocation per sample.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits  = 7
	sub      = 1 << subBits // 128 sub-buckets per power of two
	linear   = 2 * sub      // values below are exact
	maxShift = 40
	nBuckets = linear + maxShift*sub
)

// H is a histogram of durations with microsecond resolution. The zero value is ready.
type H struct {
	counts [nBuckets]uint64
	n      uint64
	sum    uint64 // µs
	max    uint64 // µs
}

func index(v uint64) int {
	if v < linear {
		return int(v)
	}
	e := bits.Len64(v) - (subBits + 1) // ≥ 1
	if e > maxShift {
		return nBuckets - 1
	}
	m := v >> uint(e) // in [sub, 2*sub)
	return linear + (e-1)*sub + int(m-sub)
}

// lowest and highest value (µs) of bucket i.
func bounds(i int) (lo, hi uint64) {
	if i < linear {
		return uint64(i), uint64(i)
	}
	e := (i-linear)/sub + 1
	m := uint64((i-linear)%sub + sub)
	lo = m << uint(e)
	return lo, lo + (1 << uint(e)) - 1
}

// Record adds one duration.
func (h *H) Record(d time.Duration) { h.RecordMicros(uint64(max(d, 0) / time.Microsecond)) }

// RecordMicros adds one value in microseconds.
func (h *H) RecordMicros(us uint64) {
	h.counts[index(us)]++
	h.n++
	h.sum += us
	if us > h.max {
		h.max = us
	}
}

// Merge adds o into h.
func (h *H) Merge(o *H) {
	if o == nil {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count is the number of samples.
func (h *H) Count() uint64 { return h.n }

// Mean is the average in milliseconds (0 without samples).
func (h *H) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n) / 1000
}

// Max is the largest sample in milliseconds.
func (h *H) Max() float64 { return float64(h.max) / 1000 }

// Quantile returns the q-quantile (0 < q ≤ 1) in milliseconds: the smallest recorded value v
// such that at least q of the samples are ≤ v (nearest rank), reported as the middle of its
// bucket (exact below 256 µs) and never above the maximum.
func (h *H) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			v := min(lo+(hi-lo)/2, h.max)
			return float64(v) / 1000
		}
	}
	return float64(h.max) / 1000
}
