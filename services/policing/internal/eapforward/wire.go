package eapforward

import (
	"errors"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/vendors/microsoft"

	"github.com/openaaa/openaaa/internal/radiusx"
)

// TypeForwardedClient is the attribute a forwarded Access-Request carries the NAS's client
// name in (its name in the clients list), so that the owner's policy and auth log see the
// real NAS. Type 224 is in RFC 3575's "Implementation Specific" range (224-240): it means
// something only between OpenAAA nodes, which strip it from anything a NAS sends. Its
// presence also marks the request as forwarded: it is never forwarded again.
const TypeForwardedClient = 224

// Types the rewrite drops from the NAS's request: Message-Authenticator and Proxy-State are
// the hop's own; a NAS's TypeForwardedClient is a forgery; User-Password, CHAP-Password and
// the like are hidden with the NAS's secret and have no business beside EAP-Message (RFC
// 3579 §3.3), so they are not carried rather than carried unreadable.
func dropped(t radius.Type) bool {
	switch t {
	case radiusx.TypeMessageAuthenticator, radiusx.TypeProxyState, TypeForwardedClient,
		rfc2865.UserPassword_Type, rfc2865.CHAPPassword_Type:
		return true
	}
	return false
}

// Request encodes the Access-Request forwarded to the owner: the NAS's attributes (less
// the dropped ones), the NAS's client name, our Proxy-State, a new Identifier and request
// authenticator, and a Message-Authenticator under the inter-node secret.
func Request(nas *radius.Packet, client string, secret []byte, id byte, auth [16]byte, proxyState []byte) ([]byte, error) {
	if client == "" || len(client) > 253 {
		return nil, errors.New("eapforward: the client name must be 1 to 253 octets")
	}
	p := &radius.Packet{Code: radius.CodeAccessRequest, Identifier: id, Authenticator: auth, Secret: secret}
	for _, a := range nas.Attributes {
		if !dropped(a.Type) {
			p.Attributes = append(p.Attributes, a)
		}
	}
	p.Add(TypeForwardedClient, radius.Attribute(client))
	p.Add(radiusx.TypeProxyState, radius.Attribute(proxyState))
	wire, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	wire, off := radiusx.AppendMessageAuthenticator(wire)
	if len(wire) > radius.MaxPacketLength {
		return nil, errors.New("eapforward: the forwarded request is longer than 4096 octets")
	}
	radiusx.SignRequest(wire, off, secret)
	return wire, nil
}

// ClientName returns the NAS's client name a forwarded request carries.
func ClientName(p *radius.Packet) (string, bool) {
	a, ok := p.Lookup(TypeForwardedClient)
	if !ok || len(a) == 0 {
		return "", false
	}
	return string(a), true
}

// Reply turns the owner's verified reply into the attributes of the answer to the NAS: the
// owner's attributes in order less Message-Authenticator and Proxy-State (the writer adds
// the NAS's own), MS-MPPE-Send-Key and -Recv-Key decrypted with the inter-node secret and
// the forwarded request's authenticator, then encrypted again with the NAS's secret and
// request authenticator (RFC 2548 §2.4.2-3, a new salt).
func Reply(owner *radius.Packet, fwdAuth [16]byte, nas *radius.Packet) (radius.Attributes, error) {
	fwd := &radius.Packet{Authenticator: fwdAuth}
	send, errS := microsoft.MSMPPESendKey_Lookup(owner, fwd)
	recv, errR := microsoft.MSMPPERecvKey_Lookup(owner, fwd)
	hasSend, hasRecv := !errors.Is(errS, radius.ErrNoAttribute), !errors.Is(errR, radius.ErrNoAttribute)
	if (hasSend && errS != nil) || (hasRecv && errR != nil) {
		return nil, errors.New("eapforward: the owner's MPPE keys do not decrypt")
	}
	out := &radius.Packet{Secret: nas.Secret, Authenticator: nas.Authenticator}
	for _, a := range owner.Attributes {
		if a.Type == radiusx.TypeMessageAuthenticator || a.Type == radiusx.TypeProxyState || mppeKey(a) {
			continue
		}
		out.Attributes = append(out.Attributes, a)
	}
	if hasRecv {
		if err := microsoft.MSMPPERecvKey_Add(out, recv); err != nil {
			return nil, err
		}
	}
	if hasSend {
		if err := microsoft.MSMPPESendKey_Add(out, send); err != nil {
			return nil, err
		}
	}
	return out.Attributes, nil
}

// Microsoft's vendor id and MS-MPPE-Send-Key, -Recv-Key (RFC 2548 §2.4.2-3).
const (
	vendorMicrosoft = 311
	msMPPESendKey   = 16
	msMPPERecvKey   = 17
)

// mppeKey tells a Vendor-Specific attribute holding an MPPE key (one per attribute, as
// layeh.com/radius and every server we know write them).
func mppeKey(a *radius.AVP) bool {
	if a.Type != rfc2865.VendorSpecific_Type {
		return false
	}
	v, vsa, err := radius.VendorSpecific(a.Attribute)
	return err == nil && v == vendorMicrosoft && len(vsa) > 0 && (vsa[0] == msMPPESendKey || vsa[0] == msMPPERecvKey)
}
