package eap

import "crypto/tls"

// The MSK of the TLS methods, from the TLS exporter (crypto/tls's ExportKeyingMaterial):
//   - TLS 1.2: PRF(master secret, label, client random ‖ server random) — RFC 5216 §2.3
//     (EAP-TLS, and PEAPv0 with the same label), RFC 5281 §8 (TTLS) — which is RFC 5705's
//     exporter without context. crypto/tls exports only after an extended master secret
//     (RFC 7627), which every current supplicant negotiates.
//   - TLS 1.3: TLS-Exporter("EXPORTER_EAP_TLS_Key_Material", Type-Code, 128) with the method's
//     own Type-Code as context — 0x0D EAP-TLS (RFC 9190 §2.3), 0x19 PEAP and 0x15 TTLS
//     (RFC 9427 §2), as wpa_supplicant 2.10 derives them. PEAP's MSK is not mixed with inner
//     keys: no crypto-binding is sent (peap.go).
//
// The MSK is the first 64 octets; the EMSK (the next 64) is not used.
const (
	labelTLS   = "client EAP encryption"
	labelTTLS  = "ttls keying material"
	labelTLS13 = "EXPORTER_EAP_TLS_Key_Material"
	keyingLen  = 128
	mskLen     = 64
)

func (m *tlsMethod) msk() ([]byte, Reason) {
	label, context := labelTLS, []byte(nil)
	switch {
	case m.v13:
		label, context = labelTLS13, []byte{m.typ}
	case m.typ == TypeTTLS:
		label = labelTTLS
	}
	k, err := m.eng.Export(label, context, keyingLen)
	if err != nil {
		m.srv.opt.Log.Warn("eap keys not derived", "method", typeName(m.typ), "version", tls.VersionName(m.eng.State().Version), "err", err)
		return nil, ReasonInternal
	}
	return k[:mskLen], ""
}
