package diameter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
)

// ErrNoPeer is returned by Request when no accepted connection of that Origin-Host is held
// by this node (it may be held by another node or DC).
var ErrNoPeer = errors.New("no connection to that peer on this node")

// pending are the requests this node sent (RAR), by Hop-by-Hop-Id, waiting for answers.
type pending struct {
	mu   sync.Mutex
	next uint32
	m    map[uint32]chan *diam.Message
}

func (p *pending) add() (uint32, chan *diam.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[uint32]chan *diam.Message{}
		p.next = uint32(time.Now().UnixNano())
	}
	p.next++
	ch := make(chan *diam.Message, 1)
	p.m[p.next] = ch
	return p.next, ch
}

func (p *pending) done(hbh uint32) {
	p.mu.Lock()
	delete(p.m, hbh)
	p.mu.Unlock()
}

// deliver hands an answer to the request waiting for it; false when none waits (late or
// unsolicited: dropped, RFC 6733 §6.2).
func (p *pending) deliver(m *diam.Message) bool {
	p.mu.Lock()
	ch, ok := p.m[m.Header.HopByHopID]
	p.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// Request sends req (built by the application, e.g. a Gx RAR) to the peer that
// identified itself as originHost, over its connection to this node, and waits for the
// answer until ctx ends. It sets the Hop-by-Hop and End-to-End identifiers.
func (s *Server) Request(ctx context.Context, originHost string, req *diam.Message) (*diam.Message, error) {
	c := s.connOf(originHost)
	if c == nil {
		return nil, fmt.Errorf("%s: %w", originHost, ErrNoPeer)
	}
	answer, done, err := s.send(c, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", originHost, err)
	}
	defer done()
	select {
	case a := <-answer:
		return a, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", originHost, ctx.Err())
	}
}

// send writes req on c, counted by command, and returns where its answer arrives; done
// forgets the request (called once the answer came or is no longer awaited).
func (s *Server) send(c *peerConn, req *diam.Message) (answer <-chan *diam.Message, done func(), err error) {
	hbh, ch := s.out.add()
	req.Header.HopByHopID, req.Header.EndToEndID = hbh, hbh
	req.Header.CommandFlags |= diam.RequestFlag
	s.opt.Metrics.sent.WithLabelValues(commandName(req)).Inc()
	s.opt.Metrics.transactions.Inc()
	if _, err := req.WriteTo(c); err != nil {
		s.out.done(hbh)
		return nil, nil, err
	}
	return ch, func() { s.out.done(hbh) }, nil
}

// connOf is the accepted connection of originHost, nil when there is none or a shutdown
// sent it a DPR.
func (s *Server) connOf(originHost string) *peerConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, st := range s.conns {
		if st.open && !st.leaving && strings.EqualFold(st.info.OriginHost, originHost) {
			return c
		}
	}
	return nil
}
