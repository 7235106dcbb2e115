package e2e

// EAP conversations whose rounds land in different DCs (issue 18), inside TestMultiDC: the
// real supplicant (eapol_test) talks to a relay that sends each round of its conversation to
// the next DC in turn, as a NAS whose load balancer spreads Access-Requests would. Then a
// DC's policing is lost between two rounds of a conversation: that of a conversation another
// DC owns (a TLS tunnel, forwarded to its owner), and that of the owner itself of an AKA'
// conversation (its state is in the session store).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/eapoltest"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/internal/testpki"
)

// The USIM of 3GPP TS 35.208 test set 1, and the subscribers the EAP phase uses.
const (
	eapKi      = "465b5ce8b199b49faa5f0a2ee238a6bc"
	eapOPc     = "cd63cb71954a9f4e48a5994e37a02baf"
	eapIMSI    = "001019990000001" // apart from the Gx subscribers (IMSIs from 001010000000001)
	eapRealm   = "@wlan.mnc001.mcc001.3gppnetwork.org"
	eapUser    = "eapuser"
	eapPass    = "eap-password"
	eapForward = "e2e-forward-secret-0123456789"
)

// eapFiles writes the EAP server's certificate, key and CA under dir, and the inter-node
// forwarding secret.
func eapFiles(t *testing.T, dir string) {
	t.Helper()
	ca := testpki.New(t, "OpenAAA e2e CA")
	cert, key := ca.Issue(t, "policing.e2e", 2)
	for name, b := range map[string][]byte{"eap-ca.pem": ca.PEM, "eap-server.pem": cert, "eap-server.key": key,
		"eap-forward-secret": []byte(eapForward + "\n")} {
		must(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
}

// eapConfig is the eap section of DC dc's policing: AKA' first (its conversations live in the
// session store between rounds), PEAP and MD5 reached by the peer's Nak; rounds of an
// in-memory (TLS) conversation forwarded to its owner through the forward listener on port.
func eapConfig(dir string, dc, port int) string {
	return fmt.Sprintf(`eap:
  methods: [aka-prime, aka, peap, md5]
  akaNetworkName: WLAN
  certFile: %[1]s/eap-server.pem
  keyFile: %[1]s/eap-server.key
  nodeID: policing-dc%[2]d
  forward:
    address: 127.0.0.1:%[3]d
    secretFile: %[1]s/eap-forward-secret
`, dir, dc, port)
}

// eapSubscribers are the EAP phase's subscribers, appended to the generated file's list.
func eapSubscribers() string {
	return fmt.Sprintf("  - {username: %s, password: %s}\n  - {username: %q, ki: %s, opc: %s, sqn: \"000000000020\"}\n",
		eapUser, eapPass, eapIMSI, eapKi, eapOPc)
}

// eapPhase runs the EAP conversations through the relay; it kills (SIGKILL) and restarts
// the policing of dc3 on the way, and leaves every DC running.
func eapPhase(ctx context.Context, t *testing.T, pol []*policing, dir, secret string) {
	start := time.Now()
	bin := testenv.LookPath(t, "eapol_test", "Debian eapoltest: hack/eapol.sh install")
	var addrs []string
	for _, p := range pol {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p.auth))
	}
	relay := testenv.StartUDPRelay(t, addrs...)
	// sent is the datagrams each DC got since mark.
	var mark []int
	sent := func() []int {
		n := relay.Sent()
		for i := range n {
			n[i] -= mark[i]
		}
		return n
	}
	// route starts a conversation on DC index first; at its at-th datagram (0: never) the
	// policing of DC index lost is killed and gets no more rounds.
	route := func(first, at, lost int) {
		relay.Restore()
		relay.SetNext(first)
		mark = relay.Sent()
		if at > 0 {
			relay.LoseAt(at, lost, pol[lost].kill)
		}
	}
	card, err := eapoltest.NewUSIM(eapKi, eapOPc, 1)
	must(t, err)
	peap := eapoltest.Tunnel("PEAP", "MSCHAPV2", eapUser, eapPass, "{{dir}}/eap-ca.pem")
	akaPrime := "key_mgmt=WPA-EAP\neap=AKA'\nidentity=\"6" + eapIMSI + eapRealm + "\"\n"
	md5 := fmt.Sprintf("key_mgmt=WPA-EAP\neap=MD5\nidentity=%q\npassword=%q\n", eapUser, eapPass)
	conv := func(name, network string, card *eapoltest.USIM, keys bool) {
		t.Helper()
		var args []string
		if !keys {
			args = []string{"-n"} // EAP-MD5 derives no key: eapol_test must not expect MPPE keys
		}
		out, ok, err := eapoltest.Run{Bin: bin, Server: relay.Addr().String(), Secret: secret, Network: network, Dir: dir,
			Card: card, Args: args}.Exec(ctx)
		if err != nil || !ok || (keys && !strings.Contains(out, "MPPE keys OK: 1  mismatch: 0")) {
			t.Fatalf("eap %s: eapol_test did not succeed (err %v); rounds per DC %v\n%s", name, err, sent(), out)
		}
	}
	forwarded := func() (n float64) {
		for _, p := range pol {
			if p.running() {
				n += p.mustMetric(`openaaa_eap_forwarded_rounds_total{result="answered"}`)
			}
		}
		return n
	}

	// Every DC up: each round to the next DC.
	route(0, 0, 0)
	f0 := forwarded()
	conv("peap, round-robin over 3 DCs", peap, nil, true)
	conv("aka-prime, round-robin over 3 DCs", akaPrime, card, true)
	conv("md5, round-robin over 3 DCs", md5, nil, false)
	for i, n := range sent() {
		if n == 0 {
			t.Fatalf("eap: no round reached dc%d: %v", i+1, sent())
		}
	}
	if f := forwarded() - f0; f == 0 {
		t.Fatalf("eap: no PEAP round was forwarded to its owner")
	}
	t.Logf("eap: PEAP, AKA' and MD5 completed with their rounds round-robined over 3 DCs (rounds per DC %v, %.0f forwarded to their owner)",
		sent(), forwarded()-f0)

	// dc3's policing lost between two rounds of a PEAP conversation dc2 owns (dc1 proposed
	// AKA', dc2 answered the peer's Nak with PEAP): dc3 forwards round 3 to dc2, then is lost;
	// the rounds that would have gone to it go to dc1 and dc2, dc1 forwarding its own to dc2.
	lost := pol[2]
	route(0, 4, 2)
	conv("peap, dc3 lost after round 3", peap, nil, true)
	if n := sent(); n[2] != 1 || lost.running() {
		t.Fatalf("eap: rounds per DC %v, dc3 running %v: want dc3 to get one round, then be lost", n, lost.running())
	}
	lost.start()
	t.Logf("eap: PEAP completed with dc3 lost between rounds (rounds per DC %v)", sent())

	// The owner lost: an AKA' conversation begun in dc3, whose policing is then lost. Its
	// state is in the session store (replicated to dc1 and dc2 by Cassandra): dc1 continues it.
	route(2, 2, 2)
	conv("aka-prime, its owner dc3 lost after round 1", akaPrime, card, true)
	if n := sent(); n[2] != 1 {
		t.Fatalf("eap: rounds per DC %v: want dc3 to get only the first round", n)
	}
	lost.start()
	t.Logf("eap: AKA' completed with its owner dc3 lost after round 1 (rounds per DC %v); phase done in %s",
		sent(), time.Since(start).Round(100*time.Millisecond))
}
