package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// The USIM of 3GPP TS 35.208 test set 1 (Ki, OP and OPc).
const (
	testKi  = "465b5ce8b199b49faa5f0a2ee238a6bc"
	testOP  = "cdc202d5123e20f62b6d676ac72cb318"
	testOPc = "cd63cb71954a9f4e48a5994e37a02baf"
	realm   = "@wlan.mnc001.mcc001.3gppnetwork.org"
)

// akaNode offers EAP-AKA', EAP-AKA then EAP-SIM (a peer doing AKA or SIM answers the AKA'
// proposal with a Nak),
// the SQNs in the embedded store. Subscribers by IMSI: …01 with OPc, …02 with OP, …03
// whose card is far ahead of the file's SQN (resynchronisation), …04 without a Ki.
func akaNode(t *testing.T, dir string) *Node {
	t.Helper()
	testenv.LookPath(t, "eapol_test", "Debian eapoltest: hack/eapol.sh install")
	return edgeNode(t, dir, `
log: {level: debug}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0"}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  - {name: nas, address: 127.0.0.1, secretFile: {{dir}}/secret}
subscribers: {source: file, file: {{dir}}/subs.yaml}
session: {store: embedded}
eap:
  methods: [aka-prime, aka, sim]
  akaNetworkName: WLAN
`, `subscribers:
  - {username: "001010000000001", ki: `+testKi+`, opc: `+testOPc+`, sqn: "000000000020"}
  - {username: "001010000000002", ki: `+testKi+`, op: `+testOP+`, amf: "8000"}
  - {username: "001010000000003", ki: `+testKi+`, opc: `+testOPc+`}
  - {username: "001010000000005", ki: `+testKi+`, opc: `+testOPc+`}
  - {username: "001010000000004", password: x}
`)
}

// akaNetwork is eapol_test's network block for method (AKA or AKA'); the USIM is the test's
// (usim_test.go).
func akaNetwork(method, identity, extra string) string {
	return "key_mgmt=WPA-EAP\neap=" + method + "\nidentity=\"" + identity + realm + "\"\n" + extra
}

func TestEAPAKAAgainstEapolTest(t *testing.T) {
	dir := t.TempDir()
	n := akaNode(t, dir)
	admin := n.Addr("admin.address").String()
	resyncs := "openaaa_eap_aka_resyncs_total"
	card1 := newUSIM(t, testKi, testOPc, 1)        // behind the server (file SQN 0x20)
	card3 := newUSIM(t, testKi, testOPc, 0x100000) // ahead of it: AUTS
	card5 := newUSIM(t, testKi, testOPc, 0x200000)
	cases := []struct {
		name, network, method string
		card                  *usim
		resync                bool
	}{
		{"aka", akaNetwork("AKA", "0001010000000001", ""), "aka", card1, false},
		{"aka-prime", akaNetwork("AKA'", "6001010000000001", ""), "aka-prime", card1, false},
		{"aka, OPc from OP", akaNetwork("AKA", "0001010000000002", ""), "aka", newUSIM(t, testKi, testOPc, 0), false},
		// The peer gives an anonymous identity; the server asks the permanent one.
		{"aka, permanent identity requested", akaNetwork("AKA", "0001010000000001", "anonymous_identity=\"anonymous"+realm+"\""), "aka", card1, false},
		{"aka-prime, permanent identity requested", akaNetwork("AKA'", "6001010000000001", "anonymous_identity=\"anonymous"+realm+"\""), "aka-prime", card1, false},
		// The card is ahead of the server: AUTS, and the store's SQN moves past the card's.
		{"aka resynchronisation", akaNetwork("AKA", "0001010000000003", ""), "aka", card3, true},
		{"aka after the resynchronisation", akaNetwork("AKA", "0001010000000003", ""), "aka", card3, false},
		{"aka-prime resynchronisation", akaNetwork("AKA'", "6001010000000005", ""), "aka-prime", card5, true},
		// A USIM through EAP-SIM: GSM triplets by c2/c3.
		{"sim", akaNetwork("SIM", "1001010000000001", ""), "sim", card1, false},
		{"sim, OPc from OP", akaNetwork("SIM", "1001010000000002", ""), "sim", card1, false},
		{"sim, permanent identity requested", akaNetwork("SIM", "1001010000000001", "anonymous_identity=\"anonymous"+realm+"\""), "sim", card1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			series := `openaaa_eap_successes_total{method="` + c.method + `"}`
			before, beforeResync := testenv.Metric(t, admin, series), testenv.Metric(t, admin, resyncs)
			out, ok := eapolTestUSIM(t, n, dir, c.network, c.card)
			if os.Getenv("EAPDUMP") != "" {
				t.Log(out)
			}
			if !ok || !strings.Contains(out, "MPPE keys OK: 1  mismatch: 0") {
				t.Fatalf("eapol_test did not succeed with the MSK as MPPE keys:\n%s", out)
			}
			if got := testenv.Metric(t, admin, series); got != before+1 {
				t.Fatalf("%s = %v, want %v", series, got, before+1)
			}
			want := beforeResync
			if c.resync {
				want++
			}
			if got := testenv.Metric(t, admin, resyncs); got != want {
				t.Fatalf("%s = %v, want %v:\n%s", resyncs, got, want, out)
			}
		})
	}
}

func TestEAPAKARefusalsAgainstEapolTest(t *testing.T) {
	dir := t.TempDir()
	n := akaNode(t, dir)
	other := newUSIM(t, "00112233445566778899aabbccddeeff", testOPc, 0)
	card := newUSIM(t, testKi, testOPc, 0)
	cases := []struct {
		name, network, reason string
		card                  *usim
	}{
		// Another Ki: the card finds AUTN's MAC wrong and rejects the network.
		{"aka wrong Ki", akaNetwork("AKA", "0001010000000001", ""), "authentication_rejected", other},
		{"aka-prime wrong Ki", akaNetwork("AKA'", "6001010000000001", ""), "authentication_rejected", other},
		{"aka unknown IMSI", akaNetwork("AKA", "0001010000000099", ""), "unknown_user", card},
		{"aka subscriber without Ki", akaNetwork("AKA", "0001010000000004", ""), "no_aka_credentials", card},
		// EAP-SIM: with another Ki the peer finds the Challenge's AT_MAC wrong.
		{"sim wrong Ki", akaNetwork("SIM", "1001010000000001", ""), "client_error", other},
		{"sim unknown IMSI", akaNetwork("SIM", "1001010000000099", ""), "unknown_user", card},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			series := `openaaa_eap_rejects_total{reason="` + c.reason + `"}`
			before := testenv.Metric(t, n.Addr("admin.address").String(), series)
			out, ok := eapolTestUSIM(t, n, dir, c.network, c.card)
			if ok || !strings.Contains(out, "EAP: Received EAP-Failure") {
				t.Fatalf("eapol_test did not fail with EAP-Failure:\n%s", out)
			}
			if got := testenv.Metric(t, n.Addr("admin.address").String(), series); got != before+1 {
				t.Fatalf("%s = %v, want %v:\n%s", series, got, before+1, out)
			}
		})
	}
}

// AKA needs a store that keeps sequence numbers: a configuration with session.store none is
// refused when loaded (check-config, start), naming the line of eap.methods and the store.
func TestEAPAKANeedsSQNStore(t *testing.T) {
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(radclientSecret+"\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte("subscribers: []\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "policing.yaml"), []byte(strings.ReplaceAll(`
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0"}
clients: [{name: nas, address: 127.0.0.1, secretFile: {{dir}}/secret}]
subscribers: {source: file, file: {{dir}}/subs.yaml}
session: {store: none}
eap: {methods: [aka]}
`, "{{dir}}", dir)), 0o600))
	_, err := config.Load(filepath.Join(dir, "policing.yaml"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "policing.yaml:6:") || !strings.Contains(err.Error(), "eap.methods: ") ||
		!strings.Contains(err.Error(), `"none"`) {
		t.Fatalf("error %v does not name eap.methods, its line and the store", err)
	}
}
