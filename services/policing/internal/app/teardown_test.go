package app

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// A node whose start fails after its subscriber source opened closes the source: an LDAP
// pool's connections are not left open until the process exits. The failure here is the
// RADIUS auth port, taken by another socket, after the store opened.
func TestFailedStartClosesLDAP(t *testing.T) {
	dir, err := net.Listen("tcp", "127.0.0.1:0") // stands for the directory: takes the pool's connection
	apptest.Check(t, err)
	defer dir.Close()
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	apptest.Check(t, err)
	defer taken.Close()

	cfg := startNodeConfig(t, "radius.authAddress="+taken.LocalAddr().String())
	cfg.Subscribers.Source = "ldap"
	cfg.Subscribers.LDAP.URLs = []string{"ldap://" + dir.Addr().String()}
	cfg.Subscribers.LDAP.BaseDN = "dc=example,dc=org"
	cfg.Subscribers.LDAP.PoolSize = 1

	conns := make(chan net.Conn, 1)
	go func() {
		if c, err := dir.Accept(); err == nil {
			conns <- c
		}
	}()
	if _, err := Start(context.Background(), cfg, quietLog(), nil); err == nil {
		t.Fatal("Start succeeded on a taken auth port")
	}
	var c net.Conn
	select {
	case c = <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("the LDAP source never connected")
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the LDAP connection is still open after the failed start")
	}
}
