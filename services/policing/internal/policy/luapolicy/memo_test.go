package luapolicy

import "testing"

// TestMemoByInputs: a hook holds one decision per inputs' hash, so one made for a session
// serves another with the same inputs, each inputs keeps its own, and hooks do not share.
func TestMemoByInputs(t *testing.T) {
	m := newMemo(10)
	const acct = hookAccounting
	m.put(acct, 1, decision{disconnect: "quota"})
	m.put(acct, 2, decision{})
	if d, ok := m.get(acct, 1); !ok || d.disconnect != "quota" {
		t.Fatalf("inputs 1: %v %v, want the quota decision", d, ok)
	}
	if d, ok := m.get(acct, 2); !ok || d.disconnect != "" {
		t.Fatalf("inputs 2: %v %v, want its own decision", d, ok)
	}
	if _, ok := m.get(acct, 3); ok {
		t.Fatal("a decision reused for inputs never decided")
	}
	if _, ok := m.get(hookGxUpdate, 1); ok {
		t.Fatal("another hook reused accounting's decision")
	}
	if m.len() != 2 {
		t.Fatalf("%d entries, want 2", m.len())
	}
}

// TestMemoHoldsItsSize: a memo of size entries keeps size entries, however their hashes
// fall among the shards; a shard forgets one of its own only once the memo is full.
func TestMemoHoldsItsSize(t *testing.T) {
	m := newMemo(100)
	const key = hookAccounting
	for sum := range uint64(100) {
		m.put(key, sum, decision{})
	}
	if n := m.len(); n != 100 {
		t.Fatalf("a memo of 100 holds %d of 100 entries", n)
	}
	for sum := range uint64(100) {
		if _, ok := m.get(key, sum); !ok {
			t.Fatalf("inputs %d forgotten before the memo was full", sum)
		}
	}
	for sum := uint64(100); sum < 1000; sum++ {
		m.put(key, sum, decision{})
	}
	if n := m.len(); n > 100+memoShards {
		t.Fatalf("a memo of 100 grew to %d entries", n)
	}
}
