package app

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/eapoltest"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// usim is the card behind eapol_test's external SIM interface (internal/eapoltest).
type usim = eapoltest.USIM

func newUSIM(t *testing.T, ki, opc string, sqn uint64) *usim {
	u, err := eapoltest.NewUSIM(ki, opc, sqn)
	apptest.Check(t, err)
	return u
}

// eapolTestUSIM runs eapol_test with the network block and card u behind its control
// interface: its output, and whether it reported SUCCESS.
func eapolTestUSIM(t *testing.T, n *Node, dir, network string, u *usim) (string, bool) {
	t.Helper()
	return runEapolTest(t, n.Addr("radius.authAddress"), dir, network, u)
}

// runEapolTest runs eapol_test against the RADIUS server at server, on 127.0.0.1 (a node's
// auth port, or a relay before several; card: nil unless SIM-based).
func runEapolTest(t *testing.T, server net.Addr, dir, network string, card *usim, args ...string) (string, bool) {
	t.Helper()
	bin := testenv.LookPath(t, "eapol_test", "Debian eapoltest: hack/eapol.sh install")
	_, port, _ := strings.Cut(server.String(), ":")
	out, ok, err := eapoltest.Run{Bin: bin, Server: "127.0.0.1:" + port, Secret: radclientSecret, Network: network,
		Dir: dir, Card: card, Args: args}.Exec(context.Background())
	if err != nil {
		t.Fatalf("eapol_test: %v\n%s", err, out)
	}
	return out, ok
}
