// Package engine plays the subscriber flow against one or more RADIUS servers: closed loop
// (c workers, each sends its next message when the previous one is answered) or open loop
// (a fixed offered rate, latency measured from each message's scheduled send time so that a
// stalled server cannot hide its queueing). Every worker keeps one connected UDP socket per
// target and port for the whole run. Runs are bounded by duration, by message count and
// optionally by session count.
package engine

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/hist"
	"github.com/openaaa/openaaa/services/loadgen/internal/packet"
	"github.com/openaaa/openaaa/services/loadgen/internal/population"
)

// Mode selects the messages of a session.
type Mode int

const (
	// ModeFlow is the field's capacity-test flow: Access-Request → (if Accept) Start →
	// N × Interim-Update → Stop.
	ModeFlow Mode = iota
	// ModeAuth sends Access-Requests only (one per session).
	ModeAuth
	// ModeAcct sends Start → N × Interim → Stop without authentication; the Framed-IP comes
	// from the population.
	ModeAcct
)

// ParseMode parses flow, auth or acct.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "flow":
		return ModeFlow, nil
	case "auth":
		return ModeAuth, nil
	case "acct":
		return ModeAcct, nil
	}
	return 0, fmt.Errorf("mode %q: want flow, auth or acct", s)
}

func (m Mode) String() string { return [...]string{"flow", "auth", "acct"}[m] }

// AuthMethod is how the password is sent.
type AuthMethod int

const (
	PAP AuthMethod = iota
	CHAP
	// EAPTLS and PEAPMSCHAPv2 run an EAP conversation per authentication (eap.go).
	EAPTLS
	PEAPMSCHAPv2
)

func (a AuthMethod) String() string {
	return [...]string{"pap", "chap", "eap-tls", "peap-mschapv2"}[a]
}

// IsEAP reports whether an authentication is an EAP conversation of several rounds.
func (a AuthMethod) IsEAP() bool { return a >= EAPTLS }

// Distribution is how messages are spread over targets.
type Distribution int

const (
	// RoundRobin sends each message of a session to the next target (the field's hardest
	// case: Start in DC1, the first Interim in DC2, ...).
	RoundRobin Distribution = iota
	// Sticky sends every message of a session to one target (sessions spread round-robin).
	Sticky
)

func (d Distribution) String() string { return [...]string{"round-robin", "sticky"}[d] }

// Kind is a message type, the unit of the latency report.
type Kind int

const (
	KindAuth Kind = iota
	KindStart
	KindInterim
	KindStop
	NumKinds
)

func (k Kind) String() string {
	return [...]string{"auth", "acct-start", "acct-interim", "acct-stop"}[k]
}

// IsAcct reports whether k is an accounting message.
func (k Kind) IsAcct() bool { return k != KindAuth }

// Target is one server (one per DC): its authentication and accounting addresses.
type Target struct {
	Name string
	Auth string // host:port
	Acct string // host:port
}

// Config is one run.
type Config struct {
	Targets      []Target
	Secret       []byte
	Mode         Mode
	Auth         AuthMethod
	Interims     int
	Distribution Distribution
	// Concurrency is the number of workers (closed loop: requests in flight; open loop: the
	// most sessions in progress at once).
	Concurrency int
	// Rate > 0 selects the open loop: messages offered per second.
	Rate float64
	// Bounds: the run stops at the first one reached. Duration and MaxMessages must be > 0.
	Duration    time.Duration
	MaxMessages uint64
	MaxSessions uint64 // 0: no session bound
	// Ramp starts the workers (closed loop) or raises the rate (open loop) linearly over Ramp.
	Ramp    time.Duration
	Timeout time.Duration
	Retries int
	// Failover (closed loop): a retransmission goes to the next target and a target that
	// timed out is skipped for HoldDown, then probed (failover.go). Off: every transmission
	// of a request goes to its target.
	Failover bool
	HoldDown time.Duration
	// TrackAcked (closed loop) lists in Result.Acked the accounting records answered per
	// session, to check afterwards that the servers kept every record they acknowledged.
	TrackAcked     bool
	RequireReplyMA bool
	// EAPTLS is the EAP peer's TLS configuration (EAP-TLS and PEAP): the CA that signed the
	// server's certificate, its name, and for EAP-TLS the client certificate.
	EAPTLS        *tls.Config
	Population    *population.Population
	NASIP         [4]byte
	NASIdentifier string
	// Seed makes the counters' growth reproducible (0: random).
	Seed uint64
	// Progress, if set, is called about once per ProgressEvery while running.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Observe, if set, is called by the worker for every message before it is sent (tests).
	Observe func(Event)
}

// Event describes one message about to be sent.
type Event struct {
	Worker    int
	Target    int
	Kind      Kind
	User      string
	SessionID string
	// Index of the message within its session (0-based).
	Index int
}

// Progress is a live view of the run.
type Progress struct {
	Elapsed          time.Duration
	Sent, Answered   uint64
	Timeouts, Errors uint64
	// Rate is answered per second over the last interval.
	Rate float64
}

// Result is the outcome of a run.
type Result struct {
	Started         time.Time
	Elapsed         time.Duration
	Sent            uint64 // requests sent (first transmissions); EAP: authentications begun
	Answered        uint64 // valid replies; EAP: authentications ended by an Accept or a Reject
	Rounds          uint64 // EAP: Access-Request/reply round trips (first transmissions)
	Retransmissions uint64
	Timeouts        uint64 // no reply after all retries
	Errors          uint64 // invalid replies, socket errors
	Aborted         uint64 // in flight when the run ended
	Late            uint64 // replies to earlier (timed-out) requests
	Accepts         uint64
	Rejects         uint64
	AcctResponses   uint64
	Sessions        uint64 // sessions begun
	SessionsDone    uint64 // sessions whose last message was answered
	Offered         uint64 // open loop: messages scheduled
	Unsent          uint64 // open loop: scheduled but not sent (every session waited for a reply; no new one: Concurrency reached or every user in a session)
	PerTarget       []uint64
	// Targets is each target's share (one per DC): what was answered there and how fast.
	Targets []TargetResult
	Latency [NumKinds]hist.H
	// SendLag (open loop) is how late the generator sent each message after its scheduled
	// time: when it grows, the generator (not the server) is short of CPU.
	SendLag hist.H
	// Service (open loop) is the latency of all answered messages from their actual send
	// time: the server's part of Latency once the generator's send lag is taken out.
	Service      hist.H
	ErrorSamples map[string]uint64
	// Timeline is the run second by second: answered, failed and retransmitted requests.
	Timeline []Second
	// Acked (Config.TrackAcked): every session with an answered accounting record.
	Acked []AckedSession
}

// AckedSession is what a session's Accounting-Responses acknowledged: its records by kind.
type AckedSession struct {
	ID                      string
	Starts, Interims, Stops uint32
}

// TargetResult is one target's share of a run. A request belongs to the target it was sent to.
type TargetResult struct {
	Answered, Timeouts, Errors, Accepts, Rejects uint64
	Auth, Acct                                   hist.H // latency of the answered requests
}

func (t *TargetResult) merge(o *TargetResult) {
	t.Answered += o.Answered
	t.Timeouts += o.Timeouts
	t.Errors += o.Errors
	t.Accepts += o.Accepts
	t.Rejects += o.Rejects
	t.Auth.Merge(&o.Auth)
	t.Acct.Merge(&o.Acct)
}

// record counts one answered request of kind k with latency lat.
func (t *TargetResult) record(k Kind, lat time.Duration) {
	t.Answered++
	if k.IsAcct() {
		t.Acct.Record(lat)
	} else {
		t.Auth.Record(lat)
	}
}

// AnsweredPerSecond is the incoming TPS the servers achieved.
func (r *Result) AnsweredPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Answered) / r.Elapsed.Seconds()
}

type counters struct {
	sent, answered, retrans, timeouts, errors, aborted, late atomic.Uint64
	accepts, rejects, acct, sessions, sessionsDone           atomic.Uint64
	rounds                                                   atomic.Uint64
	_                                                        [64]byte
}

type conn struct {
	c   *net.UDPConn
	id  byte
	buf []byte
}

type session struct {
	seq     uint64
	user    *population.User
	ui      int32 // user's index in the population
	id      string
	step    int
	msgs    int
	framed  [4]byte
	nasPort uint32
	in, out uint64
	secs    uint32
	done    bool
	// acked counts the answered accounting records by kind (Config.TrackAcked).
	acked [3]uint32 // start, interim, stop
}

type worker struct {
	e       *run
	n       int
	conns   [][2]*conn // per target: auth, acct
	b       packet.Builder
	rnd     *rand.Rand
	sess    session
	c       *counters
	lat     [NumKinds]hist.H
	perT    []uint64
	tgt     []TargetResult // per target; ~90 KB each, so memory grows with workers × targets
	errs    map[string]uint64
	hasSess bool
	acked   []AckedSession
	// The EAP round being built: its EAP-Message and State (eap.go).
	eapMsg, eapState []byte
}

type run struct {
	cfg      Config
	nonce    uint32
	start    time.Time
	stopped  atomic.Bool
	msgs     atomic.Uint64 // closed loop: messages reserved
	sessions atomic.Uint64 // sessions reserved
	workers  []*worker
	timeline *timeline
	health   *health // nil: failover off
	// free holds the subscribers not in a session, the one free the longest first: a real
	// subscriber line has one session at a time, so a user in a session is not picked again.
	free chan int32
}

var errAborted = errors.New("aborted: run ended")

// newRand is worker n's generator for the counters' growth and request authenticators.
func newRand(seed uint64, n int) *rand.Rand {
	if seed == 0 {
		return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return rand.New(rand.NewPCG(seed, uint64(n)))
}

// Run executes one bounded run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, nonce: rand.Uint32(), free: make(chan int32, len(cfg.Population.Users))}
	for i := range cfg.Population.Users {
		r.free <- int32(i)
	}
	if cfg.Rate > 0 {
		return r.open(ctx)
	}

	seed := cfg.Seed
	for i := 0; i < cfg.Concurrency; i++ {
		w := &worker{e: r, n: i, c: &counters{}, rnd: newRand(seed, i), perT: make([]uint64, len(cfg.Targets)), tgt: make([]TargetResult, len(cfg.Targets)), errs: map[string]uint64{}}
		for _, t := range cfg.Targets {
			var pair [2]*conn
			for j, addr := range []string{t.Auth, t.Acct} {
				if addr == "" {
					continue
				}
				ua, err := net.ResolveUDPAddr("udp", addr)
				if err != nil {
					r.closeAll()
					return nil, fmt.Errorf("target %s: %w", addr, err)
				}
				c, err := net.DialUDP("udp", nil, ua)
				if err != nil {
					r.closeAll()
					return nil, fmt.Errorf("target %s: %w", addr, err)
				}
				pair[j] = &conn{c: c, id: byte(rand.Uint32()), buf: make([]byte, 4096)}
			}
			w.conns = append(w.conns, pair)
		}
		r.workers = append(r.workers, w)
	}
	defer r.closeAll()

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	r.begin()
	var wg sync.WaitGroup
	allDone := make(chan struct{})
	for i, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Ramp > 0 && i > 0 {
				delay := time.Duration(int64(cfg.Ramp) * int64(i) / int64(cfg.Concurrency))
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return
				}
			}
			w.loop(ctx)
		}()
	}
	go func() { wg.Wait(); close(allDone) }()

	// Stopper: when the duration is up, abort what is in flight so that every reply counted
	// arrived within the run.
	var endAt time.Time
	prog := r.newProgressTicker()
	defer prog.Stop()
loop:
	for {
		select {
		case <-allDone:
			endAt = time.Now()
			break loop
		case <-ctx.Done():
			endAt = time.Now()
			r.stopped.Store(true)
			past := time.Now()
			for _, w := range r.workers {
				for _, p := range w.conns {
					for _, c := range p {
						if c != nil {
							c.c.SetReadDeadline(past)
						}
					}
				}
			}
			<-allDone
			break loop
		case now := <-prog.C:
			prog.report(now, r.progress)
		}
	}
	cancel()
	res := r.collect()
	res.Started = r.start
	res.Elapsed = endAt.Sub(r.start)
	res.Timeline = r.timeline.seconds(res.Elapsed)
	return res, nil
}

// begin starts the run's clock, its timeline and, with failover, its view of the targets.
func (r *run) begin() {
	r.start = time.Now()
	r.timeline = newTimeline(r.start, r.cfg.Duration)
	if r.cfg.Failover {
		r.health = newHealth(len(r.cfg.Targets), r.cfg.HoldDown, r.start)
	}
}

func validate(cfg *Config) error {
	switch {
	case len(cfg.Targets) == 0:
		return errors.New("no target")
	case cfg.Population == nil || len(cfg.Population.Users) == 0:
		return errors.New("no subscribers")
	case len(cfg.Population.Users) > math.MaxInt32:
		return errors.New("too many subscribers")
	case cfg.Duration <= 0:
		return errors.New("duration must be positive (every run is bounded)")
	case cfg.MaxMessages == 0:
		return errors.New("message count bound must be positive (every run is bounded)")
	case cfg.Concurrency < 1:
		return errors.New("concurrency must be at least 1")
	case cfg.Interims < 0:
		return errors.New("interims must not be negative")
	case cfg.Timeout <= 0:
		return errors.New("timeout must be positive")
	case cfg.Retries < 0:
		return errors.New("retries must not be negative")
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return errors.New("rate must be a positive number (0: closed loop)")
	case cfg.Auth.IsEAP() && cfg.Rate > 0:
		return errors.New("EAP runs in the closed loop only (no --rate)")
	case cfg.Auth.IsEAP() && cfg.EAPTLS == nil:
		return errors.New("EAP needs a TLS configuration (the server's CA)")
	case cfg.Auth.IsEAP() && cfg.Failover:
		return errors.New("EAP conversations stay on one server: no failover")
	case cfg.Rate > 0 && cfg.Failover:
		return errors.New("failover needs the closed loop (the open loop does not retransmit)")
	case cfg.Rate > 0 && cfg.TrackAcked:
		return errors.New("tracking acknowledged records needs the closed loop")
	case cfg.Failover && cfg.HoldDown <= 0:
		return errors.New("failover needs a positive hold-down")
	}
	for _, t := range cfg.Targets {
		if cfg.Mode != ModeAcct && t.Auth == "" {
			return fmt.Errorf("target %s: no authentication address", t.Name)
		}
		if cfg.Mode != ModeAuth && t.Acct == "" {
			return fmt.Errorf("target %s: no accounting address", t.Name)
		}
	}
	return nil
}

func (r *run) closeAll() {
	for _, w := range r.workers {
		for _, p := range w.conns {
			for _, c := range p {
				if c != nil {
					c.c.Close()
				}
			}
		}
	}
}

// slotTime is when message i (0-based) is due, for rate λ and a linear ramp of length R:
// the number of messages due by t is λt²/2R during the ramp and λ(t − R/2) after it.
func slotTime(i uint64, rate float64, ramp time.Duration) time.Duration {
	R := ramp.Seconds()
	x := float64(i)
	if R > 0 && x < rate*R/2 {
		return time.Duration(math.Sqrt(2*x*R/rate) * float64(time.Second))
	}
	return time.Duration((x/rate + R/2) * float64(time.Second))
}

func (r *run) progress() Progress {
	var p Progress
	for _, w := range r.workers {
		p.add(w.c.progress())
	}
	return p
}

// progress reads the counters a Progress shows.
func (c *counters) progress() Progress {
	return Progress{Sent: c.sent.Load(), Answered: c.answered.Load(), Timeouts: c.timeouts.Load(), Errors: c.errors.Load()}
}

func (p *Progress) add(q Progress) {
	p.Sent += q.Sent
	p.Answered += q.Answered
	p.Timeouts += q.Timeouts
	p.Errors += q.Errors
}

// progressTicker calls Config.Progress every ProgressEvery (1 s by default) with the rate
// answered since the call before; the closed and the open loop both report through it.
type progressTicker struct {
	*time.Ticker
	fn           func(Progress)
	start        time.Time
	lastAt       time.Time
	lastAnswered uint64
}

func (r *run) newProgressTicker() *progressTicker {
	every := r.cfg.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	return &progressTicker{Ticker: time.NewTicker(every), fn: r.cfg.Progress, start: r.start, lastAt: r.start}
}

// report calls Config.Progress, if set, with what read returns at the tick now.
func (t *progressTicker) report(now time.Time, read func() Progress) {
	if t.fn == nil {
		return
	}
	p := read()
	p.Elapsed = now.Sub(t.start)
	p.Rate = float64(p.Answered-t.lastAnswered) / now.Sub(t.lastAt).Seconds()
	t.lastAnswered, t.lastAt = p.Answered, now
	t.fn(p)
}

// addTo adds the counters to res: the closed loop's workers' and the open loop's alike.
func (c *counters) addTo(res *Result) {
	res.Sent += c.sent.Load()
	res.Answered += c.answered.Load()
	res.Retransmissions += c.retrans.Load()
	res.Timeouts += c.timeouts.Load()
	res.Errors += c.errors.Load()
	res.Aborted += c.aborted.Load()
	res.Late += c.late.Load()
	res.Rounds += c.rounds.Load()
	res.Accepts += c.accepts.Load()
	res.Rejects += c.rejects.Load()
	res.AcctResponses += c.acct.Load()
	res.Sessions += c.sessions.Load()
	res.SessionsDone += c.sessionsDone.Load()
}

func (r *run) collect() *Result {
	res := &Result{PerTarget: make([]uint64, len(r.cfg.Targets)), Targets: make([]TargetResult, len(r.cfg.Targets)), ErrorSamples: map[string]uint64{}}
	for _, w := range r.workers {
		w.c.addTo(res)
		for i := range w.lat {
			res.Latency[i].Merge(&w.lat[i])
		}
		for i, n := range w.perT {
			res.PerTarget[i] += n
			res.Targets[i].merge(&w.tgt[i])
		}
		for k, n := range w.errs {
			res.ErrorSamples[k] += n
		}
		res.Acked = append(res.Acked, w.acked...)
	}
	return res
}

var (
	errSessionBound = errors.New("session bound reached")
	errAllBusy      = errors.New("every subscriber is in a session")
)

// newSession begins a session for worker n with the subscriber free the longest. When every
// subscriber is in a session it waits for one until cancel is closed (closed loop), or, with
// a nil cancel, fails at once with errAllBusy (open loop: the message is not sent). The
// session's subscriber goes back with endSession.
func (r *run) newSession(n int, cancel <-chan struct{}) (session, error) {
	var ui int32
	select {
	case ui = <-r.free:
	default:
		if cancel == nil {
			return session{}, errAllBusy
		}
		select {
		case ui = <-r.free:
		case <-cancel:
			return session{}, errAborted
		}
	}
	seq := r.sessions.Add(1)
	if r.cfg.MaxSessions > 0 && seq > r.cfg.MaxSessions {
		r.free <- ui
		return session{}, errSessionBound
	}
	seq-- // 0-based
	u := &r.cfg.Population.Users[ui]
	return session{
		seq:     seq,
		user:    u,
		ui:      ui,
		id:      fmt.Sprintf("%08x%08x", r.nonce, seq),
		nasPort: uint32(n)<<16 | uint32(seq&0xffff),
		framed:  u.FramedIP,
	}, nil
}

// endSession frees the session's subscriber (once per session). It never blocks: free has
// room for every subscriber.
func (r *run) endSession(s *session) { r.free <- s.ui }

func (w *worker) newSession(ctx context.Context) bool {
	s, err := w.e.newSession(w.n, ctx.Done())
	if err != nil {
		return false
	}
	w.sess = s
	w.hasSess = true
	w.c.sessions.Add(1)
	return true
}

// endSession frees the subscriber of the worker's session, if it has one, and notes what its
// Accounting-Responses acknowledged.
func (w *worker) endSession() {
	if w.hasSess {
		if a := w.sess.acked; a != [3]uint32{} {
			w.acked = append(w.acked, AckedSession{ID: w.sess.id, Starts: a[0], Interims: a[1], Stops: a[2]})
		}
		w.e.endSession(&w.sess)
		w.hasSess = false
	}
}

// kind is the next message of the current session.
func (r *run) kindOf(s *session) Kind {
	step := s.step
	if r.cfg.Mode == ModeAuth {
		return KindAuth
	}
	if r.cfg.Mode == ModeFlow {
		if step == 0 {
			return KindAuth
		}
		step--
	}
	switch {
	case step == 0:
		return KindStart
	case step <= r.cfg.Interims:
		return KindInterim
	default:
		return KindStop
	}
}

func (r *run) targetOf(s *session) int {
	n := len(r.cfg.Targets)
	if r.cfg.Distribution == Sticky {
		return int(s.seq % uint64(n))
	}
	return int((s.seq + uint64(s.msgs)) % uint64(n))
}

func (w *worker) loop(ctx context.Context) {
	cfg := &w.e.cfg
	defer w.endSession() // a worker waiting for a subscriber may get this one
	for {
		if ctx.Err() != nil || w.e.stopped.Load() {
			return
		}
		if !w.hasSess || w.sess.done {
			w.endSession()
			if !w.newSession(ctx) {
				return
			}
		}
		if w.e.msgs.Add(1) > cfg.MaxMessages {
			return
		}
		w.send(time.Time{})
	}
}

func (w *worker) send(sched time.Time) {
	cfg := &w.e.cfg
	s := &w.sess
	k := w.e.kindOf(s)
	ti := w.e.targetOf(s)
	if w.e.health != nil {
		ti = w.e.health.pick(ti)
	}
	port := 0
	if k.IsAcct() {
		port = 1
	}
	if cfg.Observe != nil {
		cfg.Observe(Event{Worker: w.n, Target: ti, Kind: k, User: s.user.Name, SessionID: s.id, Index: s.msgs})
	}
	w.perT[ti]++
	s.msgs++
	w.c.sent.Add(1)
	t0 := sched
	if t0.IsZero() {
		t0 = time.Now()
	}
	var reply packet.Reply
	var err error
	if k == KindAuth && cfg.Auth.IsEAP() {
		reply, err = w.eapAuth(ti, s)
	} else {
		c := w.conns[ti][port]
		c.id++
		ti, reply, err = w.exchange(ti, port, w.build(s, k, c.id))
	}
	now := time.Now()
	lat := now.Sub(t0)
	final := k == KindAuth && cfg.Mode == ModeAuth || k == KindStop
	tr := &w.tgt[ti]
	switch {
	case err == nil:
		w.e.timeline.answered(now)
		w.c.answered.Add(1)
		w.lat[k].Record(lat)
		tr.record(k, lat)
		switch reply.Code {
		case packet.CodeAccessAccept:
			w.c.accepts.Add(1)
			tr.Accepts++
			if reply.HasIP {
				s.framed = reply.FramedIP
			}
		case packet.CodeAccessReject, packet.CodeAccessChallenge:
			w.c.rejects.Add(1)
			tr.Rejects++
			s.done = true
		case packet.CodeAccountingResponse:
			w.c.acct.Add(1)
			if cfg.TrackAcked {
				s.acked[min(int(k-KindStart), 2)]++
			}
		}
		if final {
			w.c.sessionsDone.Add(1)
		}
	case errors.Is(err, errAborted):
		w.c.aborted.Add(1)
		s.done = true
	case errors.Is(err, errTimeout):
		w.e.timeline.failed(now)
		w.c.timeouts.Add(1)
		tr.Timeouts++
		if k == KindAuth {
			s.done = true
		}
	default:
		w.e.timeline.failed(now)
		w.c.errors.Add(1)
		tr.Errors++
		if len(w.errs) < 16 || w.errs[err.Error()] > 0 {
			w.errs[err.Error()]++
		}
		if k == KindAuth {
			s.done = true
		}
	}
	if final {
		s.done = true
	}
	s.step++
}

var errTimeout = errors.New("timeout")

// exchange sends req to target ti's port (0 auth, 1 acct) and waits for its reply,
// retransmitting the same packet (same identifier and authenticator, so the server can answer
// it from its duplicate cache). With failover a retransmission goes to the next usable target
// after marking this one dead. It returns the target that answered, or was tried last.
func (w *worker) exchange(ti, port int, req []byte) (int, packet.Reply, error) {
	cfg := &w.e.cfg
	h := w.e.health
	var last error
	for attempt := 0; attempt <= cfg.Retries; attempt++ {
		if attempt > 0 {
			w.c.retrans.Add(1)
			w.e.timeline.retrans(time.Now())
			if h != nil {
				h.failed(ti)
				ti = h.pick(ti + 1)
			}
		}
		r, err := w.transmit(w.conns[ti][port], req)
		if err == errTimeout {
			last = err
			continue
		}
		// A server whose port is closed answers with ICMP (connection refused): with failover
		// that is a dead target like a silent one, and the next one is tried.
		if h != nil && isNetError(err) {
			last = err
			continue
		}
		if err == nil && h != nil {
			h.answered(ti)
		}
		return ti, r, err
	}
	if h != nil {
		h.failed(ti)
	}
	return ti, packet.Reply{}, last
}

func isNetError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// transmit sends req on c once and waits for its reply until the timeout (errTimeout).
func (w *worker) transmit(c *conn, req []byte) (packet.Reply, error) {
	cfg := &w.e.cfg
	if _, err := c.c.Write(req); err != nil {
		if w.e.stopped.Load() {
			return packet.Reply{}, errAborted
		}
		return packet.Reply{}, fmt.Errorf("send: %w", err)
	}
	c.c.SetReadDeadline(time.Now().Add(cfg.Timeout))
	if w.e.stopped.Load() {
		return packet.Reply{}, errAborted
	}
	for {
		n, err := c.c.Read(c.buf)
		if err != nil {
			if w.e.stopped.Load() {
				return packet.Reply{}, errAborted
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return packet.Reply{}, errTimeout
			}
			return packet.Reply{}, fmt.Errorf("receive: %w", err)
		}
		r, err := packet.ParseReply(c.buf[:n], req, cfg.Secret, cfg.RequireReplyMA)
		if err == packet.ErrWrongID {
			w.c.late.Add(1)
			continue
		}
		return r, err
	}
}

// Octets per Interim-Update: ~250 MiB in, ~1.25 GiB out, so that the output counter passes
// 4 GiB (Acct-Output-Gigawords) within the default 5 interims.
const (
	inStep  = 200 << 20
	outStep = 1 << 30
)

func (w *worker) build(s *session, k Kind, id byte) []byte {
	cfg := &w.e.cfg
	b := &w.b
	u := s.user
	var auth [16]byte
	if k == KindAuth {
		binary.LittleEndian.PutUint64(auth[:8], w.rnd.Uint64())
		binary.LittleEndian.PutUint64(auth[8:], w.rnd.Uint64())
		b.Begin(packet.CodeAccessRequest, id, auth)
		b.String(packet.AttrUserName, u.Name)
		if cfg.Auth.IsEAP() {
			b.EAPMessage(w.eapMsg)
			if w.eapState != nil {
				b.Bytes(packet.AttrState, w.eapState)
			}
		} else if cfg.Auth == CHAP {
			b.CHAPPassword(id, u.Password)
		} else {
			b.UserPassword(u.Password, cfg.Secret)
		}
	} else {
		b.Begin(packet.CodeAccountingRequest, id, auth)
		b.String(packet.AttrUserName, u.Name)
		var st uint32
		switch k {
		case KindStart:
			st = packet.AcctStart
		case KindInterim:
			st = packet.AcctInterim
		default:
			st = packet.AcctStop
		}
		b.Uint32(packet.AttrAcctStatusType, st)
		b.String(packet.AttrAcctSessionID, s.id)
		if s.framed != [4]byte{} {
			b.IPv4(packet.AttrFramedIPAddress, s.framed)
		}
		b.Uint32(packet.AttrAcctDelayTime, 0)
		if k != KindStart {
			interval := cfg.Population.AcctInterimInterval
			if interval == 0 {
				interval = 300
			}
			s.secs += interval
			s.in += inStep + w.rnd.Uint64N(inStep/4)
			s.out += outStep + w.rnd.Uint64N(outStep/4)
			b.Uint32(packet.AttrAcctSessionTime, s.secs)
			b.Uint32(packet.AttrAcctInputOctets, uint32(s.in))
			b.Uint32(packet.AttrAcctInputGigawords, uint32(s.in>>32))
			b.Uint32(packet.AttrAcctOutputOctets, uint32(s.out))
			b.Uint32(packet.AttrAcctOutputGigawords, uint32(s.out>>32))
			b.Uint32(packet.AttrAcctInputPackets, uint32(s.in/1200))
			b.Uint32(packet.AttrAcctOutputPackets, uint32(s.out/1200))
		}
		if k == KindStop {
			b.Uint32(packet.AttrAcctTerminateCause, 1) // User-Request
		}
		b.Uint32(packet.AttrEventTimestamp, uint32(time.Now().Unix()))
	}
	b.IPv4(packet.AttrNASIPAddress, cfg.NASIP)
	if cfg.NASIdentifier != "" {
		b.String(packet.AttrNASIdentifier, cfg.NASIdentifier)
	}
	b.Uint32(packet.AttrNASPort, s.nasPort)
	b.Uint32(packet.AttrNASPortType, 15) // Ethernet
	b.Uint32(packet.AttrServiceType, 2)  // Framed-User
	b.Uint32(packet.AttrFramedProtocol, 1)
	var mac [17]byte
	seq := uint32(s.seq)
	copy(mac[:], "02-00-00-00-00-00")
	const hexd = "0123456789ABCDEF"
	for i, shift := range [4]uint{24, 16, 8, 0} {
		v := byte(seq >> shift)
		mac[6+3*i] = hexd[v>>4]
		mac[7+3*i] = hexd[v&15]
	}
	b.Bytes(packet.AttrCallingStationID, mac[:])
	return b.Finish(cfg.Secret)
}
