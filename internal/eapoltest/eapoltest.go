// Package eapoltest runs eapol_test (Debian eapoltest, wpa_supplicant's RADIUS test client)
// against a RADIUS server for the tests of policing's EAP methods, in-process nodes and the
// multi-DC end-to-end test alike: one network block per run, and for EAP-SIM, AKA and AKA' a
// USIM answering on eapol_test's control interface.
package eapoltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Run is one eapol_test conversation.
type Run struct {
	// Bin is eapol_test's path.
	Bin string
	// Server is the RADIUS server's host:port, Secret its shared secret.
	Server, Secret string
	// Network is the body of the network={...} block; "{{dir}}" in it is replaced by Dir.
	Network string
	// Dir receives the configuration (and the control socket of a USIM run).
	Dir string
	// Card answers the SIM requests (EAP-SIM, AKA, AKA'); nil for the other methods.
	Card *USIM
	// Args are extra eapol_test arguments.
	Args []string
}

// Tunnel is the network block of PEAP or TTLS (method): the inner method phase2 with user and
// password inside the tunnel, "anonymous" outside, the server's certificate checked against
// caFile (which may use "{{dir}}").
func Tunnel(method, phase2, user, password, caFile string) string {
	return fmt.Sprintf("key_mgmt=WPA-EAP\neap=%s\nidentity=%q\nanonymous_identity=\"anonymous\"\npassword=%q\nca_cert=%q\nphase2=\"auth=%s\"\n",
		method, user, password, caFile, phase2)
}

// TLS13 is the network block's line that lets wpa_supplicant offer TLS 1.3: 2.10 offers it
// by default for EAP-TLS only (PEAP and TTLS need it), and the line for EAP-TLS makes the
// version under test explicit.
const TLS13 = "phase1=\"tls_disable_tlsv1_3=0\"\n"

// Exec runs eapol_test (at most 20 s of EAP, one RADIUS attempt per round: -t 20 -r 0): its
// output, and whether it reported SUCCESS. err is for a run that could not be made (a
// configuration not written, an unexpected SIM request), not for a refusal.
func (r Run) Exec(ctx context.Context) (string, bool, error) {
	dir, err := os.MkdirTemp(r.Dir, "eapol")
	if err != nil {
		return "", false, err
	}
	conf := filepath.Join(dir, "eapol.conf")
	head := ""
	if r.Card != nil {
		head = "ctrl_interface=" + filepath.Join(dir, "ctrl") + "\nexternal_sim=1\n"
	}
	network := strings.ReplaceAll(r.Network, "{{dir}}", r.Dir)
	if err := os.WriteFile(conf, []byte(head+"network={\n"+network+"\n}\n"), 0o600); err != nil {
		return "", false, err
	}
	host, port, err := net.SplitHostPort(r.Server)
	if err != nil {
		return "", false, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := []string{"-c", conf, "-a", host, "-p", port, "-s", r.Secret, "-t", "20", "-r", "0"}
	if r.Card != nil {
		args = append([]string{"-W"}, args...) // wait for the card on the control interface
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, r.Bin, append(args, r.Args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if r.Card != nil {
		if err := r.Card.serve(ctx, filepath.Join(dir, "ctrl", "test"), filepath.Join(dir, "mon"), done); err != nil {
			_ = cmd.Process.Kill()
			<-done
			return out.String(), false, err
		}
	}
	err = <-done
	return out.String(), err == nil && strings.Contains(out.String(), "\nSUCCESS"), nil
}

// serve answers eapol_test's CTRL-REQ-SIM requests on its control socket until it exits;
// it puts eapol_test's exit back on done for Exec.
func (u *USIM) serve(ctx context.Context, sock, mon string, done chan error) error {
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		select {
		case err := <-done:
			done <- err
			return nil
		case <-ctx.Done():
			return fmt.Errorf("eapol_test's control interface never appeared: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: mon, Net: "unixgram"}, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ATTACH")); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		select {
		case err := <-done:
			done <- err
			return nil
		default:
		}
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, err := conn.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		if err != nil { // eapol_test went away
			return nil
		}
		// "<3>CTRL-REQ-SIM-0:UMTS-AUTH:<RAND>:<AUTN> needed for SSID …"
		msg := string(buf[:k])
		_, req, ok := strings.Cut(msg, "CTRL-REQ-SIM-")
		if !ok {
			continue
		}
		id, rest, _ := strings.Cut(req, ":")
		answer, err := u.Answer(strings.TrimSpace(strings.SplitN(rest, " ", 2)[0]))
		if err != nil {
			return err
		}
		if _, err := conn.Write([]byte("CTRL-RSP-SIM-" + id + ":" + answer)); err != nil {
			return err
		}
	}
}
