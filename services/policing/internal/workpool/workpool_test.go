package workpool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fixed workers serve every queued job, each keeping its own value between jobs; Submit
// gives up when stop closes while the queue is full; Close then Wait ends them.
func TestFixed(t *testing.T) {
	release := make(chan struct{})
	var served atomic.Int32
	p := New(Options{Workers: 2, Queue: 1}, func(w *int, j int) {
		*w++ // the worker's own: never shared, so no race
		if j < 0 {
			<-release
		}
		served.Add(1)
	})
	stop := make(chan struct{})
	for range 2 { // both workers held
		if !p.Submit(-1, stop) {
			t.Fatal("not taken")
		}
	}
	if !p.Submit(1, stop) { // the queue's one place
		t.Fatal("not queued")
	}
	gaveUp := make(chan bool)
	go func() { gaveUp <- p.Submit(2, stop) }()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	if <-gaveUp {
		t.Fatal("taken with the queue full")
	}
	close(release)
	p.Close()
	p.Wait()
	if n := served.Load(); n != 3 {
		t.Fatalf("served %d, want 3", n)
	}
}

// On demand, a job goes to an idle worker (none is started while one waits) or a new one,
// which ends after Idle without work.
func TestOnDemand(t *testing.T) {
	var workers sync.Map
	var wg sync.WaitGroup
	p := New(Options{Idle: 50 * time.Millisecond}, func(w *struct{ id int }, _ int) {
		workers.Store(w, true)
		wg.Done()
	})
	for i := range 20 {
		wg.Add(1)
		p.Submit(i, nil)
		wg.Wait()
		time.Sleep(2 * time.Millisecond) // the worker waits for work again
	}
	n := 0
	workers.Range(func(any, any) bool { n++; return true })
	if n > 5 {
		t.Fatalf("%d workers for 20 jobs one after another: idle ones not reused", n)
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("idle workers did not end")
	}
}
