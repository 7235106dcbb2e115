package eap

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/eappeer"
)

// resumingServer is an EAP-TLS server issuing tickets under key, resumable for lifetime.
func resumingServer(t *testing.T, cfg *tls.Config, key byte, lifetime time.Duration) *Server {
	s := tlsServer(t, cfg, TypeTLS)
	s.opt.TicketKeys = func() [][32]byte { return [][32]byte{{key}} }
	s.opt.TicketLifetime = lifetime
	return s
}

// Session tickets with aaa-loadgen's peer (crypto/tls, its session cache): the second
// conversation resumes, over TLS 1.2 and 1.3, under the same key only, within the lifetime
// only; a re-issued ticket keeps its session's first time (ticketIssued); nothing resumes
// without ticket keys.
func TestResumption(t *testing.T) {
	srvTLS, cliTLS := peerPKI(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		name := map[uint16]string{tls.VersionTLS12: "tls12", tls.VersionTLS13: "tls13"}[v]
		t.Run(name, func(t *testing.T) {
			run := func(s *Server, cache tls.ClientSessionCache) bool {
				t.Helper()
				cfg := cliTLS.Clone()
				cfg.MaxVersion, cfg.ClientSessionCache = v, cache
				p := eappeer.New(eappeer.Config{Method: TypeTLS, Identity: "alice", TLS: cfg})
				defer p.Close()
				before := testutil.ToFloat64(testMetrics.handshakes.WithLabelValues("tls", "true"))
				r, _ := converse(t, s, p)
				if !r.Accept || len(r.MSK) != 64 || r.Subscriber == nil || r.Subscriber.Username != "alice" {
					t.Fatalf("not accepted: %+v", r)
				}
				return testutil.ToFloat64(testMetrics.handshakes.WithLabelValues("tls", "true")) == before+1
			}
			a, b := resumingServer(t, srvTLS, 1, time.Hour), resumingServer(t, srvTLS, 1, time.Hour)
			cache := tls.NewLRUClientSessionCache(4)
			if run(a, cache) || !run(b, cache) || !run(a, cache) {
				t.Fatal("want a full handshake, then resumptions on the nodes sharing the key")
			}
			if run(resumingServer(t, srvTLS, 2, time.Hour), tls.NewLRUClientSessionCache(4)) {
				t.Fatal("resumed with an empty cache")
			}
			cache = tls.NewLRUClientSessionCache(4)
			run(a, cache)
			if run(resumingServer(t, srvTLS, 2, time.Hour), cache) {
				t.Fatal("resumed under another key")
			}
			cache = tls.NewLRUClientSessionCache(4)
			run(a, cache)
			if run(resumingServer(t, srvTLS, 1, time.Nanosecond), cache) {
				t.Fatal("resumed past the lifetime")
			}
			// Resumed 40 minutes after its full handshake, then 30 minutes later: past the
			// hour, although its last ticket is 30 minutes old.
			defer func() { ticketNow = time.Now }()
			cache = tls.NewLRUClientSessionCache(4)
			run(a, cache)
			ticketNow = func() time.Time { return time.Now().Add(40 * time.Minute) }
			if !run(b, cache) {
				t.Fatal("not resumed within the lifetime")
			}
			ticketNow = func() time.Time { return time.Now().Add(70 * time.Minute) }
			if run(a, cache) {
				t.Fatal("resumed past the lifetime of the session's full handshake")
			}
			ticketNow = time.Now

			off := tlsServer(t, srvTLS, TypeTLS)
			cache = tls.NewLRUClientSessionCache(4)
			full := !run(off, cache)
			if again := run(off, cache); !full || again {
				t.Fatal("resumed without ticket keys")
			}
		})
	}
}

func TestTicketIssued(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	extra := [][]byte{[]byte("someone else's"), append([]byte(ticketExtraID), 0, 0, 0, 0, 0x6b, 0x49, 0xd2, 0)}
	if got, ok := ticketIssued(extra); !ok || !got.Equal(at) {
		t.Fatalf("ticketIssued = %v %v, want %v", got, ok, at)
	}
	if _, ok := ticketIssued(extra[:1]); ok {
		t.Fatal("found in a ticket without our entry")
	}
}
