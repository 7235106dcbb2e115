package eap

import (
	"bytes"
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/eaptls"
)

// PEAP and TTLS over TLS 1.3: the peer's Finished ends the handshake, so the Request that
// answers it already starts the tunnel — PEAP's inner Identity request; for TTLS, where the
// peer speaks first, an empty Request, or the outcome of AVPs sent with the Finished.
func TestTunnelStartTLS13(t *testing.T) {
	srvTLS, cliTLS := peerPKI(t)
	ctx := context.Background()
	// finished runs the handshake through message() and sends the peer's Finished followed by
	// the records of inner (none when empty): the server's answer, the method and the peer.
	finished := func(t *testing.T, typ byte, inner []byte) (outcome, *tlsMethod, *eaptls.Engine) {
		t.Helper()
		s := tlsServer(t, srvTLS, typ)
		m := newTLSMethod(s, typ, map[byte]tunnel{TypePEAP: &peapInner{srv: s}, TypeTTLS: &ttlsInner{srv: s}}[typ])
		t.Cleanup(m.close)
		if _, err := m.start(ctx); err != nil {
			t.Fatal(err)
		}
		cli := eaptls.NewClient(cliTLS)
		t.Cleanup(cli.Close)
		hello, _, err := cli.Handshake(nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fin, done, err := cli.Handshake(serverMessage(t, m, m.message(ctx, hello)), 5*time.Second)
		if err != nil || !done || cli.State().Version != tls.VersionTLS13 {
			t.Fatalf("handshake: done %v, %v, version %x", done, err, cli.State().Version)
		}
		if len(inner) > 0 {
			rec, err := cli.Write(inner)
			if err != nil {
				t.Fatal(err)
			}
			fin = append(fin, rec...)
		}
		return m.message(ctx, fin), m, cli
	}

	t.Run("peap", func(t *testing.T) {
		o, m, cli := finished(t, TypePEAP, nil)
		plain, err := cli.Read(serverMessage(t, m, o))
		if err != nil || !bytes.Equal(plain, []byte{TypeIdentity}) {
			t.Fatalf("answer to the Finished: %x, %v; want the inner Identity request", plain, err)
		}
	})
	pap := appendAVP(appendAVP(nil, 0, avpUserName, []byte("alice")), 0, avpUserPassword, []byte("alicepw"))
	t.Run("ttls", func(t *testing.T) {
		o, m, cli := finished(t, TypeTTLS, nil)
		if o.done || !bytes.Equal(o.next, []byte{0}) {
			t.Fatalf("answer to the Finished: %+v; want an empty Request", o)
		}
		rec, err := cli.Write(pap)
		if err != nil {
			t.Fatal(err)
		}
		checkTTLSAccept(t, m.message(ctx, rec), cli)
	})
	t.Run("ttls avps with the finished", func(t *testing.T) {
		o, _, cli := finished(t, TypeTTLS, pap)
		checkTTLSAccept(t, o, cli)
	})
}

// checkTTLSAccept: o accepts alice with the MSK the peer exports per RFC 9427 (TTLS: 0x15).
func checkTTLSAccept(t *testing.T, o outcome, cli *eaptls.Engine) {
	t.Helper()
	want, err := cli.Export("EXPORTER_EAP_TLS_Key_Material", []byte{0x15}, 128)
	if err != nil {
		t.Fatal(err)
	}
	if !o.done || o.reason != "" || o.sub == nil || o.sub.Username != "alice" || !bytes.Equal(o.msk, want[:64]) {
		t.Fatalf("not accepted with the peer's MSK: %+v", o)
	}
}

// serverMessage is the whole TLS message behind o, its further fragments acknowledged.
func serverMessage(t *testing.T, m *tlsMethod, o outcome) []byte {
	t.Helper()
	var msg []byte
	for {
		if o.done || len(o.next) == 0 {
			t.Fatalf("no Request: %+v", o)
		}
		flags, body := o.next[0], o.next[1:]
		if flags&flagLength != 0 {
			body = body[4:]
		}
		msg = append(msg, body...)
		if flags&flagMore == 0 {
			return msg
		}
		o = m.step(context.Background(), 0, []byte{0})
	}
}

// handshake runs a server and a client engine against each other to the end.
func handshake(t *testing.T, srv, cli *eaptls.Engine) {
	t.Helper()
	const round = 5 * time.Second
	msg, _, err := cli.Handshake(nil, round)
	srvDone, cliDone := false, false
	for i := 0; err == nil && (!srvDone || !cliDone); i++ {
		if i == 5 {
			t.Fatal("no end of the handshake")
		}
		if !srvDone {
			if msg, srvDone, err = srv.Handshake(msg, round); err != nil {
				break
			}
		}
		if !cliDone {
			msg, cliDone, err = cli.Handshake(msg, round)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
