package eap

import (
	"bytes"
	"context"
	"crypto/tls"
	"testing"

	"github.com/openaaa/openaaa/internal/eaptls"
)

// The MSK of each TLS method and TLS version is what a peer exports with the label and
// context its RFC names — written out here, not taken from keys.go: RFC 5216 §2.3 (EAP-TLS,
// and PEAPv0 with the same label) and RFC 5281 §8 (TTLS) for TLS 1.2; RFC 9190 §2.3 (EAP-TLS)
// and RFC 9427 §2 (PEAP, TTLS) for TLS 1.3, where the context is the method's Type-Code, so
// one method's MSK is not another's.
func TestTLSMethodMSK(t *testing.T) {
	srvTLS, cliTLS := peerPKI(t)
	s := tlsServer(t, srvTLS, TypeTLS)
	cases := []struct {
		name    string
		typ     byte
		version uint16
		label   string
		context []byte
	}{
		{"tls-1.2", 13, tls.VersionTLS12, "client EAP encryption", nil},
		{"peap-1.2", 25, tls.VersionTLS12, "client EAP encryption", nil},
		{"ttls-1.2", 21, tls.VersionTLS12, "ttls keying material", nil},
		{"tls-1.3", 13, tls.VersionTLS13, "EXPORTER_EAP_TLS_Key_Material", []byte{0x0D}},
		{"peap-1.3", 25, tls.VersionTLS13, "EXPORTER_EAP_TLS_Key_Material", []byte{0x19}},
		{"ttls-1.3", 21, tls.VersionTLS13, "EXPORTER_EAP_TLS_Key_Material", []byte{0x15}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTLSMethod(s, c.typ, nil)
			defer m.close()
			if _, err := m.start(context.Background()); err != nil {
				t.Fatal(err)
			}
			cfg := cliTLS.Clone()
			cfg.MaxVersion = c.version
			peer := eaptls.NewClient(cfg)
			defer peer.Close()
			handshake(t, m.eng, peer)
			if v := m.eng.State().Version; v != c.version {
				t.Fatalf("negotiated %s", tls.VersionName(v))
			}
			m.v13 = c.version == tls.VersionTLS13
			msk, r := m.msk()
			want, err := peer.Export(c.label, c.context, 128)
			if r != "" || err != nil {
				t.Fatal(r, err)
			}
			if !bytes.Equal(msk, want[:64]) {
				t.Fatalf("MSK %x\nwant %x", msk, want[:64])
			}
		})
	}
}
