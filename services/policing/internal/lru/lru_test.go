package lru

import (
	"fmt"
	"testing"
)

func TestBoundOrderAndKeep(t *testing.T) {
	c := New[string, int](3)
	for i := range 3 {
		if d := c.Put(fmt.Sprint(i), i, nil); d != 1 {
			t.Fatalf("Put(%d) = %d, want 1 (a new entry)", i, d)
		}
	}
	c.Get("0") // the most recently used now: "1" goes first
	if d := c.Put("3", 3, nil); d != 0 {
		t.Fatalf("Put past the bound = %d, want 0 (one in, one evicted)", d)
	}
	if _, ok := c.Get("1"); ok || c.Len() != 3 {
		t.Fatalf("least recently used entry not evicted (len %d)", c.Len())
	}
	c.Put("0", -1, func(old int) bool { return old >= 0 })
	if v, _ := c.Get("0"); v != 0 {
		t.Fatalf("keep ignored: %d", v)
	}
	c.Put("0", 10, func(old int) bool { return old > 10 })
	if v, _ := c.Get("0"); v != 10 {
		t.Fatalf("value not replaced: %d", v)
	}
	if n := c.RemoveIf(func(k string, _ int) bool { return k != "3" }); n != 2 || c.Len() != 1 {
		t.Fatalf("RemoveIf removed %d, %d left", n, c.Len())
	}
	if !c.Remove("3") || c.Remove("3") || c.Len() != 0 {
		t.Fatal("Remove")
	}
	big := New[int, struct{}](100000)
	for i := range 200000 {
		big.Put(i, struct{}{}, nil)
	}
	if n := big.Len(); n > 100000 || n < 99000 {
		t.Fatalf("sharded cache holds %d, want about 100000", n)
	}
	seen := 0
	big.Each(func(int, struct{}) { seen++ })
	if seen != big.Len() {
		t.Fatalf("Each saw %d of %d", seen, big.Len())
	}
}
