// Command eapol-usim runs one eapol_test conversation (Debian eapoltest) with a USIM behind
// eapol_test's external SIM interface: EAP-SIM, EAP-AKA and EAP-AKA' for `make demo`
// (hack/demo.sh). Debian's eapol_test has no built-in USIM, so the card and the runner are the
// EAP tests' own (internal/eapoltest, Milenage from internal/milenage). The network block's
// body is read from NETWORK-FILE; eapol_test's output goes to stdout. Exits 0 when eapol_test
// reported SUCCESS, 1 when it did not, 2 when it could not run.
//
//	eapol-usim -server HOST:PORT -secret-file F -ki HEX -opc HEX [-sqn N] [-dir D] NETWORK-FILE [eapol_test args...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/openaaa/openaaa/internal/eapoltest"
)

func main() {
	server := flag.String("server", "127.0.0.1:1812", "the RADIUS server's host:port")
	secretFile := flag.String("secret-file", "", "file holding the RADIUS shared secret")
	ki := flag.String("ki", "", "the card's Ki (hex)")
	opc := flag.String("opc", "", "the card's OPc (hex)")
	sqn := flag.Uint64("sqn", 0, "the last SQN the card accepted")
	dir := flag.String("dir", os.TempDir(), "directory for eapol_test's configuration and control socket")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: eapol-usim -server HOST:PORT -secret-file F -ki HEX -opc HEX [-sqn N] [-dir D] NETWORK-FILE [eapol_test args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 || *secretFile == "" {
		flag.Usage()
		os.Exit(2)
	}
	ok, err := run(*server, *secretFile, *ki, *opc, *sqn, *dir, flag.Arg(0), flag.Args()[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "eapol-usim:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(server, secretFile, ki, opc string, sqn uint64, dir, networkFile string, args []string) (bool, error) {
	bin, err := exec.LookPath("eapol_test")
	if err != nil {
		return false, fmt.Errorf("%w (hack/eapol.sh install)", err)
	}
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		return false, err
	}
	network, err := os.ReadFile(networkFile)
	if err != nil {
		return false, err
	}
	card, err := eapoltest.NewUSIM(ki, opc, sqn)
	if err != nil {
		return false, err
	}
	out, ok, err := eapoltest.Run{Bin: bin, Server: server, Secret: strings.TrimSpace(string(secret)),
		Network: string(network), Dir: dir, Card: card, Args: args}.Exec(context.Background())
	fmt.Print(out)
	return ok, err
}
