package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond every 50 ms until it holds, and fails the test when within passes
// first, naming what it waited for.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
