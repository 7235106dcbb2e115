package diameter

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// The cache answers a retransmission with the first answer re-addressed to its Hop-by-Hop-Id;
// it always holds the size most recent answers, forgets those more than twice size back, and
// answers nothing older than its TTL; another session with the same End-to-End-Id is a miss.
func TestDupCache(t *testing.T) {
	const size = 4
	now := time.Unix(1_700_000_000, 0)
	d := newDupCache(size, 30*time.Second)
	answer := func(i int) []byte {
		b := make([]byte, 20)
		binary.BigEndian.PutUint32(b[16:20], uint32(i)) // End-to-End-Id: which answer
		return b
	}
	found := func(i int) bool {
		b, ok := cachedAnswer(d, refOf(dupKey{"pcef", fmt.Sprint("s", i), uint32(i)}), 0xabcd, now)
		if ok && (binary.BigEndian.Uint32(b[12:16]) != 0xabcd || binary.BigEndian.Uint32(b[16:20]) != uint32(i)) {
			t.Fatalf("answer %d: %x", i, b)
		}
		return ok
	}
	for i := range 3 * size {
		putAnswer(d, refOf(dupKey{"pcef", fmt.Sprint("s", i), uint32(i)}), answer(i), now)
		for j := max(0, i-size+1); j <= i; j++ {
			if !found(j) {
				t.Fatalf("after %d puts, answer %d (of the last %d) not found", i+1, j, size)
			}
		}
		for j := 0; j < i-2*size+1; j++ {
			if found(j) {
				t.Fatalf("after %d puts, answer %d (more than %d back) still found", i+1, j, 2*size)
			}
		}
	}
	last := 3*size - 1
	if _, ok := cachedAnswer(d, refOf(dupKey{"pcef", "another session", uint32(last)}), 1, now); ok {
		t.Fatal("another session's request with the same End-to-End-Id got the cached answer")
	}
	if _, ok := cachedAnswer(d, refOf(dupKey{"pcef", fmt.Sprint("s", last), uint32(last)}), 1, now.Add(31*time.Second)); ok {
		t.Fatal("an answer older than the TTL was replayed")
	}
}

// BenchmarkDupCache is what every application request costs the cache: a lookup that misses
// (not a retransmission) and the answer put, on a full cache of distinct sessions.
func BenchmarkDupCache(b *testing.B) {
	d := newDupCache(8192, 30*time.Second)
	now := time.Now()
	const sessions = 1 << 16
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("pcef.loadgen;1732812345;%d", i)
	}
	answer := make([]byte, 200)
	for i := range 2 * 8192 {
		putAnswer(d, refOf(dupKey{"pcef.loadgen", ids[i%sessions], uint32(i)}), answer, now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e2e := uint32(i + 2*8192)
		sid := ids[i%sessions]
		if _, ok := cachedAnswer(d, refOf(dupKey{"pcef.loadgen", sid, e2e}), 1, now); ok {
			b.Fatal("hit")
		}
		putAnswer(d, refOf(dupKey{"pcef.loadgen", sid, e2e}), answer, now)
	}
}
