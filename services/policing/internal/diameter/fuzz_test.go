package diameter

import (
	"bytes"
	"net"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
)

// FuzzDecode feeds arbitrary bytes to the decode path a peer's message takes (our framing,
// go-diameter's decoder, then what the base protocol reads from it): nothing may panic.
func FuzzDecode(f *testing.F) {
	for _, m := range []*diam.Message{cer("pcef.test", GxApplicationID), request(cmdDWR, 0, "p"), request(272, GxApplicationID, "p")} {
		b, _ := m.Serialize()
		f.Add(b)
	}
	s := &Server{opt: Options{Apps: map[uint32]Handler{GxApplicationID: nil}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		frame, err := readFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		m, code, _ := decode(frame)
		if code != 0 {
			return
		}
		host, realm := identity(m)
		_ = allowed([]Peer{{OriginHost: host}}, host, realm, net.IPv4(127, 0, 0, 1))
		_ = s.sharesApp(m)
		_ = commandName(m)
	})
}
