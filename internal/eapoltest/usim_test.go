package eapoltest

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/milenage"
)

// TS 35.208 test set 1.
const (
	ki  = "465b5ce8b199b49faa5f0a2ee238a6bc"
	opc = "cd63cb71954a9f4e48a5994e37a02baf"
)

func TestUSIMAnswers(t *testing.T) {
	u, err := NewUSIM(ki, opc, 10)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := hex.DecodeString(ki)
	o, _ := hex.DecodeString(opc)
	network, _ := milenage.New(k, o)
	umts := func(sqn uint64) string {
		v := network.Generate([16]byte{1, 2, 3}, sqn, [2]byte{0x80, 0})
		a, err := u.Answer("UMTS-AUTH:" + hex.EncodeToString(v.RAND[:]) + ":" + hex.EncodeToString(v.AUTN[:]))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	v := network.Generate([16]byte{1, 2, 3}, 11, [2]byte{0x80, 0})
	if got := umts(11); !strings.HasPrefix(got, "UMTS-AUTH:") || !strings.HasSuffix(got, ":"+hex.EncodeToString(v.XRES[:])) {
		t.Fatalf("fresh SQN: %q, want UMTS-AUTH ending in RES %x", got, v.XRES)
	}
	if got := umts(11); !strings.HasPrefix(got, "UMTS-AUTS:") {
		t.Fatalf("the same SQN again: %q, want AUTS", got)
	}
	other, _ := NewUSIM("00112233445566778899aabbccddeeff", opc, 0)
	u = other
	if got := umts(50); got != "UMTS-FAIL" {
		t.Fatalf("another network's key: %q, want UMTS-FAIL", got)
	}
	if got, err := u.Answer("GSM-AUTH:" + strings.Repeat("00", 16) + ":" + strings.Repeat("11", 16)); err != nil || strings.Count(got, ":") != 4 {
		t.Fatalf("GSM-AUTH: %q %v, want Kc:SRES twice", got, err)
	}
	for _, bad := range []string{"UMTS-AUTH:zz:00", "GSM-AUTH:00", "SOMETHING:1:2", ""} {
		if _, err := u.Answer(bad); err == nil {
			t.Fatalf("%q answered, want an error", bad)
		}
	}
}

func TestTunnel(t *testing.T) {
	want := "key_mgmt=WPA-EAP\neap=PEAP\nidentity=\"alice\"\nanonymous_identity=\"anonymous\"\npassword=\"pw\"\nca_cert=\"{{dir}}/ca.pem\"\nphase2=\"auth=MSCHAPV2\"\n"
	if got := Tunnel("PEAP", "MSCHAPV2", "alice", "pw", "{{dir}}/ca.pem"); got != want {
		t.Fatalf("Tunnel = %q, want %q", got, want)
	}
}
