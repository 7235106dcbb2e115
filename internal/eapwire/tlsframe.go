package eapwire

import "encoding/binary"

// The TLS-based methods' framing (RFC 5216 §3.1, shared by PEAP and TTLS): a Flags octet
// (Length included, More fragments, Start; PEAP and TTLS put their version in the low bits,
// 0 here), the TLS message's total length on its first fragment, then TLS records. Every
// fragment is acknowledged by an empty message of the other side.
const (
	FlagLength = 0x80
	FlagMore   = 0x40
	FlagStart  = 0x20
	// MaxFragment is the TLS data in one message: FreeRADIUS's fragment_size (1024) less the
	// headers, so a message fits any NAS's and link's MTU.
	MaxFragment = 1014
)

// Fragment is the type-data of the next message carrying out (the rest of a TLS message):
// flags, the total length on the first of several fragments, at most MaxFragment octets;
// and what is left for the following ones.
func Fragment(out []byte, first bool) (data, rest []byte) {
	n := min(len(out), MaxFragment)
	b := []byte{0}
	if n < len(out) {
		b[0] |= FlagMore
		if first {
			b[0] |= FlagLength
			b = binary.BigEndian.AppendUint32(b, uint32(len(out)))
		}
	}
	return append(b, out[:n]...), out[n:]
}
