// Package gxload plays a PCEF's Gx traffic against policy servers (3GPP TS 29.212): per
// subscriber session CCR-I, N × CCR-U each reporting usage, CCR-T; each request of a session
// may go to another server (round-robin across data centers, as a PCEF that fails over between
// PCRF peers does) or stay on one (sticky); closed loop (a fixed number of sessions in progress)
// or open loop (sessions started at a fixed rate). It answers the servers' RARs.
package gxload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/loadgen/internal/hist"
	"github.com/openaaa/openaaa/services/loadgen/internal/tick"
)

// Command is a CCR's CC-Request-Type less one: the index of its figures.
type Command int

const (
	Initial Command = iota
	Update
	Termination
	nCommands
)

func (c Command) String() string { return [...]string{"CCR-I", "CCR-U", "CCR-T"}[c] }

// Config is one run.
type Config struct {
	// Targets are the policy servers (host:port), one per data center.
	Targets  []string
	Identity Identity
	// Subscribers are IMSIs IMSIBase … IMSIBase+Subscribers-1, taken in turn.
	Subscribers int
	IMSIBase    uint64
	// FramedIPBase is the first session's Framed-IP-Address (IPv4); the next follow.
	FramedIPBase netip.Addr
	APN          string
	// MonitoringKey and UsedOctets make each CCR-U's (and the CCR-T's) usage report.
	MonitoringKey string
	UsedOctets    uint64
	// Updates is the number of CCR-Us per session.
	Updates int
	// Sticky keeps a session on one target; otherwise each request goes to the next.
	Sticky bool
	// Concurrency is the number of sessions in progress (closed loop), or their bound (open loop).
	Concurrency int
	// Rate, when > 0, starts sessions at this many per second (open loop).
	Rate float64
	// Duration bounds the run; MaxSessions (0: none) too.
	Duration    time.Duration
	MaxSessions uint64
	// Timeout is how long a request waits for its answer.
	Timeout time.Duration
	// Failover, as a PCEF does when a PCRF peer does not answer or its connection is down,
	// sends the request again (T flag, same End-to-End Identifier) to the next target, until
	// every target was tried; without it a request that fails ends its session.
	Failover bool
	// Interval is the pause between the requests of a session (0: none): sessions then stay
	// up long enough for the server to push RARs to them.
	Interval time.Duration
	// ConnsPerTarget is the number of connections to each target (a PCEF has one or two).
	ConnsPerTarget int
	// Progress, when set, is called about every second.
	Progress func(Progress)
}

// Progress is the running count.
type Progress struct {
	Elapsed                    time.Duration
	Answered, Timeouts, Errors uint64
	Rate                       float64
}

// Stats are one command's figures (or one target's: then Latency covers all commands).
type Stats struct {
	Sent, Answered, Timeouts, Errors uint64
	// Codes counts the answers by Result-Code.
	Codes   map[uint32]uint64
	Latency hist.H
}

func (s *Stats) merge(o *Stats) {
	s.Sent += o.Sent
	s.Answered += o.Answered
	s.Timeouts += o.Timeouts
	s.Errors += o.Errors
	if s.Codes == nil {
		s.Codes = map[uint32]uint64{}
	}
	for k, v := range o.Codes {
		s.Codes[k] += v
	}
	s.Latency.Merge(&o.Latency)
}

// Result is a run's outcome.
type Result struct {
	Elapsed time.Duration
	// Sessions were begun (CCR-I sent); SessionsCompleted got a 2001 to every request.
	Sessions, SessionsCompleted uint64
	// Skipped are sessions the open loop could not start: every worker was busy.
	Skipped   uint64
	ByCommand [nCommands]Stats
	ByTarget  []Stats
	// RARs are the servers' Re-Auth-Requests answered.
	RARs uint64
	// Failovers are requests sent again to another target after a timeout or a lost connection.
	Failovers uint64
	// Unconfirmed sessions got no answer to their CCR-I from any peer (a server may hold them
	// nonetheless); Abandoned ones none to their CCR-T after every retry: the policy servers
	// may keep both as active sessions until they expire.
	Unconfirmed, Abandoned uint64
}

// Total sums the commands.
func (r *Result) Total() Stats {
	var t Stats
	for i := range r.ByCommand {
		t.merge(&r.ByCommand[i])
	}
	return t
}

func (c *Config) validate() error {
	switch {
	case len(c.Targets) == 0:
		return errors.New("no target")
	case c.Subscribers < 1:
		return errors.New("subscribers must be at least 1")
	case c.Concurrency < 1:
		return errors.New("concurrency must be at least 1")
	case c.Updates < 0:
		return errors.New("updates must not be negative")
	case c.Duration <= 0 || c.Duration > time.Hour:
		return errors.New("duration must be in (0, 1h]")
	case c.Timeout <= 0:
		return errors.New("timeout must be positive")
	case !c.FramedIPBase.Is4():
		return errors.New("framed IP base must be an IPv4 address")
	case c.Identity.OriginHost == "" || c.Identity.OriginRealm == "":
		return errors.New("origin host and realm are required")
	}
	if c.ConnsPerTarget < 1 {
		c.ConnsPerTarget = 1
	}
	if c.Identity.HostIP == nil {
		c.Identity.HostIP = net.IPv4(127, 0, 0, 1)
	}
	return nil
}

// run is the state the workers share.
type run struct {
	cfg      *Config
	conns    [][]*slot // per target
	rars     atomic.Uint64
	runID    int64
	e2e      atomic.Uint32 // End-to-End-Ids (newE2E)
	next     atomic.Uint64 // sessions begun
	end      time.Time
	answered atomic.Uint64
	timeouts atomic.Uint64
	errs     atomic.Uint64
	// destRealm is the first CEA's Origin-Realm: the CCRs' Destination-Realm when
	// Identity.DestinationRealm is empty.
	destRealm atomic.Pointer[string]
}

// slot holds one connection to a target; a connection that is lost is dialled again in the
// background (a PCEF keeps trying its peers), meanwhile its requests fail over.
type slot struct {
	addr string
	p    atomic.Pointer[peer]
}

func (s *slot) live() *peer {
	if p := s.p.Load(); p != nil && !p.isClosed() {
		return p
	}
	return nil
}

// worker is one worker's figures, merged at the end (no shared counters on the hot path but
// the progress ones).
type worker struct {
	byCommand      [nCommands]Stats
	byTarget       []Stats
	sessions, done uint64
	failovers      uint64
	unconfirmed    uint64
	abandoned      uint64
}

// Run connects to every target (CER/CEA), plays sessions until the duration or MaxSessions,
// ends them (a session begun is terminated, uncounted if after the end) and disconnects (DPR).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &run{cfg: &cfg, runID: time.Now().UnixNano()}
	// RFC 6733 §3: an End-to-End-Id stays unique for at least 4 minutes, across restarts: the
	// low 12 bits of the clock in the high 12, then a counter (4 billion requests before it
	// repeats). diam.NewRequest's random ones repeat every few hundred thousand requests, and
	// a server takes the second for a retransmission of the first.
	r.e2e.Store(uint32(time.Now().Unix()&0xfff) << 20)
	for _, t := range cfg.Targets {
		var cs []*slot
		for range cfg.ConnsPerTarget {
			s := &slot{addr: t}
			p, err := r.dial(t)
			if err != nil {
				r.closeAll()
				return nil, err
			}
			s.p.Store(p)
			cs = append(cs, s)
		}
		r.conns = append(r.conns, cs)
	}
	defer r.closeAll()

	start := time.Now()
	r.end = start.Add(cfg.Duration)
	ctx, cancel := context.WithDeadline(ctx, r.end)
	defer cancel()
	redialCtx, stopRedial := context.WithCancel(context.Background())
	defer stopRedial()
	go r.redial(redialCtx)
	starts := make(chan struct{})
	var skipped atomic.Uint64
	go r.pace(ctx, starts, &skipped)

	workers := make([]*worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{byTarget: make([]Stats, len(cfg.Targets))}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range starts {
				n := r.next.Add(1)
				if cfg.MaxSessions > 0 && n > cfg.MaxSessions {
					return
				}
				r.session(w, n-1)
			}
		}()
	}
	stopProgress := r.progress(start)
	wg.Wait()
	stopProgress()
	elapsed := min(time.Since(start), cfg.Duration)

	res := &Result{Elapsed: elapsed, Skipped: skipped.Load(), ByTarget: make([]Stats, len(cfg.Targets))}
	for _, w := range workers {
		for i := range w.byCommand {
			res.ByCommand[i].merge(&w.byCommand[i])
		}
		for i := range w.byTarget {
			res.ByTarget[i].merge(&w.byTarget[i])
		}
		res.Sessions += w.sessions
		res.SessionsCompleted += w.done
		res.Failovers += w.failovers
		res.Unconfirmed += w.unconfirmed
		res.Abandoned += w.abandoned
	}
	res.RARs = r.rars.Load()
	return res, nil
}

// pace feeds the workers: as fast as they take (closed loop) or at cfg.Rate (open loop, a
// session no worker can take at its time is skipped and counted). It closes starts at the end.
func (r *run) pace(ctx context.Context, starts chan<- struct{}, skipped *atomic.Uint64) {
	defer close(starts)
	if r.cfg.Rate <= 0 {
		for {
			select {
			case starts <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}
	interval := time.Duration(float64(time.Second) / r.cfg.Rate)
	begin := time.Now()
	for i := int64(0); ; i++ {
		at := begin.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		select {
		case starts <- struct{}{}:
		case <-ctx.Done():
			return
		default:
			skipped.Add(1)
		}
	}
}

// session plays subscriber session number n: CCR-I, the CCR-Us, CCR-T. A request that fails
// ends it (a PCEF gives the bearer up); a session whose CCR-I was answered is always terminated.
func (r *run) session(w *worker, n uint64) {
	cfg := r.cfg
	sub := n % uint64(cfg.Subscribers)
	sid := fmt.Sprintf("%s;%d;%d", cfg.Identity.OriginHost, r.runID, n)
	target := int(n % uint64(len(cfg.Targets)))
	conn := int(n/uint64(len(cfg.Targets))) % cfg.ConnsPerTarget
	w.sessions++
	switch code := r.request(w, target, conn, Initial, r.initial(sid, sub)); code {
	case resultSuccess:
	case 0, resultUnableToDeliver, resultTooBusy:
		w.unconfirmed++ // a server may have stored it without the answer reaching us
		return
	default:
		return // refused: no session
	}
	num := uint32(1)
	for range cfg.Updates {
		if !cfg.Sticky {
			target = (target + 1) % len(cfg.Targets)
		}
		if r.request(w, target, conn, Update, r.ccr(sid, Update, num, true)) != resultSuccess {
			break // the bearer goes: the session ends with its CCR-T
		}
		num++
	}
	// The PCRF must learn the session ended: the CCR-T is sent again, round after round over
	// every peer, until one answers.
	for round := range terminationRounds {
		if !cfg.Sticky || round > 0 {
			target = (target + 1) % len(cfg.Targets)
		}
		code := r.request(w, target, conn, Termination, r.ccr(sid, Termination, num, true))
		if code == resultSuccess && num == uint32(cfg.Updates)+1 {
			w.done++
		}
		if code != 0 && code != resultTooBusy && code != resultUnableToDeliver {
			return
		}
	}
	w.abandoned++
}

// terminationRounds bounds the CCR-T's retries (each round tries every peer with failover).
const terminationRounds = 3

// request sends one CCR and records its outcome: the answer's Result-Code, 0 for none.
// Requests that end after the run's end are sent (to close the session) but not counted;
// latency is the PCEF's, failovers included.
func (r *run) request(w *worker, target, conn int, cmd Command, m *diam.Message) uint32 {
	if r.cfg.Interval > 0 && cmd != Initial {
		time.Sleep(r.cfg.Interval)
	}
	counted := time.Now().Before(r.end)
	sent := time.Now()
	a, err := r.send(w, target, conn, m)
	now := time.Now()
	counted = counted && now.Before(r.end)
	st, tt := &w.byCommand[cmd], &w.byTarget[target]
	if err != nil {
		if counted {
			for _, x := range []*Stats{st, tt} {
				x.Sent++
				if errors.Is(err, errTimeout) {
					x.Timeouts++
				} else {
					x.Errors++
				}
			}
			if errors.Is(err, errTimeout) {
				r.timeouts.Add(1)
			} else {
				r.errs.Add(1)
			}
		}
		return 0
	}
	code := resultCode(a)
	if counted {
		st.Sent++
		tt.Sent++
		st.Answered++
		tt.Answered++
		if st.Codes == nil {
			st.Codes = map[uint32]uint64{}
		}
		st.Codes[code]++
		st.Latency.Record(now.Sub(sent))
		tt.Latency.Record(now.Sub(sent))
		r.answered.Add(1)
	}
	return code
}

// initial builds session n's CCR-I: the subscriber's IMSI, its Framed-IP-Address, the APN.
func (r *run) initial(sid string, sub uint64) *diam.Message {
	m := r.ccr(sid, Initial, 0, false)
	imsi := fmt.Sprintf("%015d", r.cfg.IMSIBase+sub)
	m.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(1)), // END_USER_IMSI
		diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String(imsi)),
	}})
	ip := r.cfg.FramedIPBase.As4()
	v := binary.BigEndian.Uint32(ip[:]) + uint32(sub)
	binary.BigEndian.PutUint32(ip[:], v)
	m.NewAVP(avp.FramedIPAddress, avp.Mbit, 0, datatype.OctetString(ip[:]))
	if r.cfg.APN != "" {
		m.NewAVP(avp.CalledStationID, avp.Mbit, 0, datatype.UTF8String(r.cfg.APN))
	}
	return m
}

// ccr builds the AVPs every CCR carries, and the usage report when asked.
func (r *run) ccr(sid string, cmd Command, num uint32, usage bool) *diam.Message {
	id := r.cfg.Identity
	m := diam.NewRequest(cmdCCR, GxApplicationID, dict.Default)
	m.Header.EndToEndID = r.e2e.Add(1)
	m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String(sid))
	m.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(GxApplicationID))
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(id.OriginHost))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(id.OriginRealm))
	m.NewAVP(avp.DestinationRealm, avp.Mbit, 0, datatype.DiameterIdentity(r.destinationRealm()))
	m.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(cmd+1))
	m.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(num))
	// When the event happened: the same on every copy the failover sends (RFC 4006 §8.38).
	m.NewAVP(avp.EventTimestamp, avp.Mbit, 0, datatype.Time(time.Now()))
	if usage && r.cfg.MonitoringKey != "" {
		mv := uint8(avp.Mbit | avp.Vbit)
		m.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString(r.cfg.MonitoringKey)),
			diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(r.cfg.UsedOctets)),
			}}),
		}})
	}
	return m
}

// progress reports about every second until stopped.
func (r *run) progress(start time.Time) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		var last uint64
		lastAt := start
		tick.Every(ctx, time.Second, func(now time.Time) bool {
			a := r.answered.Load()
			r.cfg.Progress(Progress{Elapsed: now.Sub(start), Answered: a, Timeouts: r.timeouts.Load(),
				Errors: r.errs.Load(), Rate: float64(a-last) / now.Sub(lastAt).Seconds()})
			last, lastAt = a, now
			return true
		})
	})
	return func() { cancel(); wg.Wait() }
}

// send sends m to target's connection and, with Failover, again to the next targets (T flag)
// while it times out, finds the connection down, or is answered 3002 UNABLE_TO_DELIVER or
// 3004 TOO_BUSY (RFC 6733 §7.1.3: "SHOULD attempt to send the message to an alternate peer").
// The last answer is returned when every target refused.
func (r *run) send(w *worker, target, conn int, m *diam.Message) (*diam.Message, error) {
	tries := 1
	if r.cfg.Failover {
		tries = len(r.conns)
	}
	var err error
	var a *diam.Message
	for i := range tries {
		p := r.conns[(target+i)%len(r.conns)][conn].live()
		if p == nil {
			err = errClosed
		} else if a, err = p.do(m, r.cfg.Timeout); err == nil {
			if code := resultCode(a); i+1 == tries || (code != resultUnableToDeliver && code != resultTooBusy) {
				return a, nil
			}
		}
		if i+1 < tries {
			m.Header.CommandFlags |= diam.RetransmittedFlag
			w.failovers++
		}
	}
	return nil, err
}

// dial connects with a handshake timeout of its own: a CER is not a request under load.
func (r *run) dial(addr string) (*peer, error) {
	p, err := dial(addr, r.cfg.Identity, max(r.cfg.Timeout, 5*time.Second), func() { r.rars.Add(1) })
	if err == nil && p.realm != "" {
		r.destRealm.CompareAndSwap(nil, &p.realm)
	}
	return p, err
}

// destinationRealm is the CCRs' Destination-Realm: --destination-realm, else the server's
// realm from the first CEA, else our own.
func (r *run) destinationRealm() string {
	if r.cfg.Identity.DestinationRealm != "" {
		return r.cfg.Identity.DestinationRealm
	}
	if p := r.destRealm.Load(); p != nil {
		return *p
	}
	return r.cfg.Identity.OriginRealm
}

// redial replaces lost connections, once a second.
func (r *run) redial(ctx context.Context) {
	tick.Every(ctx, time.Second, func(time.Time) bool {
		for _, cs := range r.conns {
			for _, s := range cs {
				if s.live() != nil {
					continue
				}
				if p, err := r.dial(s.addr); err == nil {
					if old := s.p.Swap(p); old != nil {
						old.close()
					}
				}
			}
		}
		return true
	})
}

func (r *run) closeAll() {
	for _, cs := range r.conns {
		for _, s := range cs {
			if p := s.p.Load(); p != nil {
				p.disconnect(r.cfg.Timeout)
			}
		}
	}
}
