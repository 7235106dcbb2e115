package app

import (
	"context"
	"errors"
	"sync"
)

// A component is one part of a node with a lifecycle: a listener, the store, the reloader.
// Start makes it serve; Stop undoes what Start did, within ctx, and is called only after a
// Start that succeeded.
type component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// lifecycle starts components in order and stops the started ones in reverse. It is the
// node's one tear-down: the same for a start that fails part way and for a shutdown, so
// the two cannot drift apart.
type lifecycle struct {
	started []component
}

// start starts c; on success c is stopped by the next stop.
func (l *lifecycle) start(ctx context.Context, c component) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	l.started = append(l.started, c)
	return nil
}

// stop stops the started components, the last started first, each even if one before it
// failed, and forgets them.
func (l *lifecycle) stop(ctx context.Context) error {
	var errs []error
	for i := len(l.started) - 1; i >= 0; i-- {
		errs = append(errs, l.started[i].Stop(ctx))
	}
	l.started = nil
	return errors.Join(errs...)
}

// together is one component of several that start in order and stop at once, sharing
// one deadline: the queues a node delivers at shutdown (the store's spool, the proxy's
// queue), so that one slow upstream does not spend the other's budget.
type together []component

func (t together) Start(ctx context.Context) error {
	var l lifecycle
	for _, c := range t {
		if err := l.start(ctx, c); err != nil {
			return errors.Join(err, l.stop(context.WithoutCancel(ctx)))
		}
	}
	return nil
}

func (t together) Stop(ctx context.Context) error {
	errs := make([]error, len(t))
	var wg sync.WaitGroup
	for i, c := range t {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Stop(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
