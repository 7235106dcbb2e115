package gxload

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// fakePCRF is a narrow stand-in for a policy server, for the generator's own logic (failover,
// RAR answers): it answers CER, and CCRs with 2001 unless mute. The generator's test against
// the real policing is in test/e2e (gx_test.go).
type fakePCRF struct {
	ln         net.Listener
	mute       bool
	sendRAR    bool
	ccrs       atomic.Int64
	retransmit atomic.Int64 // CCRs with the T flag
	raas       atomic.Int64 // RAAs with 2001 and the Session-Id
	mu         sync.Mutex
	e2e        []uint32 // End-to-End-Ids of the CCRs without the T flag
}

func newFake(t *testing.T, mute, sendRAR bool) *fakePCRF {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePCRF{ln: ln, mute: mute, sendRAR: sendRAR}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); f.serve(c) }()
		}
	}()
	return f
}

func (f *fakePCRF) addr() string { return f.ln.Addr().String() }

func (f *fakePCRF) serve(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	write := func(m *diam.Message) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = m.WriteTo(c)
	}
	for {
		m, err := diam.ReadMessage(c, dict.Default)
		if err != nil {
			return
		}
		if m.Header.CommandFlags&diam.RequestFlag == 0 {
			if m.Header.CommandCode == cmdRAR && resultCode(m) == resultSuccess {
				if _, err := m.FindAVP(avp.SessionID, 0); err == nil {
					f.raas.Add(1)
				}
			}
			continue
		}
		a := m.Answer(resultSuccess)
		a.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcrf.fake"))
		a.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("fake"))
		switch m.Header.CommandCode {
		case cmdCCR:
			f.ccrs.Add(1)
			if m.Header.CommandFlags&diam.RetransmittedFlag != 0 {
				f.retransmit.Add(1)
			} else {
				f.mu.Lock()
				f.e2e = append(f.e2e, m.Header.EndToEndID)
				f.mu.Unlock()
			}
			if f.mute {
				continue
			}
			write(a)
			sid, _ := m.FindAVP(avp.SessionID, 0)
			typ, _ := m.FindAVP(avp.CCRequestType, 0)
			if f.sendRAR && sid != nil && typ != nil && typ.Data.(datatype.Enumerated) == 1 {
				rar := diam.NewRequest(cmdRAR, GxApplicationID, dict.Default)
				rar.NewAVP(avp.SessionID, avp.Mbit, 0, sid.Data)
				rar.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcrf.fake"))
				write(rar)
			}
		default:
			write(a)
		}
	}
}

func config(targets ...string) Config {
	return Config{Targets: targets, Identity: Identity{OriginHost: "pgw.test", OriginRealm: "test"},
		Subscribers: 10, IMSIBase: 1, FramedIPBase: netip.MustParseAddr("10.0.0.1"), MonitoringKey: "mk1",
		UsedOctets: 100, Updates: 2, Sticky: true, Concurrency: 2, Duration: 20 * time.Second, MaxSessions: 4,
		Timeout: 300 * time.Millisecond}
}

// A PCRF that stops answering: its sessions' requests go to the next peer with the T flag,
// and every session completes.
func TestFailoverToTheNextPeer(t *testing.T) {
	mute, ok := newFake(t, true, false), newFake(t, false, false)
	cfg := config(mute.addr(), ok.addr())
	cfg.Failover = true
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionsCompleted != 4 || res.Failovers == 0 || ok.retransmit.Load() == 0 {
		t.Fatalf("completed %d of 4, %d failovers, %d retransmissions seen by the second peer",
			res.SessionsCompleted, res.Failovers, ok.retransmit.Load())
	}
	if tot := res.Total(); tot.Timeouts != 0 || tot.Answered != 4*4 {
		t.Fatalf("answered %d (want 16), timeouts %d", tot.Answered, tot.Timeouts)
	}
}

// Every CCR carries its own End-to-End-Id, from a counter (RFC 6733 §3: unique for 4 minutes):
// random ones repeat every few hundred thousand requests, and the server then answers the
// second from its duplicate cache.
func TestEndToEndIdsFromACounter(t *testing.T) {
	f := newFake(t, false, false)
	cfg := config(f.addr())
	cfg.MaxSessions = 50
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[uint32]bool{}
	lo, hi := f.e2e[0], f.e2e[0]
	for _, id := range f.e2e {
		if seen[id] {
			t.Fatalf("End-to-End-Id %#x used twice", id)
		}
		seen[id] = true
		lo, hi = min(lo, id), max(hi, id)
	}
	if n := uint32(len(f.e2e)); n != 200 || hi-lo != n-1 {
		t.Fatalf("%d CCRs with End-to-End-Ids %#x..%#x; want 200 consecutive ones", n, lo, hi)
	}
}

// Without failover the sessions on the mute peer are given up after their CCR-I's timeout.
func TestNoFailover(t *testing.T) {
	mute, ok := newFake(t, true, false), newFake(t, false, false)
	res, err := Run(context.Background(), config(mute.addr(), ok.addr()))
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Total()
	if res.SessionsCompleted != 2 || tot.Timeouts != 2 || res.Failovers != 0 || ok.retransmit.Load() != 0 {
		t.Fatalf("completed %d (want 2), timeouts %d (want 2), failovers %d", res.SessionsCompleted, tot.Timeouts, res.Failovers)
	}
}

// The server's RAR is answered 2001 with its Session-Id, as a PCEF does.
func TestAnswersRAR(t *testing.T) {
	f := newFake(t, false, true)
	cfg := config(f.addr())
	cfg.MaxSessions, cfg.Updates = 1, 0
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.raas.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// The RAR follows the CCA-I on the connection: it is answered before the CCA-T arrives.
	if res.RARs != 1 || f.raas.Load() != 1 {
		t.Fatalf("generator answered %d RARs, the server got %d RAAs with 2001; want 1", res.RARs, f.raas.Load())
	}
}

func TestConfigErrors(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"no target":   func(c *Config) { c.Targets = nil },
		"subscribers": func(c *Config) { c.Subscribers = 0 },
		"ipv6 base":   func(c *Config) { c.FramedIPBase = netip.MustParseAddr("::1") },
		"duration":    func(c *Config) { c.Duration = 2 * time.Hour },
	} {
		cfg := config("127.0.0.1:1")
		mut(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The report's figures: milliseconds, rates over the run, codes by name.
func TestReport(t *testing.T) {
	var res Result
	res.Elapsed = 2 * time.Second
	res.ByCommand[Initial] = Stats{Sent: 4, Answered: 4, Codes: map[uint32]uint64{2001: 3, 5030: 1}}
	for range 4 {
		res.ByCommand[Initial].Latency.Record(3 * time.Millisecond)
	}
	res.ByTarget = []Stats{res.ByCommand[Initial]}
	r := NewReport(&Config{Targets: []string{"a"}}, &res, 0.001, 0)
	if r.TPS != 2 || r.Total.AvgMs != 3 || math.Abs(r.Total.P99Ms-3) > 0.03 || // the histogram is within 0.8 %
		r.Total.Codes["5030"] != 1 {
		t.Fatalf("TPS %v avg %v p99 %v codes %v", r.TPS, r.Total.AvgMs, r.Total.P99Ms, r.Total.Codes)
	}
	if r.ServerCPUMicrosPerTx == nil || *r.ServerCPUMicrosPerTx != 250 {
		t.Fatalf("server CPU per request %v, want 250 µs (1 ms over 4)", r.ServerCPUMicrosPerTx)
	}
}
