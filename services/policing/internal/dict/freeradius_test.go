package dict

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/testenv"
)

// radclientWire has FreeRADIUS's radclient encode attribute lines into an Access-Request
// sent to a socket of ours and returns the request's attributes as they were on the wire:
// FreeRADIUS's own encoder is the reference.
func radclientWire(t *testing.T, lines ...string) radius.Attributes {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils: hack/freeradius.sh install")
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-r", "1", "-t", "1", conn.LocalAddr().String(), "auth", "s")
	cmd.Stdin = strings.NewReader(strings.Join(append([]string{`User-Name = "u"`}, lines...), "\n") + "\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }() // it times out waiting for a reply that never comes
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no request from radclient: %v", err)
	}
	p, err := radius.Parse(buf[:n], []byte("s"))
	if err != nil {
		t.Fatal(err)
	}
	return p.Attributes
}

// Tagged attributes with tag 0 encode byte for byte as FreeRADIUS encodes them: strings
// without a tag octet (Tunnel-Private-Group-Id, and inside a VSA), integers with the tag
// in the high octet.
func TestTaggedAttributesAsFreeRADIUS(t *testing.T) {
	attrs := radclientWire(t, `Tunnel-Private-Group-Id:0 = "100"`, "Tunnel-Type:0 = VLAN", `ERX-Service-Activate:0 = "svc"`)
	for _, c := range [][2]string{{"Tunnel-Private-Group-Id", "100"}, {"Tunnel-Type", "VLAN"}, {"ERX-Service-Activate", "svc"}} {
		e := encode(t, c[0], c[1])
		var wire radius.Attribute
		for _, a := range attrs {
			if a.Type == e.Type && (e.Type != 26 || bytes.Equal(a.Attribute[:5], e.Value[:5])) {
				wire = a.Attribute
			}
		}
		if wire == nil {
			t.Fatalf("%s: radclient sent no such attribute: %v", c[0], attrs)
		}
		if !bytes.Equal(e.Value, wire) {
			t.Errorf("%s = %s: we encode % x, FreeRADIUS % x", c[0], c[1], []byte(e.Value), []byte(wire))
		}
	}
}
