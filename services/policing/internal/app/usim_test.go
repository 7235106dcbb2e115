package app

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/milenage"
)

// usim is the card behind eapol_test's external SIM interface (external_sim=1): Debian's
// eapol_test 2.10 is built without wpa_supplicant's Milenage simulator (CONFIG_USIM_SIMULATOR,
// password="Ki:OPc:SQN"), so the test answers its CTRL-REQ-SIM UMTS-AUTH requests on the
// control interface as a USIM does (TS 33.102 §6.3.3): AUTN's MAC checked, the SQN fresh
// (greater than the last accepted) or AUTS, then RES, CK and IK. eapol_test does the rest of
// EAP-AKA and AKA' (AT_MAC, the keys, CK'/IK', the MSK it compares with the MPPE keys). To
// EAP-SIM's GSM-AUTH it answers as a USIM in a GSM context: SRES and Kc by c2 and c3.
type usim struct {
	card *milenage.Card
	sqn  uint64 // the last SQN accepted
}

func newUSIM(t *testing.T, ki, opc string, sqn uint64) *usim {
	k, _ := hex.DecodeString(ki)
	o, _ := hex.DecodeString(opc)
	c, err := milenage.New(k, o)
	must(t, err)
	return &usim{card: c, sqn: sqn}
}

// answer is the card's response to UMTS-AUTH with rand and autn, as eapol_test reads it.
func (u *usim) answer(rand, autn []byte) string {
	ks := u.card.F2345(rand)
	var sqn [6]byte
	subtle.XORBytes(sqn[:], autn[:6], ks.AK[:])
	macA, _ := u.card.F1(rand, sqn[:], autn[6:8])
	if !bytes.Equal(macA[:], autn[8:]) {
		return "UMTS-FAIL" // not a network that knows our key: Authentication-Reject
	}
	if milenage.SQN(sqn[:]) <= u.sqn {
		ms := milenage.PutSQN(u.sqn)
		auts := make([]byte, 14)
		subtle.XORBytes(auts[:6], ms[:], ks.AKStar[:])
		_, macS := u.card.F1(rand, ms[:], []byte{0, 0})
		copy(auts[6:], macS[:])
		return "UMTS-AUTS:" + hex.EncodeToString(auts)
	}
	u.sqn = milenage.SQN(sqn[:])
	return "UMTS-AUTH:" + hex.EncodeToString(ks.IK[:]) + ":" + hex.EncodeToString(ks.CK[:]) + ":" + hex.EncodeToString(ks.RES[:])
}

// gsm is the USIM's answer to a GSM challenge (EAP-SIM's GSM-AUTH, RANDs in hex): Kc and
// SRES of each, from Milenage by c3 and c2.
func (u *usim) gsm(rands []string) string {
	out := "GSM-AUTH"
	for _, r := range rands {
		rand, _ := hex.DecodeString(r)
		sres, kc := u.card.GSM(rand)
		out += ":" + hex.EncodeToString(kc[:]) + ":" + hex.EncodeToString(sres[:])
	}
	return out
}

// eapolTestUSIM runs eapol_test with the network block and card u behind its control
// interface: its output, and whether it reported SUCCESS.
func eapolTestUSIM(t *testing.T, n *Node, dir, network string, u *usim) (string, bool) {
	t.Helper()
	bin := testenv.LookPath(t, "eapol_test", "Debian eapoltest: hack/eapol.sh install")
	run, err := os.MkdirTemp(dir, "usim")
	must(t, err)
	conf := filepath.Join(run, "eapol.conf")
	must(t, os.WriteFile(conf, []byte("ctrl_interface="+filepath.Join(run, "ctrl")+"\nexternal_sim=1\nnetwork={\n"+network+"\n}\n"), 0o600))
	_, port, _ := strings.Cut(n.AuthAddr.String(), ":")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	// -W: eapol_test waits for a monitor on its control interface before it starts.
	cmd := exec.CommandContext(ctx, bin, "-W", "-c", conf, "-a", "127.0.0.1", "-p", port, "-s", radclientSecret, "-t", "20", "-r", "0")
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sock := filepath.Join(run, "ctrl", "test")
	eventually(t, 20*time.Second, "eapol_test's control interface", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	mon := filepath.Join(run, "mon")
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: mon, Net: "unixgram"}, &net.UnixAddr{Name: sock, Net: "unixgram"})
	must(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("ATTACH"))
	must(t, err)
	buf := make([]byte, 4096)
	for {
		select {
		case err := <-done:
			return out.String(), err == nil && strings.Contains(out.String(), "\nSUCCESS")
		default:
		}
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, err := conn.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		if err != nil { // eapol_test went away
			return out.String() + "\n" + (<-done).Error(), false
		}
		// "<3>CTRL-REQ-SIM-0:UMTS-AUTH:<RAND>:<AUTN> needed for SSID …"
		msg := string(buf[:k])
		_, req, ok := strings.Cut(msg, "CTRL-REQ-SIM-")
		if !ok {
			continue
		}
		id, rest, _ := strings.Cut(req, ":")
		f := strings.Split(strings.Fields(rest)[0], ":")
		var answer string
		switch {
		case len(f) == 3 && f[0] == "UMTS-AUTH":
			rand, _ := hex.DecodeString(f[1])
			autn, _ := hex.DecodeString(f[2])
			answer = u.answer(rand, autn)
		case len(f) >= 3 && f[0] == "GSM-AUTH":
			answer = u.gsm(f[1:])
		default:
			t.Fatalf("unexpected SIM request %q", msg)
		}
		_, err = conn.Write([]byte("CTRL-RSP-SIM-" + id + ":" + answer))
		must(t, err)
	}
}
