package store

import (
	"context"
	"net/netip"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Noop accepts every write and finds nothing. It exists to measure what the server frame
// itself costs (the benchmark's ceiling run); it is never a production store.
type Noop struct{}

func (Noop) Apply(context.Context, *session.Update, session.WriteOptions) (session.Result, error) {
	return session.Result{}, nil
}
func (Noop) CloseNAS(context.Context, string, time.Time, uint32) (int, error) {
	return 0, nil
}
func (Noop) Get(context.Context, session.Key) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (Noop) ByUser(context.Context, string) ([]*session.Session, error) { return nil, nil }

// ByCallingStation implements session.Store.
func (Noop) ByCallingStation(context.Context, string) ([]*session.Session, error) { return nil, nil }
func (Noop) ByFramedIP(context.Context, netip.Addr) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (Noop) ByIPv6(context.Context, netip.Prefix) (*session.Session, error) {
	return nil, session.ErrNotFound
}
func (Noop) ByNAS(context.Context, string) ([]*session.Session, error) { return nil, nil }
func (Noop) History(context.Context, string, int) ([]*session.Session, error) {
	return nil, nil
}
func (Noop) Ready(context.Context) error { return nil }
func (Noop) Close(context.Context) error { return nil }
