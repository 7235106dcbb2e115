package milenage

import (
	"encoding/hex"
	"testing"
)

func h(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// 3GPP TS 35.208 §4.3, test sets 1–6: K, RAND, SQN, AMF, OP, OPc, f1, f1*, f2, f3, f4, f5, f5*.
var testSets = [][13]string{
	{"465b5ce8b199b49faa5f0a2ee238a6bc", "23553cbe9637a89d218ae64dae47bf35", "ff9bb4d0b607", "b9b9",
		"cdc202d5123e20f62b6d676ac72cb318", "cd63cb71954a9f4e48a5994e37a02baf", "4a9ffac354dfafb3", "01cfaf9ec4e871e9",
		"a54211d5e3ba50bf", "b40ba9a3c58b2a05bbf0d987b21bf8cb", "f769bcd751044604127672711c6d3441", "aa689c648370", "451e8beca43b"},
	{"0396eb317b6d1c36f19c1c84cd6ffd16", "c00d603103dcee52c4478119494202e8", "fd8eef40df7d", "af17",
		"ff53bade17df5d4e793073ce9d7579fa", "53c15671c60a4b731c55b4a441c0bde2", "5df5b31807e258b0", "a8c016e51ef4a343",
		"d3a628ed988620f0", "58c433ff7a7082acd424220f2b67c556", "21a8c1f929702adb3e738488b9f5c5da", "c47783995f72", "30f1197061c1"},
	{"fec86ba6eb707ed08905757b1bb44b8f", "9f7c8d021accf4db213ccff0c7f71a6a", "9d0277595ffc", "725c",
		"dbc59adcb6f9a0ef735477b7fadf8374", "1006020f0a478bf6b699f15c062e42b3", "9cabc3e99baf7281", "95814ba2b3044324",
		"8011c48c0c214ed2", "5dbdbb2954e8f3cde665b046179a5098", "59a92d3b476a0443487055cf88b2307b", "33484dc2136b", "deacdd848cc6"},
	{"9e5944aea94b81165c82fbf9f32db751", "ce83dbc54ac0274a157c17f80d017bd6", "0b604a81eca8", "9e09",
		"223014c5806694c007ca1eeef57f004f", "a64a507ae1a2a98bb88eb4210135dc87", "74a58220cba84c49", "ac2cc74a96871837",
		"f365cd683cd92e96", "e203edb3971574f5a94b0d61b816345d", "0c4524adeac041c4dd830d20854fc46b", "f0b9c08ad02e", "6085a86c6f63"},
	{"4ab1deb05ca6ceb051fc98e77d026a84", "74b0cd6031a1c8339b2b6ce2b8c4a186", "e880a1b580b6", "9f07",
		"2d16c5cd1fdf6b22383584e3bef2a8d8", "dcf07cbd51855290b92a07a9891e523e", "49e785dd12626ef2", "9e85790336bb3fa2",
		"5860fc1bce351e7e", "7657766b373d1c2138f307e3de9242f9", "1c42e960d89b8fa99f2744e0708ccb53", "31e11a609118", "fe2555e54aa9"},
	{"6c38a116ac280c454f59332ee35c8c4f", "ee6466bc96202c5a557abbeff8babf63", "414b98222181", "4464",
		"1ba00a1a7c6700ac8c3ff3e96ad08725", "3803ef5363b947c6aaa225e58fae3934", "078adfb488241a57", "80246b8d0186bcf1",
		"16c8233f05a0ac28", "3f8c7587fe8e4b233af676aede30ba3b", "a7466cc1e6b2a1337d49d3b66e95d7b4", "45b0f69ab06c", "1f53cd2b1113"},
}

func TestTestSets(t *testing.T) {
	for i, s := range testSets {
		k, rand, sqn, amf, op := h(t, s[0]), h(t, s[1]), h(t, s[2]), h(t, s[3]), h(t, s[4])
		opc, err := OPc(k, op)
		if err != nil || hex.EncodeToString(opc) != s[5] {
			t.Errorf("set %d: OPc = %x, %v; want %s", i+1, opc, err, s[5])
		}
		c, err := New(k, opc)
		if err != nil {
			t.Fatal(err)
		}
		macA, macS := c.F1(rand, sqn, amf)
		ks := c.F2345(rand)
		for _, g := range []struct {
			name string
			got  []byte
			want string
		}{
			{"f1", macA[:], s[6]}, {"f1*", macS[:], s[7]}, {"f2", ks.RES[:], s[8]}, {"f3", ks.CK[:], s[9]},
			{"f4", ks.IK[:], s[10]}, {"f5", ks.AK[:], s[11]}, {"f5*", ks.AKStar[:], s[12]},
		} {
			if hex.EncodeToString(g.got) != g.want {
				t.Errorf("set %d: %s = %x, want %s", i+1, g.name, g.got, g.want)
			}
		}
		// The vector: AUTN = SQN ⊕ AK ‖ AMF ‖ MAC-A.
		var r [16]byte
		copy(r[:], rand)
		v := c.Generate(r, SQN(sqn), [2]byte{amf[0], amf[1]})
		for j := range 6 {
			if v.AUTN[j] != sqn[j]^ks.AK[j] {
				t.Fatalf("set %d: AUTN %x", i+1, v.AUTN)
			}
		}
		if [2]byte(v.AUTN[6:8]) != [2]byte(amf) || [8]byte(v.AUTN[8:]) != macA || v.XRES != ks.RES {
			t.Errorf("set %d: vector %x", i+1, v.AUTN)
		}
	}
}

// 3GPP TS 55.205 test sets 1–6 (their K, RAND and OPc are TS 35.208's sets 1, 3, 4, 5, 6, 7):
// SRES by c2, Kc by c3 from the Milenage outputs.
func TestGSMConversion(t *testing.T) {
	for i, s := range [][5]string{
		{"465b5ce8b199b49faa5f0a2ee238a6bc", "23553cbe9637a89d218ae64dae47bf35", "cd63cb71954a9f4e48a5994e37a02baf", "46f8416a", "eae4be823af9a08b"},
		{"fec86ba6eb707ed08905757b1bb44b8f", "9f7c8d021accf4db213ccff0c7f71a6a", "1006020f0a478bf6b699f15c062e42b3", "8c308a5e", "aa01739b8caa976d"},
		{"9e5944aea94b81165c82fbf9f32db751", "ce83dbc54ac0274a157c17f80d017bd6", "a64a507ae1a2a98bb88eb4210135dc87", "cfbce3fe", "9a8ec95f408cc507"},
		{"4ab1deb05ca6ceb051fc98e77d026a84", "74b0cd6031a1c8339b2b6ce2b8c4a186", "dcf07cbd51855290b92a07a9891e523e", "9655e265", "cdc1dc0841b81a22"},
		{"6c38a116ac280c454f59332ee35c8c4f", "ee6466bc96202c5a557abbeff8babf63", "3803ef5363b947c6aaa225e58fae3934", "13688f17", "df75bc5ea899879f"},
		{"2d609d4db0ac5bf0d2c0de267014de0d", "194aa756013896b74b4a2a3b0af4539e", "c35a0ab0bcbfc9252caff15f24efbde0", "553d00b3", "84b417ae3aeab4f3"},
	} {
		c, err := New(h(t, s[0]), h(t, s[2]))
		if err != nil {
			t.Fatal(err)
		}
		sres, kc := c.GSM(h(t, s[1]))
		if hex.EncodeToString(sres[:]) != s[3] || hex.EncodeToString(kc[:]) != s[4] {
			t.Errorf("set %d: SRES %x Kc %x, want %s %s", i+1, sres, kc, s[3], s[4])
		}
	}
}

// A card behind or ahead sends AUTS; Resync recovers its SQN, and refuses a forged token.
func TestResync(t *testing.T) {
	s := testSets[0]
	c, _ := New(h(t, s[0]), h(t, s[5]))
	rand := h(t, s[1])
	const sqnMS = 0x0000_1234_5678
	// The card's AUTS (TS 33.102 §6.3.3): SQNms ⊕ AK* ‖ f1*(SQNms, AMF 0).
	ks := c.F2345(rand)
	ms := PutSQN(sqnMS)
	auts := make([]byte, 14)
	for i := range 6 {
		auts[i] = ms[i] ^ ks.AKStar[i]
	}
	_, macS := c.F1(rand, ms[:], []byte{0, 0})
	copy(auts[6:], macS[:])
	got, err := c.Resync(rand, auts)
	if err != nil || got != sqnMS {
		t.Fatalf("Resync = %x, %v; want %x", got, err, sqnMS)
	}
	auts[13] ^= 1
	if _, err := c.Resync(rand, auts); err != ErrAUTS {
		t.Fatalf("a forged AUTS: %v", err)
	}
	if _, err := c.Resync(rand, auts[:13]); err != ErrAUTS {
		t.Fatalf("a short AUTS: %v", err)
	}
	if PutSQN(SQNMax-1) != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} || SQN(ms[:]) != sqnMS {
		t.Fatal("SQN encoding")
	}
	if _, err := New(make([]byte, 15), make([]byte, 16)); err == nil {
		t.Fatal("a short K was accepted")
	}
}
