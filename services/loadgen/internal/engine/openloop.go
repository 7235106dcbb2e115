package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/hist"
	"github.com/openaaa/openaaa/services/loadgen/internal/packet"
	"github.com/openaaa/openaaa/services/loadgen/internal/tick"
)

// The open loop is asynchronous: one sender paces the offered rate, one receiver per socket
// matches replies by identifier, a sweeper times requests out. No goroutine waits per
// request, so the generator can keep tens of thousands of requests in flight while a server
// sheds load — a goroutine-per-request design would run out of workers and queue the offered
// messages itself. Requests are not retransmitted: one unanswered after Timeout counts as a
// timeout. Latency counts from the scheduled send time.

type olPending struct {
	used  bool
	sess  *session
	kind  Kind
	sched time.Time
	sent  time.Time
	hdr   [packet.HeaderLenForReply]byte
}

type olSock struct {
	c      *net.UDPConn
	mu     sync.Mutex
	pend   [256]olPending
	free   [256]byte // FIFO of free identifiers: an identifier is reused as late as possible
	head   int
	nfree  int
	target int
	// Owned by the socket's receiver (tgt's Timeouts and Errors: written under mu).
	tgt     TargetResult
	lat     [NumKinds]hist.H
	service hist.H
	errs    map[string]uint64
}

func (s *olSock) take() (byte, bool) {
	if s.nfree == 0 {
		return 0, false
	}
	id := s.free[s.head]
	s.head = (s.head + 1) & 255
	s.nfree--
	return id, true
}

func (s *olSock) put(id byte) {
	s.free[(s.head+s.nfree)&255] = id
	s.nfree++
}

type openRun struct {
	*run
	socks   [][2][]*olSock // per target, per port (auth, acct)
	rr      [][2]int
	ready   chan *session
	c       counters
	alive   atomic.Int64 // sessions begun and not finished
	pending atomic.Int64 // requests in flight
	sender  *worker      // builds packets (its rnd and buffer); used by the sender goroutine only
	perT    []uint64
	lag     hist.H
	offered uint64
	unsent  uint64
	bounded bool // the sender stopped at a count or session bound, not at the end of the run
}

func (r *run) open(ctx context.Context) (*Result, error) {
	cfg := &r.cfg
	o := &openRun{run: r, ready: make(chan *session, cfg.Concurrency), perT: make([]uint64, len(cfg.Targets))}
	o.sender = &worker{e: r, rnd: newRand(cfg.Seed, 0)}
	nsock := min(max((cfg.Concurrency+127)/128, 1), 256)
	var all []*olSock
	defer func() {
		for _, s := range all {
			s.c.Close()
		}
	}()
	for ti, t := range cfg.Targets {
		var pair [2][]*olSock
		for j, addr := range []string{t.Auth, t.Acct} {
			if addr == "" {
				continue
			}
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, fmt.Errorf("target %s: %w", addr, err)
			}
			for k := 0; k < nsock; k++ {
				c, err := net.DialUDP("udp", nil, ua)
				if err != nil {
					return nil, fmt.Errorf("target %s: %w", addr, err)
				}
				c.SetReadBuffer(4 << 20)
				s := &olSock{c: c, target: ti, nfree: 256, errs: map[string]uint64{}}
				for id := range s.free {
					s.free[id] = byte(id)
				}
				pair[j] = append(pair[j], s)
				all = append(all, s)
			}
		}
		o.socks = append(o.socks, pair)
		o.rr = append(o.rr, [2]int{})
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	r.begin()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); o.receive(s) }()
	}
	sweepDone := make(chan struct{})
	go func() { defer close(sweepDone); o.sweep(ctx, all) }()
	senderDone := make(chan struct{})
	go func() { defer close(senderDone); o.send(ctx) }()

	prog := r.newProgressTicker()
	defer prog.Stop()
	sending := true
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-senderDone:
			// The sender stopped at a count or session bound: wait for the replies in flight.
			senderDone, sending = nil, false
		case now := <-prog.C:
			prog.report(now, o.c.progress)
		case <-time.After(5 * time.Millisecond):
		}
		if !sending && o.pending.Load() == 0 {
			break
		}
	}
	endAt := time.Now()
	r.stopped.Store(true)
	cancel()
	if senderDone != nil {
		<-senderDone
	}
	<-sweepDone
	for _, s := range all {
		s.c.Close()
	}
	wg.Wait()

	if !o.bounded {
		// Messages due by the end that a CPU-starved sender never reached were offered too.
		if due := slotsDue(endAt.Sub(r.start), cfg.Rate, cfg.Ramp, cfg.MaxMessages); due > o.offered {
			o.unsent += due - o.offered
			o.offered = due
		}
	}
	res := &Result{Started: r.start, Elapsed: endAt.Sub(r.start), PerTarget: o.perT, ErrorSamples: map[string]uint64{},
		Offered: o.offered, Unsent: o.unsent, Targets: make([]TargetResult, len(cfg.Targets))}
	o.c.addTo(res)
	// The open loop counts no aborts as it goes: the requests still pending at the end are its aborted ones.
	res.Aborted = uint64(max(o.pending.Load(), 0))
	res.SendLag = o.lag
	res.Timeline = r.timeline.seconds(res.Elapsed)
	for _, s := range all {
		for k := range s.lat {
			res.Latency[k].Merge(&s.lat[k])
		}
		res.Service.Merge(&s.service)
		res.Targets[s.target].merge(&s.tgt)
		for e, n := range s.errs {
			res.ErrorSamples[e] += n
		}
	}
	return res, nil
}

// send offers messages at the configured rate until the run ends or a bound is reached.
func (o *openRun) send(ctx context.Context) {
	cfg := &o.cfg
	var i uint64
	defer func() { o.offered = i }()
	sessionsLeft := true
	for ctx.Err() == nil {
		now := time.Since(o.start)
		for i < cfg.MaxMessages {
			at := slotTime(i, cfg.Rate, cfg.Ramp)
			if at > now {
				break
			}
			i++
			if !o.sendOne(o.start.Add(at), &sessionsLeft) {
				o.unsent++
			}
		}
		if i >= cfg.MaxMessages || (!sessionsLeft && o.alive.Load() == 0) {
			o.bounded = true
			return
		}
		wait := slotTime(i, cfg.Rate, cfg.Ramp) - time.Since(o.start)
		if wait > 0 {
			t := time.NewTimer(min(wait, 50*time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// sendOne sends the next message of a ready session (or of a new one); false: nothing could
// be sent (every session waits for a reply and no new one can begin, or no identifier is
// free).
func (o *openRun) sendOne(sched time.Time, sessionsLeft *bool) bool {
	var s *session
	select {
	case s = <-o.ready:
	default:
		if !*sessionsLeft || o.alive.Load() >= int64(o.cfg.Concurrency) {
			return false
		}
		ns, err := o.newSession(0, nil)
		if err != nil {
			if err == errSessionBound {
				*sessionsLeft = false
			}
			return false
		}
		s = &ns
		o.alive.Add(1)
		o.c.sessions.Add(1)
	}
	k := o.kindOf(s)
	ti := o.targetOf(s)
	port := 1
	if k == KindAuth {
		port = 0
	}
	socks := o.socks[ti][port]
	var sock *olSock
	var id byte
	for n := 0; n < len(socks); n++ {
		cand := socks[o.rr[ti][port]]
		o.rr[ti][port] = (o.rr[ti][port] + 1) % len(socks)
		cand.mu.Lock()
		got, ok := cand.take()
		cand.mu.Unlock()
		if ok {
			sock, id = cand, got
			break
		}
	}
	if sock == nil {
		o.ready <- s // cannot block: at most Concurrency sessions exist
		return false
	}
	if o.cfg.Observe != nil {
		o.cfg.Observe(Event{Target: ti, Kind: k, User: s.user.Name, SessionID: s.id, Index: s.msgs})
	}
	req := o.sender.build(s, k, id)
	p := olPending{used: true, sess: s, kind: k, sched: sched, sent: time.Now()}
	o.lag.Record(p.sent.Sub(sched))
	copy(p.hdr[:], req)
	s.msgs++
	o.perT[ti]++
	sock.mu.Lock()
	sock.pend[id] = p
	sock.mu.Unlock()
	o.pending.Add(1)
	o.c.sent.Add(1)
	if _, err := sock.c.Write(req); err != nil {
		sock.mu.Lock()
		sock.pend[id].used = false
		sock.put(id)
		sock.tgt.Errors++
		sock.mu.Unlock()
		o.pending.Add(-1)
		o.c.errors.Add(1)
		o.advance(s, k, nil, fmt.Errorf("send: %w", err))
	}
	return true
}

// advance moves a session on after its message was answered (reply), timed out or failed.
func (o *openRun) advance(s *session, k Kind, reply *packet.Reply, err error) {
	final := k == KindAuth && o.cfg.Mode == ModeAuth || k == KindStop
	switch {
	case reply != nil:
		o.timeline.answered(time.Now())
	case err != nil && !errors.Is(err, errAborted):
		o.timeline.failed(time.Now())
	}
	if reply != nil {
		switch reply.Code {
		case packet.CodeAccessAccept:
			if reply.HasIP {
				s.framed = reply.FramedIP
			}
		case packet.CodeAccessReject, packet.CodeAccessChallenge:
			s.done = true
		}
		if final {
			o.c.sessionsDone.Add(1)
		}
	} else if err != nil && k == KindAuth {
		s.done = true
	}
	if final {
		s.done = true
	}
	s.step++
	if s.done || o.stopped.Load() {
		o.endSession(s)
		o.alive.Add(-1)
		return
	}
	o.ready <- s
}

func (o *openRun) receive(sock *olSock) {
	buf := make([]byte, 4096)
	cfg := &o.cfg
	for {
		n, err := sock.c.Read(buf)
		if err != nil {
			if o.stopped.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP port unreachable surfaced as ECONNREFUSED
		}
		now := time.Now()
		if n < 20 {
			sock.mu.Lock()
			sock.tgt.Errors++
			sock.mu.Unlock()
			o.c.errors.Add(1)
			continue
		}
		id := buf[1]
		sock.mu.Lock()
		p := sock.pend[id]
		if !p.used {
			sock.mu.Unlock()
			o.c.late.Add(1)
			continue
		}
		reply, err := packet.ParseReply(buf[:n], p.hdr[:], cfg.Secret, cfg.RequireReplyMA)
		if err != nil {
			// Keep waiting for the right reply; a late reply to an earlier user of this
			// identifier also lands here.
			sock.tgt.Errors++
			sock.mu.Unlock()
			o.c.errors.Add(1)
			if len(sock.errs) < 16 || sock.errs[err.Error()] > 0 {
				sock.errs[err.Error()]++
			}
			continue
		}
		sock.pend[id].used = false
		sock.put(id)
		sock.mu.Unlock()
		o.pending.Add(-1)
		o.c.answered.Add(1)
		sock.lat[p.kind].Record(now.Sub(p.sched))
		sock.service.Record(now.Sub(p.sent))
		sock.tgt.record(p.kind, now.Sub(p.sched))
		switch reply.Code {
		case packet.CodeAccessAccept:
			o.c.accepts.Add(1)
			sock.tgt.Accepts++
		case packet.CodeAccessReject, packet.CodeAccessChallenge:
			o.c.rejects.Add(1)
			sock.tgt.Rejects++
		case packet.CodeAccountingResponse:
			o.c.acct.Add(1)
		}
		o.advance(p.sess, p.kind, &reply, nil)
	}
}

// sweep times out requests older than Timeout, scanning every Timeout/10 (10..50 ms).
func (o *openRun) sweep(ctx context.Context, all []*olSock) {
	every := min(max(o.cfg.Timeout/10, 10*time.Millisecond), 50*time.Millisecond)
	type expired struct {
		s *session
		k Kind
	}
	var exp []expired
	tick.Every(ctx, every, func(now time.Time) bool {
		for _, sock := range all {
			sock.mu.Lock()
			for id := range sock.pend {
				p := &sock.pend[id]
				if p.used && now.Sub(p.sent) > o.cfg.Timeout {
					p.used = false
					sock.tgt.Timeouts++
					sock.put(byte(id))
					exp = append(exp, expired{p.sess, p.kind})
				}
			}
			sock.mu.Unlock()
		}
		for _, e := range exp {
			o.pending.Add(-1)
			o.c.timeouts.Add(1)
			o.advance(e.s, e.k, nil, errTimeout)
		}
		exp = exp[:0]
		return true
	})
}

// slotsDue is how many messages are scheduled at or before t (the inverse of slotTime).
func slotsDue(t time.Duration, rate float64, ramp time.Duration, limit uint64) uint64 {
	x, R := t.Seconds(), ramp.Seconds()
	var n float64
	if R > 0 && x < R {
		n = rate * x * x / (2 * R)
	} else {
		n = rate * (x - R/2)
	}
	if n < 0 {
		return 0
	}
	return min(uint64(n)+1, limit)
}
