// Package radclient is the client side of one RADIUS exchange over UDP: send a request,
// retransmit the same datagram on a backoff timer, and take the first reply the caller
// accepts. The CoA/Disconnect sender and the accounting proxy share it.
package radclient

import (
	"context"
	"errors"
	"net"
	"time"

	"layeh.com/radius"
)

// ErrTimeout is returned when no accepted reply came after the last retransmission.
var ErrTimeout = errors.New("radclient: no reply")

// Options are the retransmission settings of one exchange.
type Options struct {
	// Timeout is the first retransmission timer (1s when not positive). It doubles after
	// each retransmission, up to MaxTimeout when that is positive (uncapped otherwise).
	Timeout    time.Duration
	MaxTimeout time.Duration
	// Retries is the number of retransmissions after the first send.
	Retries int
	// OnRetransmit, when set, is called before each retransmission (not the first send).
	OnRetransmit func()
}

// Exchange writes wire to conn and reads datagrams until accept returns true for one,
// which it returns (the datagram as read; accept may keep what it parsed from it). A
// datagram accept rejects is ignored and reading goes on until the timer runs out; then the
// same wire is sent again, Retries times. Each timer is cut short by ctx's deadline, and
// ctx's error is returned once a timer ends with ctx done. A read error other than a
// timeout (ICMP port unreachable and the like) waits the timer out before retransmitting.
// After the last timer: ErrTimeout. A write error is returned as is.
func Exchange(ctx context.Context, conn net.Conn, wire []byte, o Options, accept func(reply []byte) bool) ([]byte, error) {
	timer := o.Timeout
	if timer <= 0 {
		timer = time.Second
	}
	buf := make([]byte, radius.MaxPacketLength)
	for try := 0; try <= o.Retries; try++ {
		if try > 0 && o.OnRetransmit != nil {
			o.OnRetransmit()
		}
		if _, err := conn.Write(wire); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(timer)
		ctxDeadline, hasCtxDeadline := ctx.Deadline()
		if hasCtxDeadline && ctxDeadline.Before(deadline) {
			deadline = ctxDeadline
		}
		_ = conn.SetReadDeadline(deadline)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				var ne net.Error
				if !(errors.As(err, &ne) && ne.Timeout()) && time.Now().Before(deadline) {
					time.Sleep(time.Until(deadline)) // ICMP unreachable: wait the timer out
				}
				break
			}
			if accept(buf[:n]) {
				return buf[:n], nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The read may time out a hair before ctx's own timer fires: a deadline that has
		// passed is the context's end, not a reason to retransmit.
		if hasCtxDeadline && !time.Now().Before(ctxDeadline) {
			return nil, context.DeadlineExceeded
		}
		timer *= 2
		if o.MaxTimeout > 0 {
			timer = min(timer, o.MaxTimeout)
		}
	}
	return nil, ErrTimeout
}
