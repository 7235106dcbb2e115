package mschapv2

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// RFC 2759 §9.2 ("User", "clientPass") and RFC 3079 §3.5.3 (the 128-bit send key), for a
// subscriber with the clear-text password and one with its NT hash only.
func TestVerifyRFCVectors(t *testing.T) {
	challenge := unhex("5B5D7C7D7B3F2F3E3C2C602132262628")
	peer := unhex("21402324255E262A28295F2B3A337C7E")
	nt := unhex("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF")
	for _, sub := range []*subscriber.Subscriber{
		{Username: "User", Password: "clientPass"},
		{Username: "User", NTPassword: "44EBBA8D5312B8D611474411F56989AE"},
	} {
		res, ok := Verify(NTHash(sub), challenge, peer, nt, `DOMAIN\User`)
		if !ok || res.AuthenticatorResponse != "S=407A5589115FD0D6209F510FE9C04566932CDA56" {
			t.Fatalf("%+v: %v %q", sub, ok, res.AuthenticatorResponse)
		}
		if !bytes.Equal(res.SendKey, unhex("8B7CDC149B993A1BA118CB153F56DCCB")) || len(res.RecvKey) != 16 {
			t.Fatalf("keys %X %X", res.SendKey, res.RecvKey)
		}
		if _, ok := Verify(NTHash(sub), challenge, peer, make([]byte, 24), "User"); ok {
			t.Fatal("a zero NT-Response verified")
		}
		if !CheckPassword([]byte("clientPass"), sub) || CheckPassword([]byte("clientpass"), sub) {
			t.Fatalf("CheckPassword %+v", sub)
		}
	}
	if NTHash(&subscriber.Subscriber{NTPassword: "not hex"}) != nil || CheckPassword([]byte("x"), &subscriber.Subscriber{}) {
		t.Fatal("a subscriber without a password matched")
	}
}
