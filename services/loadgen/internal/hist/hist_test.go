package hist

import (
	"math"
	"testing"
	"time"
)

func TestExactBelow256us(t *testing.T) {
	var h H
	for v := uint64(1); v <= 100; v++ {
		h.RecordMicros(v)
	}
	if h.Count() != 100 || h.Mean() != 0.0505 || h.Max() != 0.1 {
		t.Fatalf("count %d mean %v max %v", h.Count(), h.Mean(), h.Max())
	}
	for q, want := range map[float64]float64{0.5: 0.050, 0.99: 0.099, 0.999: 0.100, 0.01: 0.001, 1: 0.1} {
		if got := h.Quantile(q); got != want {
			t.Errorf("q%v = %v, want %v", q, got, want)
		}
	}
}

func TestRelativeErrorAndMerge(t *testing.T) {
	var a, b H
	for _, d := range []time.Duration{300 * time.Microsecond, 2 * time.Millisecond, 1500 * time.Millisecond} {
		a.Record(d)
	}
	b.Record(40 * time.Second)
	a.Merge(&b)
	if a.Count() != 4 {
		t.Fatalf("count %d", a.Count())
	}
	for q, want := range map[float64]float64{0.25: 0.3, 0.5: 2, 0.75: 1500, 1: 40000} {
		got := a.Quantile(q)
		if math.Abs(got-want)/want > 1.0/128 {
			t.Errorf("q%v = %v, want %v ±0.8%%", q, got, want)
		}
	}
}

func TestBuckets(t *testing.T) {
	for v := uint64(0); v < 1<<20; v += 37 {
		lo, hi := bounds(index(v))
		if v < lo || v > hi {
			t.Fatalf("%d not in bucket [%d, %d]", v, lo, hi)
		}
	}
	if index(math.MaxUint64) != nBuckets-1 {
		t.Fatal("huge value not in the last bucket")
	}
}

func TestEmpty(t *testing.T) {
	var h H
	if h.Quantile(0.99) != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram")
	}
}
