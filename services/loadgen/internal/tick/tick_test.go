package tick

import (
	"context"
	"testing"
	"time"
)

func TestEveryStopsWhenFnSaysSo(t *testing.T) {
	n := 0
	Every(context.Background(), time.Millisecond, func(time.Time) bool {
		n++
		return n < 3
	})
	if n != 3 {
		t.Fatalf("fn called %d times, want 3", n)
	}
}

func TestEveryStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	Every(ctx, time.Millisecond, func(time.Time) bool {
		n++
		if n == 2 {
			cancel()
		}
		return true
	})
	if n < 2 {
		t.Fatalf("fn called %d times, want at least 2", n)
	}
}
