package dedup

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// The filter only spares lookups: a cache with it answers every Begin as the same cache
// without it, through rotations by size and by window, in both modes (in-flight entries,
// Abort), with a filter small enough that its bits collide often.
func TestFilterChangesNoAnswer(t *testing.T) {
	for _, opt := range []Options[uint64]{
		{Size: 64, TTL: time.Minute},
		{Window: time.Second, InFlight: true, Shards: 4, Shard: func(s uint64) int { return int(s % 7) }},
	} {
		plain := New[uint64, uint32](opt)
		opt.Filter, opt.Hash = 256, func(s uint64) uint64 { return s }
		filtered := New[uint64, uint32](opt)
		rng := rand.New(rand.NewPCG(1, 2))
		now := time.Now()
		hits := 0
		for i := range 200_000 {
			s, d := rng.Uint64N(512), rng.Uint32N(3)
			now = now.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
			switch rng.IntN(3) {
			case 0:
				a1, st1 := plain.Begin(s, d, now)
				a2, st2 := filtered.Begin(s, d, now)
				if st1 != st2 || !bytes.Equal(a1, a2) {
					t.Fatalf("op %d, %+v: Begin(%d, %d) = %v %q with the filter, %v %q without", i, opt, s, d, st2, a2, st1, a1)
				}
				if st1 == Answered {
					hits++
				}
			case 1:
				reply := []byte{byte(i), byte(i >> 8)}
				plain.Finish(s, d, reply, now)
				filtered.Finish(s, d, reply, now)
			default:
				plain.Abort(s, d)
				filtered.Abort(s, d)
			}
		}
		if hits == 0 {
			t.Fatalf("%+v: no answer found: the test tests nothing", opt)
		}
	}
}
