// Package diametertest checks what a Diameter test exchanged with an independent decoder:
// Wireshark's tshark (hack/diameter-peers.sh installs it) reads a pcap of the connection
// and the test fails on any expert-info warning or error of its dissectors (AVP flags
// against its 3GPP dictionary, lengths, enumerations, malformed messages), so our answers
// are checked against someone else's reading of the specifications, not our constants.
//
// Record wraps the test's client side of a connection; at the end of the test the bytes
// each way are written as one TCP stream (a synthesized handshake, then the segments in the
// order the test saw them) to a pcap in the test's temporary directory (or
// $OPENAAA_PCAP_DIR, kept) and decoded with `tshark -r f.pcap -V -d tcp.port==3868,diameter`.
package diametertest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

// captures numbers the pcaps, several connections of one test apart.
var captures atomic.Int64

// Port is the server port the pcap shows (the IANA Diameter port, whatever the test's).
const Port = 3868

const clientPort = 40000

// Conn is a recorded connection.
type Conn struct {
	net.Conn
	mu   sync.Mutex
	segs []segment
}

type segment struct {
	toServer bool
	b        []byte
	at       time.Time
}

func (c *Conn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.add(true, b[:n])
	return n, err
}

func (c *Conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.add(false, b[:n])
	return n, err
}

func (c *Conn) add(toServer bool, b []byte) {
	if len(b) == 0 {
		return
	}
	c.mu.Lock()
	c.segs = append(c.segs, segment{toServer, bytes.Clone(b), time.Now()})
	c.mu.Unlock()
}

// Record wraps the client side of a Diameter connection; when the test ends, what went
// each way is decoded by tshark and the test fails on its warnings and errors. Without
// tshark the check is skipped, or fails under OPENAAA_INTEGRATION=require.
func Record(t testing.TB, c net.Conn) *Conn {
	t.Helper()
	rc := &Conn{Conn: c}
	t.Cleanup(func() { Check(t, rc) })
	return rc
}

// Check decodes what c carried so far with tshark (Record calls it at the test's end).
func Check(t testing.TB, c *Conn) {
	t.Helper()
	c.mu.Lock()
	segs := append([]segment(nil), c.segs...)
	c.mu.Unlock()
	if len(segs) == 0 {
		return
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if testenv.Required() {
			t.Errorf("tshark is required (OPENAAA_INTEGRATION=require) but missing; run `make diameter-peers`")
		} else {
			t.Logf("tshark not available: what the test exchanged is not decoded (`make diameter-peers` installs it)")
		}
		return
	}
	dir := os.Getenv("OPENAAA_PCAP_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d.pcap", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), captures.Add(1)))
	if err := os.WriteFile(name, pcap(segs), 0o644); err != nil {
		t.Error(err)
		return
	}
	out, answers, requests, err := Decode(tshark, name)
	if err != nil {
		t.Errorf("tshark on %s: %v\n%s", name, err, out)
		return
	}
	if len(requests) > 0 { // the test's own requests: hostile ones are the point of some tests
		t.Logf("tshark on the test's requests (%s):\n  %s", name, strings.Join(requests, "\n  "))
	}
	if len(answers) > 0 {
		t.Errorf("tshark's expert info on what the server sent (%s):\n  %s\n\ntshark -V:\n%s", name, strings.Join(answers, "\n  "), out)
	}
}

// expertLine is a line of tshark -V's expert info: "[Expert Info (Warning/Protocol): …]".
var expertLine = regexp.MustCompile(`\[Expert Info \((Warning|Error)/([A-Za-z ]+)\): (.*)\]`)

// unknownLine is an AVP tshark's dictionary does not know, or an enumerated value outside
// its enumeration: tshark 4.0 reports neither as expert info.
var unknownLine = regexp.MustCompile(`AVP: Unknown\(|val=Unknown \(`)

// Decode runs tshark -V on a pcap with the Diameter dissector on Port and returns its
// output and the expert-info warnings and errors it reports ("frame: text"), those of the
// frames the server sent (from Port) apart from those of the frames it received.
func Decode(tshark, pcapFile string) (out string, fromServer, toServer []string, err error) {
	cmd := exec.Command(tshark, "-n", "-r", pcapFile, "-V", "-o", "tcp.check_checksum:FALSE",
		"-d", fmt.Sprintf("tcp.port==%d,diameter", Port))
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	out = string(b)
	if err != nil {
		return out + stderr.String(), nil, nil, err
	}
	frame, server := "", false
	srcPort := fmt.Sprintf("Src Port: %d,", Port)
	failed := -1 // the indentation of the Failed-AVP being read (its content is the peer's)
	for _, line := range strings.Split(out, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if failed >= 0 && indent <= failed {
			failed = -1
		}
		if strings.HasPrefix(line, "Frame ") {
			frame, _, _ = strings.Cut(line, ":")
		}
		if strings.HasPrefix(line, "Transmission Control Protocol, ") {
			server = strings.Contains(line, srcPort)
		}
		if strings.Contains(line, "AVP: Failed-AVP(279)") {
			failed = indent
		}
		p := ""
		if m := expertLine.FindStringSubmatch(line); m != nil {
			// An AVP the peer sent that we do not know either is named back in Failed-AVP
			// (5001): tshark not knowing it there is no fault of ours.
			if failed < 0 || m[2] != "Undecoded" {
				p = fmt.Sprintf("%s: %s/%s: %s", frame, m[1], m[2], m[3])
			}
		} else if failed < 0 && unknownLine.MatchString(line) {
			p = fmt.Sprintf("%s: unknown to tshark's dictionary: %s", frame, strings.TrimSpace(line))
		}
		if p != "" {
			if server {
				fromServer = append(fromServer, p)
			} else {
				toServer = append(toServer, p)
			}
		}
	}
	return out, fromServer, toServer, nil
}

// pcap is a capture file (LINKTYPE_RAW: IPv4) of one TCP connection from 127.0.0.1:40000 to
// 127.0.0.2:3868 carrying segs.
func pcap(segs []segment) []byte {
	var buf bytes.Buffer
	hdr := []uint32{0xa1b2c3d4, 2 | 4<<16, 0, 0, 262144, 101}
	for i, v := range hdr {
		if i == 1 { // version 2.4: two uint16
			_ = binary.Write(&buf, binary.LittleEndian, uint16(2))
			_ = binary.Write(&buf, binary.LittleEndian, uint16(4))
			continue
		}
		_ = binary.Write(&buf, binary.LittleEndian, v)
	}
	var cseq, sseq uint32 = 1000, 5000
	at := segs[0].at
	write := func(toServer bool, flags byte, payload []byte, ts time.Time) {
		pkt := packet(toServer, flags, cseq, sseq, payload)
		if !toServer {
			pkt = packet(toServer, flags, sseq, cseq, payload)
		}
		_ = binary.Write(&buf, binary.LittleEndian, uint32(ts.Unix()))
		_ = binary.Write(&buf, binary.LittleEndian, uint32(ts.Nanosecond()/1000))
		_ = binary.Write(&buf, binary.LittleEndian, uint32(len(pkt)))
		_ = binary.Write(&buf, binary.LittleEndian, uint32(len(pkt)))
		buf.Write(pkt)
	}
	const syn, ack, psh = 0x02, 0x10, 0x08
	write(true, syn, nil, at)
	cseq++
	write(false, syn|ack, nil, at)
	sseq++
	write(true, ack, nil, at)
	for _, s := range segs {
		for b := s.b; len(b) > 0; {
			n := min(len(b), 60000)
			write(s.toServer, psh|ack, b[:n], s.at)
			if s.toServer {
				cseq += uint32(n)
			} else {
				sseq += uint32(n)
			}
			b = b[n:]
		}
	}
	return buf.Bytes()
}

// packet is an IPv4 + TCP packet; seq is the sender's sequence number, ack the other's.
func packet(toServer bool, flags byte, seq, ack uint32, payload []byte) []byte {
	src, dst := []byte{127, 0, 0, 1}, []byte{127, 0, 0, 2}
	sport, dport := uint16(clientPort), uint16(Port)
	if !toServer {
		src, dst, sport, dport = dst, src, dport, sport
	}
	p := make([]byte, 40+len(payload))
	p[0], p[8], p[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[6:], 0x4000) // DF
	copy(p[12:], src)
	copy(p[16:], dst)
	binary.BigEndian.PutUint16(p[10:], checksum(p[:20]))
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	if flags&0x10 != 0 {
		binary.BigEndian.PutUint32(t[8:], ack)
	}
	t[12], t[13] = 5<<4, flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	copy(t[20:], payload)
	// The TCP checksum over the pseudo-header.
	pseudo := make([]byte, 0, 12+len(t))
	pseudo = append(append(append(pseudo, src...), dst...), 0, 6, byte(len(t)>>8), byte(len(t)))
	pseudo = append(pseudo, t...)
	binary.BigEndian.PutUint16(t[16:], checksum(pseudo))
	return p
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Proxy listens on loopback and relays every connection to target, recording each one as
// Record does (and checked the same way when the test ends): a peer in another process
// (python-diameter, freeDiameter) connects to the returned port instead of target's.
func Proxy(t testing.TB, target string) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []*Conn
		wg    sync.WaitGroup
	)
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
		for _, c := range conns {
			Check(t, c)
		}
	})
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			nc, err := net.Dial("tcp", target)
			if err != nil {
				_ = down.Close()
				continue
			}
			up := &Conn{Conn: nc} // its writes go to the server, its reads come from it
			mu.Lock()
			conns = append(conns, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(down, up); _ = down.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
