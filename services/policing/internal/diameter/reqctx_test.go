package diameter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request's context behaves as context.WithDeadline under its connection's, though it
// derives one only when waited on: its deadline, its parent's cancellation, a child's
// cancellation through it, and its end once the request is answered.
func TestRequestContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	late := &requestContext{parent: parent, read: time.Now().Add(-time.Second), timeout: time.Millisecond}
	if !errors.Is(late.Err(), context.DeadlineExceeded) {
		t.Fatalf("past its deadline, not waited on: %v", late.Err())
	}
	<-late.Done() // derived already past its deadline
	soon := &requestContext{parent: parent, read: time.Now(), timeout: 50 * time.Millisecond}
	if soon.Err() != nil {
		t.Fatalf("before its deadline: %v", soon.Err())
	}
	select {
	case <-soon.Done():
		if !errors.Is(soon.Err(), context.DeadlineExceeded) {
			t.Fatalf("after Done: %v", soon.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	rc := &requestContext{parent: parent, read: time.Now(), timeout: time.Hour}
	child, cancelChild := context.WithTimeout(rc, time.Hour) // as Gx's store bound
	defer cancelChild()
	cancelParent()
	select {
	case <-child.Done():
		if !errors.Is(child.Err(), context.Canceled) || !errors.Is(rc.Err(), context.Canceled) {
			t.Fatalf("child %v, request %v", child.Err(), rc.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the connection's cancellation did not reach a child of the request's context")
	}
	done := &requestContext{parent: context.Background(), read: time.Now(), timeout: time.Hour}
	done.release()
	<-done.Done()
	if !errors.Is(done.Err(), context.Canceled) {
		t.Fatalf("released: %v", done.Err())
	}
}
