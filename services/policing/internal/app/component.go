package app

import (
	"context"
	"errors"
	"sync"
)

// A component is one part of a node with a lifecycle: a listener, the store, the reloader.
// It is built from the configuration and the parts it uses (deps, and the components before
// it, as constructor arguments); Start makes it serve, and reads what it needs of those
// parts, which have started; Stop undoes what Start did, within ctx, and is called only
// after a Start that succeeded.
type component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// sequence is components that start in order and stop in reverse: a node's parts. Its Stop
// is the node's one tear-down, the same for a start that fails part way (Start stops what
// it started) and for a shutdown, so that the two cannot drift apart.
type sequence struct {
	parts   []component
	started []component
}

func (s *sequence) Start(ctx context.Context) error {
	for _, c := range s.parts {
		if err := c.Start(ctx); err != nil {
			// What started is stopped as a start that failed always was: its errors are
			// not the start's, and ctx may be what ended the start.
			_ = s.Stop(context.WithoutCancel(ctx))
			return err
		}
		s.started = append(s.started, c)
	}
	return nil
}

// Stop stops the started components, the last started first, each even if one before it
// failed, and forgets them.
func (s *sequence) Stop(ctx context.Context) error {
	var errs []error
	for i := len(s.started) - 1; i >= 0; i-- {
		errs = append(errs, s.started[i].Stop(ctx))
	}
	s.started = nil
	return errors.Join(errs...)
}

// together is components that start in order and stop at once, sharing one deadline: the
// queues a node delivers at shutdown (the store's spool, the proxy's queue), so that one
// slow upstream does not spend the other's budget.
type together []component

func (t together) Start(ctx context.Context) error {
	return (&sequence{parts: t}).Start(ctx)
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
