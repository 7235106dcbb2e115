// Package tick runs periodic work until a context ends: the load generator samples the
// servers, sweeps timed-out requests and redials lost connections this way.
package tick

import (
	"context"
	"time"
)

// Every calls fn with each tick's time, once every interval, until ctx ends or fn returns
// false. The first call is one interval after Every is called.
func Every(ctx context.Context, interval time.Duration, fn func(now time.Time) bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if !fn(now) {
				return
			}
		}
	}
}
