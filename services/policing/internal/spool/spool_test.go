package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T, dir string, maxBytes, seg int64) *Spool {
	t.Helper()
	s, err := Open(Options{Dir: dir, MaxBytes: maxBytes, SegmentBytes: seg})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func drain(t *testing.T, s *Spool) []string {
	t.Helper()
	var got []string
	if _, err := s.Replay(func(r []byte) error { got = append(got, string(r)); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendReplayInOrderAcrossSegmentsAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, 256) // tiny segments: many rolls
	for i := range 100 {
		if err := s.Append(fmt.Appendf(nil, "rec-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Records() != 100 {
		t.Fatalf("records = %d", s.Records())
	}
	// Replay 30, then fail: the failing record stays first in line.
	n := 0
	_, err := s.Replay(func(r []byte) error {
		if n == 30 {
			return errors.New("cassandra down")
		}
		if want := fmt.Sprintf("rec-%03d", n); string(r) != want {
			t.Fatalf("replayed %q, want %q", r, want)
		}
		n++
		return nil
	})
	if err == nil || n != 30 {
		t.Fatalf("replay: n=%d err=%v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Restart: the rest comes back, in order.
	s = open(t, dir, 1<<20, 256)
	if s.Records() != 70 {
		t.Fatalf("after restart records = %d, want 70", s.Records())
	}
	got := drain(t, s)
	if len(got) != 70 || got[0] != "rec-030" || got[69] != "rec-099" {
		t.Fatalf("got %d records, first %q last %q", len(got), got[0], got[len(got)-1])
	}
	if s.Records() != 0 || s.Bytes() != 0 {
		t.Fatalf("not empty: %d records, %d bytes", s.Records(), s.Bytes())
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) > 2 {
		t.Fatalf("replayed segments not removed: %v", segs)
	}
	// Appends after a full drain and a restart keep working.
	if err := s.Append([]byte("late")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 1<<20, 256)
	if got := drain(t, s); len(got) != 1 || got[0] != "late" {
		t.Fatalf("got %q", got)
	}
	s.Close()
}

func TestBound(t *testing.T) {
	s := open(t, t.TempDir(), 64<<10, 0)
	defer s.Close()
	rec := make([]byte, 1000)
	n := 0
	for ; n < 1000; n++ {
		if err := s.Append(rec); err != nil {
			if !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			break
		}
	}
	if n != (64<<10)/(1000+headerSize) {
		t.Fatalf("accepted %d records before full", n)
	}
	// Replaying frees room.
	drain(t, s)
	if err := s.Append(rec); err != nil {
		t.Fatalf("after replay: %v", err)
	}
}

func TestTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, 0)
	for i := range 3 {
		if err := s.Append(fmt.Appendf(nil, "r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 0, 9, 1, 2}) // a crash in the middle of a header
	f.Close()
	s = open(t, dir, 1<<20, 0)
	defer s.Close()
	if err := s.Append([]byte("r3")); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s); fmt.Sprint(got) != "[r0 r1 r2 r3]" {
		t.Fatalf("got %q", got)
	}
}

func TestConcurrentAppendGroupCommit(t *testing.T) {
	s := open(t, t.TempDir(), 16<<20, 4096)
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := s.Append(fmt.Appendf(nil, "w%02d-%03d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Replay concurrently with the appends.
	seen := map[string]bool{}
	last := map[string]string{}
	apply := func(r []byte) error {
		k := string(r)
		if seen[k] {
			t.Errorf("%s replayed twice", k)
		}
		seen[k] = true
		w := k[:3]
		if prev, ok := last[w]; ok && prev > k {
			t.Errorf("out of order for %s: %s after %s", w, k, prev)
		}
		last[w] = k
		return nil
	}
	for range 20 {
		if _, err := s.Replay(apply); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if _, err := s.Replay(apply); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 800 {
		t.Fatalf("replayed %d records, want 800", len(seen))
	}
}

func TestReplayBatchMovesPastWholeBatchesOnly(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20, 256)
	for i := range 50 {
		if err := s.Append(fmt.Appendf(nil, "rec-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	calls := 0
	_, err := s.ReplayBatch(8, func(recs [][]byte) error {
		calls++
		if len(recs) == 0 || len(recs) > 8 {
			t.Fatalf("batch of %d", len(recs))
		}
		if calls == 3 {
			return errors.New("cassandra down") // the third batch is replayed again
		}
		for _, r := range recs {
			got = append(got, string(r))
		}
		return nil
	})
	if err == nil {
		t.Fatal("the failure was not returned")
	}
	left := s.Records()
	if left != 50-len(got) {
		t.Fatalf("%d records left after %d replayed", left, len(got))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 1<<20, 256)
	defer s.Close()
	if _, err := s.ReplayBatch(8, func(recs [][]byte) error {
		for _, r := range recs {
			got = append(got, string(r))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || s.Records() != 0 {
		t.Fatalf("%d replayed, %d left", len(got), s.Records())
	}
	for i, r := range got {
		if want := fmt.Sprintf("rec-%03d", i); r != want {
			t.Fatalf("record %d = %q, want %q (order or loss)", i, r, want)
		}
	}
}

// An ephemeral spool takes no more than it delivers within DeliverWithin: the assumed rate
// before a replay was measured, then the measured one; what it refuses is refused with
// ErrBudget, and a replay makes room again.
func TestDeliverWithinBoundsTheBacklog(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), MaxBytes: 1 << 20, DeliverWithin: time.Second, MinDeliveryRate: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill := func() int {
		n := 0
		for ; n < 10000; n++ {
			if err := s.Append([]byte("r")); err != nil {
				if !errors.Is(err, ErrBudget) {
					t.Fatalf("Append: %v, want ErrBudget", err)
				}
				return n
			}
		}
		t.Fatal("no bound: 10000 records taken")
		return n
	}
	if n := fill(); n != 100 {
		t.Fatalf("took %d records before any replay, want 100 (MinDeliveryRate × DeliverWithin)", n)
	}
	// Replays of full batches at about 1000 records/s raise the bound.
	for range 3 {
		if _, err := s.ReplayBatch(64, func(recs [][]byte) error { time.Sleep(time.Duration(len(recs)) * time.Millisecond); return nil }); err != nil {
			t.Fatal(err)
		}
		fill()
	}
	if s.rate < 300 {
		t.Fatalf("measured rate %.0f records/s, want about 1000", s.rate)
	}
	// Full again, now at the measured rate's bound.
	if got, want := s.Records(), int(s.rate); got != want {
		t.Fatalf("holds %d records at %.0f records/s measured, want %d", got, s.rate, want)
	}
	// A record its own replay hands back (a stopping proxy queue) is taken all the same.
	if err := s.Requeue([]byte("r")); err != nil {
		t.Fatalf("Requeue at the bound: %v", err)
	}
	// A persistent spool (no DeliverWithin) has no such bound.
	p, err := Open(Options{Dir: t.TempDir(), MaxBytes: 1 << 20, MinDeliveryRate: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 1000 {
		if err := p.Append([]byte("r")); err != nil {
			t.Fatalf("a spool without DeliverWithin refused: %v", err)
		}
	}
}
