package gx

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// benchSubscribers is the profile `aaa-loadgen subscribers --gx-subscribers` writes for
// `make bench-gx`: rules, QoS, a session-level monitoring key, a quota never reached.
const benchSubscribers = `
profiles:
  gx:
    dataPolicy: {rules: [internet], qci: 9, arpPriority: 8, ambrUplink: 50000000, ambrDownlink: 100000000, monitoringKey: "mk1", quotaOctets: 1125899906842624, grantOctets: 1073741824, revalidationSeconds: 3600}
subscribers:
%s`

// BenchmarkCCRUpdate is the CCR-U path end to end, in one process, over loopback TCP: the
// server frames and checks the request (checkAVPs), decodes it, reads the session from the
// embedded store, runs the data policy, writes the session back, builds and serializes the
// CCA, caches it for retransmissions and writes it. The client is as cheap as it can be:
// prebuilt CCR-U frames (aaa-loadgen's: a usage report of 1 MiB on the session-level key)
// whose identifiers and CC-Request-Number it patches, sent 64 at a time (64 sessions, as
// `make bench-gx`'s concurrency) and answers read as bytes. One op is one CCR-U answered
// 2001; allocs/op counts the whole process (nearly all of it the server's). Instruction
// counts: docs/benchmarks.md ("Gx", callgrind). Sub-benchmarks: the server's two dispatches
// (diameter.Options.Inline).
func BenchmarkCCRUpdate(b *testing.B) {
	b.Run("workers", func(b *testing.B) { benchCCRUpdate(b, false) })
	b.Run("inline", func(b *testing.B) { benchCCRUpdate(b, true) })
}

func benchCCRUpdate(b *testing.B, inline bool) {
	const sessions = 64
	var subs []byte
	for i := range sessions {
		subs = fmt.Appendf(subs, "  - {username: \"%015d\", password: x, profileName: gx}\n", 1010000000001+i)
	}
	path := filepath.Join(b.TempDir(), "subscribers.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, benchSubscribers, subs), 0o600); err != nil {
		b.Fatal(err)
	}
	src, st := openSources(b, path)
	id := diameter.Identity{Host: "pcrf.bench", Realm: "bench"}
	h := &Handler{Identity: id, Subscribers: src, Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics(metrics.Factory{})}
	srv, err := diameter.Listen("127.0.0.1:0", diameter.Options{OriginHost: id.Host, OriginRealm: id.Realm, VendorID: 1,
		Peers: []diameter.Peer{{OriginHost: "pcef.bench"}}, Apps: map[uint32]diameter.Handler{diameter.GxApplicationID: h},
		MaxInFlight: 4096, Inline: inline, Log: h.Log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	var ans []byte
	exchange := func(frames []byte, n int) {
		if _, err := c.Write(frames); err != nil {
			b.Fatal(err)
		}
		for range n {
			if ans, err = readAnswer(r, ans); err != nil {
				b.Fatal(err)
			}
			if code := resultCode(ans); code != diam.Success {
				m, _ := diam.ReadMessage(bytes.NewReader(ans), dict.Default)
				b.Fatalf("answer %d: %s", code, m)
			}
		}
	}
	cer := diam.NewRequest(257, 0, dict.Default)
	cer.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcef.bench"))
	cer.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("bench"))
	cer.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(net.IPv4(127, 0, 0, 1)))
	cer.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(0))
	cer.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String("bench"))
	cer.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(diameter.GxApplicationID))
	raw, _ := cer.Serialize()
	exchange(raw, 1)

	// Open the sessions (CCR-I), then prebuild each one's CCR-U.
	var batch []byte
	updates := make([][]byte, sessions)
	numAt := make([]int, sessions)
	for i := range sessions {
		sid := fmt.Sprintf("pcef.bench;1;%d", i)
		m := benchCCR(sid, Initial, 0)
		m.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(subscriptionIMSI)),
			diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String(fmt.Sprintf("%015d", 1010000000001+i))),
		}})
		m.NewAVP(avp.FramedIPAddress, avp.Mbit, 0, datatype.OctetString([]byte{10, 0, byte(i >> 8), byte(i)}))
		m.NewAVP(avp.CalledStationID, avp.Mbit, 0, datatype.UTF8String("internet"))
		m.Header.HopByHopID, m.Header.EndToEndID = uint32(i), uint32(i)
		raw, _ := m.Serialize()
		batch = append(batch, raw...)

		u := benchCCR(sid, Update, 0x5eed5eed)
		u.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString("mk1")),
			diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(1<<20)),
			}}),
		}})
		updates[i], _ = u.Serialize()
		numAt[i] = indexU32(updates[i], 0x5eed5eed)
	}
	exchange(batch, sessions)

	seq := uint32(1 << 20)
	num := uint32(0)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(sessions, b.N-done)
		num++
		batch = batch[:0]
		for i := range n {
			seq++
			f := updates[i]
			binary.BigEndian.PutUint32(f[12:16], seq)
			binary.BigEndian.PutUint32(f[16:20], seq)
			binary.BigEndian.PutUint32(f[numAt[i]:], num)
			batch = append(batch, f...)
		}
		exchange(batch, n)
		done += n
	}
}

func benchCCR(sid string, typ, num uint32) *diam.Message {
	m := diam.NewRequest(272, diameter.GxApplicationID, dict.Default)
	m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String(sid))
	m.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(diameter.GxApplicationID))
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcef.bench"))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("bench"))
	m.NewAVP(avp.DestinationRealm, avp.Mbit, 0, datatype.DiameterIdentity("bench"))
	m.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(typ))
	m.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(num))
	return m
}

func indexU32(b []byte, v uint32) int {
	for i := 20; i+4 <= len(b); i++ {
		if binary.BigEndian.Uint32(b[i:]) == v {
			return i
		}
	}
	panic("marker not found")
}

func readAnswer(r *bufio.Reader, buf []byte) ([]byte, error) {
	var h [20]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[0:4]) & 0xffffff)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	copy(buf, h[:])
	_, err := io.ReadFull(r, buf[20:])
	return buf, err
}

// resultCode reads a top-level Result-Code from an answer's bytes (0: none).
func resultCode(m []byte) uint32 {
	for b := m[20:]; len(b) >= 8; {
		code, l := binary.BigEndian.Uint32(b), int(binary.BigEndian.Uint32(b[4:])&0xffffff)
		if l < 8 || l > len(b) {
			return 0
		}
		if code == avp.ResultCode && l == 12 {
			return binary.BigEndian.Uint32(b[8:])
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return 0
}
