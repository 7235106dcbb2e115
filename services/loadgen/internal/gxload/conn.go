package gxload

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Diameter command codes and the Gx application (RFC 6733, TS 29.212).
const (
	cmdCER = 257
	cmdRAR = 258
	cmdCCR = 272
	cmdDWR = 280
	cmdDPR = 282

	GxApplicationID = 16777238
	Vendor3GPP      = 10415

	resultSuccess         = 2001
	resultUnableToDeliver = 3002
	resultTooBusy         = 3004
)

var errClosed = errors.New("connection closed")

// peer is one PCEF connection to a policy server: requests are pipelined on it and their
// answers matched by Hop-by-Hop Identifier; the server's own requests (RAR, DWR, DPR) are
// answered here, as a PCEF does.
type peer struct {
	nc       net.Conn
	identity Identity
	wmu      sync.Mutex
	bw       *bufio.Writer
	mu       sync.Mutex
	pending  map[uint32]chan *diam.Message
	hbh      atomic.Uint32
	done     chan struct{} // closed when the connection is gone
	onRAR    func()
	// realm is the server's Origin-Realm (its CEA): the CCRs' Destination-Realm unless
	// --destination-realm says otherwise (RFC 4006 §3.1; a realm not the server's is 3003).
	realm string
}

// Identity is what the generator says about itself in CER and every request.
type Identity struct {
	OriginHost, OriginRealm, DestinationRealm string
	HostIP                                    net.IP
}

// dial connects to addr and exchanges CER/CEA advertising Gx.
func dial(addr string, id Identity, timeout time.Duration, onRAR func()) (*peer, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	p := &peer{nc: nc, identity: id, bw: bufio.NewWriterSize(nc, 64<<10), pending: map[uint32]chan *diam.Message{},
		done: make(chan struct{}), onRAR: onRAR}
	p.hbh.Store(uint32(time.Now().UnixNano()))
	go p.read()
	cer := diam.NewRequest(cmdCER, 0, dict.Default)
	cer.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(id.OriginHost))
	cer.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(id.OriginRealm))
	cer.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(id.HostIP))
	cer.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(0))
	cer.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String("aaa-loadgen"))
	cer.NewAVP(avp.SupportedVendorID, avp.Mbit, 0, datatype.Unsigned32(Vendor3GPP))
	cer.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(GxApplicationID))
	cea, err := p.do(cer, timeout)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("CER to %s: %w", addr, err)
	}
	if code := resultCode(cea); code != resultSuccess {
		p.close()
		return nil, fmt.Errorf("CER to %s: CEA Result-Code %d", addr, code)
	}
	if a, err := cea.FindAVP(avp.OriginRealm, 0); err == nil && a != nil {
		if v, ok := a.Data.(datatype.DiameterIdentity); ok {
			p.realm = string(v)
		}
	}
	return p, nil
}

// do sends a request and waits for its answer (bounded by timeout).
func (p *peer) do(m *diam.Message, timeout time.Duration) (*diam.Message, error) {
	id := p.hbh.Add(1)
	m.Header.HopByHopID = id
	ch := make(chan *diam.Message, 1)
	if p.isClosed() {
		return nil, errClosed
	}
	p.mu.Lock()
	p.pending[id] = ch
	p.mu.Unlock()
	if err := p.write(m); err != nil {
		p.forget(id)
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-p.done:
		return nil, errClosed
	case <-t.C:
		p.forget(id)
		return nil, errTimeout
	}
}

var errTimeout = errors.New("timeout")

func (p *peer) forget(id uint32) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// write sends m whole: writers share the connection, so one message is one locked write.
func (p *peer) write(m *diam.Message) error {
	p.wmu.Lock()
	_, err := m.WriteTo(p.bw)
	if err == nil {
		err = p.bw.Flush()
	}
	p.wmu.Unlock()
	return err
}

func (p *peer) read() {
	defer close(p.done)
	br := bufio.NewReaderSize(p.nc, 64<<10)
	for {
		m, err := diam.ReadMessage(br, dict.Default)
		if err != nil && m == nil {
			return
		}
		if m.Header.CommandFlags&diam.RequestFlag != 0 {
			p.answerServer(m)
			continue
		}
		p.mu.Lock()
		ch := p.pending[m.Header.HopByHopID]
		delete(p.pending, m.Header.HopByHopID)
		p.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// answerServer answers what a policy server asks of a PCEF: RAR (2001: the rules are taken),
// DWR, DPR (then the connection ends); anything else 3001 DIAMETER_COMMAND_UNSUPPORTED.
func (p *peer) answerServer(m *diam.Message) {
	code := uint32(resultSuccess)
	switch m.Header.CommandCode {
	case cmdRAR:
		if p.onRAR != nil {
			p.onRAR()
		}
	case cmdDWR, cmdDPR:
	default:
		code = 3001
	}
	a := m.Answer(code)
	if sid, err := m.FindAVP(avp.SessionID, 0); err == nil { // an RAA names its session
		a.NewAVP(avp.SessionID, avp.Mbit, 0, sid.Data)
	}
	a.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(p.identity.OriginHost))
	a.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(p.identity.OriginRealm))
	_ = p.write(a)
	if m.Header.CommandCode == cmdDPR {
		_ = p.nc.Close()
	}
}

// disconnect ends the connection as a PCEF does on a planned stop: DPR with Disconnect-Cause
// DO_NOT_WANT_TO_TALK_TO_YOU (2), not REBOOTING, so the server does not expect it back.
func (p *peer) disconnect(timeout time.Duration) {
	if p.isClosed() {
		return
	}
	dpr := diam.NewRequest(cmdDPR, 0, dict.Default)
	dpr.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(p.identity.OriginHost))
	dpr.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(p.identity.OriginRealm))
	dpr.NewAVP(avp.DisconnectCause, avp.Mbit, 0, datatype.Enumerated(2))
	_, _ = p.do(dpr, timeout)
	p.close()
}

func (p *peer) isClosed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *peer) close() {
	_ = p.nc.Close()
	<-p.done
}

// resultCode is an answer's Result-Code, or its Experimental-Result-Code; 0 when it has none.
func resultCode(m *diam.Message) uint32 {
	if rc, err := m.FindAVP(avp.ResultCode, 0); err == nil {
		if v, ok := rc.Data.(datatype.Unsigned32); ok {
			return uint32(v)
		}
	}
	if rc, err := m.FindAVP(avp.ExperimentalResultCode, 0); err == nil {
		if v, ok := rc.Data.(datatype.Unsigned32); ok {
			return uint32(v)
		}
	}
	return 0
}
