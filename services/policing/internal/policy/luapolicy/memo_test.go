package luapolicy

import (
	"testing"
	"unsafe"
)

// TestMemoKeepsABorrowedKey: authorize's key is a view of the request's memory, which the
// server reuses for the next request: the memo keeps a copy of its own.
func TestMemoKeepsABorrowedKey(t *testing.T) {
	m := newMemo(10)
	buf := []byte("alice")
	m.put(memoKey{a: unsafe.String(&buf[0], len(buf)), borrowed: true}, 1, decision{reason: "alice's"})
	copy(buf, "carol") // the next request in the same buffer
	if _, ok := m.get(memoKey{a: "carol"}, 1); ok {
		t.Fatal("carol found alice's decision: the memo kept the request's memory")
	}
	if d, ok := m.get(memoKey{a: "alice"}, 1); !ok || d.reason != "alice's" {
		t.Fatalf("alice's decision lost: %v %v", d, ok)
	}
	if _, ok := m.get(memoKey{a: "alice"}, 2); ok {
		t.Fatal("a decision reused for other inputs")
	}
	m.forget(memoKey{a: "alice"})
	if m.len() != 0 {
		t.Fatalf("%d entries after forget", m.len())
	}
}
