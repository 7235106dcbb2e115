package diameter

import (
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// disconnectRebooting is Disconnect-Cause REBOOTING (RFC 6733 §5.4.3: "a scheduled reboot
// is imminent"; the peer MAY reconnect): a stopping node comes back, or another answers at
// the same address. BUSY (1) and DO_NOT_WANT_TO_TALK_TO_YOU (2) tell the peer not to
// reconnect at all.
const disconnectRebooting = 0

// disconnect sends the peer of c (accepted, its state marked leaving) a DPR, then waits in
// the background for its DPA — at most Options.DPRTimeout, less when the peer closes or
// the shutdown's budget is spent — and stops reading c: its reader returns once the requests
// that arrived meanwhile are answered, and closes it (RFC 6733 §5.4: the receiver of the DPA
// disconnects). The caller counted the wait in s.wg.
func (s *Server) disconnect(c *peerConn, peer PeerInfo) {
	dpr := diam.NewRequest(cmdDPR, 0, dict.Default)
	host, realm := s.id.avps()
	dpr.AddAVP(host)
	dpr.AddAVP(realm)
	dpr.NewAVP(avp.DisconnectCause, avp.Mbit, 0, datatype.Enumerated(disconnectRebooting))
	// Written before Shutdown goes on: a Close that closes the connection at once still
	// sends the DPR first (peerConn.Close flushes what is queued).
	answer, done, err := s.send(c, dpr)
	go func() {
		defer s.wg.Done()
		// The reading stops whatever the outcome; the connection stays open for the
		// answers in flight.
		defer func() { _ = c.SetReadDeadline(time.Now()) }()
		log := s.opt.Log.With("originHost", peer.OriginHost, "originRealm", peer.OriginRealm, "peer", c.RemoteAddr().String())
		if err != nil {
			log.Info("diameter: DPR not sent, closing the connection", "err", err.Error())
			return
		}
		defer done()
		timer := time.NewTimer(s.opt.DPRTimeout)
		defer timer.Stop()
		select {
		case a := <-answer:
			code := uint32(0)
			if rc, _ := a.FindAVP(avp.ResultCode, 0); rc != nil {
				if v, ok := rc.Data.(datatype.Unsigned32); ok {
					code = uint32(v)
				}
			}
			log.Info("diameter: peer disconnected: DPR answered", "resultCode", code)
		case <-timer.C:
			log.Info("diameter: peer disconnected: no DPA to the DPR", "waited", s.opt.DPRTimeout.String())
		case <-c.ctx.Done(): // the peer closed, or the shutdown's budget is spent
			log.Info("diameter: peer disconnected: DPR sent, the connection ended before its DPA")
		}
	}()
}
