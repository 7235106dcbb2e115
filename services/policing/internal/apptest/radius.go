package apptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/internal/testenv"
)

// ErrNoReply wraps what kept a request from being answered (writing it, reading the reply):
// the outcome some tests want, unlike a reply that does not verify.
var ErrNoReply = errors.New("no reply")

// Send sends p to addr as a NAS does, with a Message-Authenticator on an Access-Request
// only, and waits up to timeout for the verified reply. It fails no test, so that
// goroutines may call it.
func Send(addr net.Addr, p *radius.Packet, timeout time.Duration) (*radius.Packet, error) {
	return SendFrom(nil, addr, p, p.Code == radius.CodeAccessRequest, timeout)
}

// SendFrom sends p from local (nil: any address) to addr, with a Message-Authenticator when
// withMA, and waits up to timeout for the reply. The reply must carry a Message-Authenticator
// and verify: the node signs every reply with one.
func SendFrom(local *net.UDPAddr, addr net.Addr, p *radius.Packet, withMA bool, timeout time.Duration) (*radius.Packet, error) {
	b, err := p.Encode()
	if err != nil {
		return nil, err
	}
	off := -1
	if withMA {
		b, off = radiusx.AppendMessageAuthenticator(b)
	}
	radiusx.SignRequest(b, off, p.Secret)
	raddr, err := net.ResolveUDPAddr("udp", addr.String())
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", local, raddr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoReply, err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoReply, err)
	}
	if err := radiusx.VerifyResponse(buf[:n], b[4:20], p.Secret, true); err != nil {
		return nil, fmt.Errorf("reply does not verify: %w", err)
	}
	return radius.Parse(buf[:n], p.Secret)
}

// PAP is an Access-Request with a User-Password.
func PAP(secret, user, pass string) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte(secret))
	rfc2865.UserName_SetString(p, user)
	rfc2865.UserPassword_SetString(p, pass)
	return p
}

// Acct is an Accounting-Request for session id of user from the NAS at nas.
func Acct(secret string, status rfc2866.AcctStatusType, id, user string, nas net.IP) *radius.Packet {
	p := radius.New(radius.CodeAccountingRequest, []byte(secret))
	rfc2866.AcctStatusType_Set(p, status)
	rfc2866.AcctSessionID_SetString(p, id)
	rfc2865.UserName_SetString(p, user)
	rfc2865.NASIPAddress_Set(p, nas)
	return p
}

// Profile is what an Access-Accept carries of a subscriber's profile.
type Profile struct {
	FramedIP       string
	SessionTimeout uint32
	Interim        uint32 // Acct-Interim-Interval
	FramedMTU      uint32 // a reply attribute of the profile
	Class          string
}

// WantProfile fails the test unless reply is an Access-Accept with want and a
// Vendor-Specific attribute (the profile's rate limit).
func WantProfile(t testing.TB, reply *radius.Packet, want Profile) {
	t.Helper()
	if reply.Code != radius.CodeAccessAccept {
		t.Fatalf("code = %v, want Access-Accept", reply.Code)
	}
	if ip := rfc2865.FramedIPAddress_Get(reply); ip.String() != want.FramedIP {
		t.Errorf("Framed-IP-Address = %v, want %s", ip, want.FramedIP)
	}
	if v := uint32(rfc2865.SessionTimeout_Get(reply)); v != want.SessionTimeout {
		t.Errorf("Session-Timeout = %v, want %v", v, want.SessionTimeout)
	}
	if v := uint32(rfc2869.AcctInterimInterval_Get(reply)); v != want.Interim {
		t.Errorf("Acct-Interim-Interval = %v, want %v", v, want.Interim)
	}
	if v := uint32(rfc2865.FramedMTU_Get(reply)); v != want.FramedMTU {
		t.Errorf("Framed-MTU = %v, want %v", v, want.FramedMTU)
	}
	if v := string(rfc2865.Class_Get(reply)); v != want.Class {
		t.Errorf("Class = %q, want %q", v, want.Class)
	}
	if _, ok := reply.Lookup(26); !ok {
		t.Error("no Vendor-Specific rate limit attribute")
	}
}

// Radclient sends one request with FreeRADIUS's radclient (-x: the reply's attributes
// shown), tries times waiting timeoutSec each, and returns its output (its error when it
// printed nothing).
func Radclient(t testing.TB, server, command, secret string, tries, timeoutSec int, attrs ...string) string {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-x", "-r", fmt.Sprint(tries), "-t", fmt.Sprint(timeoutSec), server, command, secret)
	cmd.Stdin = strings.NewReader(strings.Join(attrs, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		return err.Error()
	}
	return string(out)
}

// RadclientPAP is Radclient sending an Access-Request with a User-Password (and a
// Message-Authenticator) to server.
func RadclientPAP(t testing.TB, server, secret, user, pass string, tries, timeoutSec int) string {
	t.Helper()
	return Radclient(t, server, "auth", secret, tries, timeoutSec,
		fmt.Sprintf("User-Name = %q", user), fmt.Sprintf("User-Password = %q", pass), "Message-Authenticator = 0x00")
}
