package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// recorder is a component that notes its starts and stops in a journal shared by the
// components of one test (sequential tests only: the journal has no lock).
type recorder struct {
	name     string
	journal  *[]string
	startErr error
	stopErr  error
	stopWait chan struct{} // when set, Stop waits for it (or ctx)
	stopped  chan struct{} // when set, closed by Stop
}

func (r *recorder) note(s string) {
	if r.journal != nil {
		*r.journal = append(*r.journal, s+" "+r.name)
	}
}

func (r *recorder) Start(context.Context) error {
	r.note("start")
	return r.startErr
}

func (r *recorder) Stop(ctx context.Context) error {
	r.note("stop")
	if r.stopped != nil {
		close(r.stopped)
	}
	if r.stopWait != nil {
		select {
		case <-r.stopWait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.stopErr
}

func TestSequenceStopsInReverse(t *testing.T) {
	j := &[]string{}
	l := &sequence{}
	for _, name := range []string{"a", "b", "c"} {
		l.parts = append(l.parts, &recorder{name: name, journal: j})
	}
	apptest.Check(t, l.Start(context.Background()))
	apptest.Check(t, l.Stop(context.Background()))
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if got := *j; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	apptest.Check(t, l.Stop(context.Background())) // stopped once: nothing left to stop
	if got := *j; len(got) != len(want) {
		t.Fatalf("a second stop stopped again: %q", got)
	}
}

// A start that fails part way stops what started, in reverse, and not the part that failed
// nor those after it; a Stop after it has nothing left to stop.
func TestSequencePartialStart(t *testing.T) {
	j := &[]string{}
	boom := errors.New("boom")
	l := &sequence{parts: []component{&recorder{name: "a", journal: j}, &recorder{name: "b", journal: j},
		&recorder{name: "c", journal: j, startErr: boom}, &recorder{name: "d", journal: j}}}
	if err := l.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("start: %v, want boom", err)
	}
	apptest.Check(t, l.Stop(context.Background()))
	want := []string{"start a", "start b", "start c", "stop b", "stop a"}
	if got := *j; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Every started component is stopped even when one before it fails to stop; the errors add up.
func TestSequenceStopErrors(t *testing.T) {
	j := &[]string{}
	e1, e2 := errors.New("one"), errors.New("two")
	l := &sequence{parts: []component{&recorder{name: "a", journal: j, stopErr: e1}, &recorder{name: "b", journal: j},
		&recorder{name: "c", journal: j, stopErr: e2}}}
	apptest.Check(t, l.Start(context.Background()))
	err := l.Stop(context.Background())
	if !errors.Is(err, e1) || !errors.Is(err, e2) {
		t.Fatalf("stop: %v, want both errors", err)
	}
	if got := *j; !slices.Contains(got, "stop a") || !slices.Contains(got, "stop b") {
		t.Fatalf("not every component stopped: %q", got)
	}
}

// together stops its members at once: a member that holds its stop until another one has
// stopped does not wait for ctx.
func TestTogetherStopsAtOnce(t *testing.T) {
	release, fastStopped := make(chan struct{}), make(chan struct{})
	slow := &recorder{name: "slow", stopWait: release}
	fast := &recorder{name: "fast", stopped: fastStopped}
	g := together{slow, fast}
	apptest.Check(t, g.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Stop(ctx) }()
	select {
	case <-fastStopped:
	case <-time.After(5 * time.Second):
		t.Fatal("fast was not stopped while slow was stopping")
	}
	close(release)
	apptest.Check(t, <-done)
}

// A member of together that fails to start stops the members started before it.
func TestTogetherPartialStart(t *testing.T) {
	j := &[]string{}
	boom := errors.New("boom")
	g := together{&recorder{name: "a", journal: j}, &recorder{name: "b", journal: j, startErr: boom}, &recorder{name: "c", journal: j}}
	if err := g.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("start: %v, want boom", err)
	}
	want := []string{"start a", "start b", "stop a"}
	if got := *j; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
