package nas

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/services/policing/config"
)

const topSecret = "correct-horse-battery-staple"

func secretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// packet builds a minimal raw request carrying a NAS-Identifier (empty: none).
func packet(nasID string) []byte {
	b := make([]byte, 20)
	b[0] = 1
	if nasID != "" {
		b = append(b, 32, byte(2+len(nasID)))
		b = append(b, nasID...)
	}
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	return b
}

func build(t *testing.T, cs ...config.Client) *Table {
	t.Helper()
	sec := secretFile(t, topSecret+"\n")
	for i := range cs {
		if cs[i].SecretFile == "" {
			cs[i].SecretFile = sec
		}
	}
	tab, err := Build(cs)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func name(c *Client) string {
	if c == nil {
		return "<nil>"
	}
	return c.Name
}

func TestMatchLongestPrefix(t *testing.T) {
	tab := build(t,
		config.Client{Name: "wide", Address: "10.0.0.0/8"},
		config.Client{Name: "narrow", Address: "10.1.0.0/16"},
		config.Client{Name: "narrower", Address: "10.1.2.0/24"},
		config.Client{Name: "exact", Address: "10.1.2.3"},
		config.Client{Name: "v6", Address: "2001:db8::/32"},
	)
	cases := map[string]string{
		"10.1.2.3":         "exact",
		"10.1.2.4":         "narrower",
		"10.1.3.1":         "narrow",
		"10.200.0.1":       "wide",
		"11.0.0.1":         "<nil>",
		"::ffff:10.1.2.3":  "exact", // IPv4-mapped (dual-stack socket)
		"::ffff:10.9.9.9":  "wide",
		"2001:db8:1::5":    "v6",
		"2001:db9::1":      "<nil>",
		"192.168.1.1":      "<nil>",
		"::ffff:11.0.0.1":  "<nil>",
		"0.0.0.0":          "<nil>",
		"255.255.255.255":  "<nil>",
		"2001:db8:ffff::1": "v6",
	}
	for addr, want := range cases {
		if got := name(tab.Match(netip.MustParseAddr(addr), packet(""))); got != want {
			t.Errorf("Match(%s) = %s, want %s", addr, got, want)
		}
	}
}

// Several NAS behind one address (NAT) are told apart by NAS-Identifier; one configured
// without an identifier catches the rest.
func TestMatchNASIdentifier(t *testing.T) {
	tab := build(t,
		config.Client{Name: "bng-a", Address: "192.0.2.1", NASIdentifier: "bng-a"},
		config.Client{Name: "bng-b", Address: "192.0.2.1", NASIdentifier: "bng-b"},
		config.Client{Name: "only-ids", Address: "192.0.2.2", NASIdentifier: "x"},
		config.Client{Name: "catch-all", Address: "192.0.2.1"},
		config.Client{Name: "range-id", Address: "198.51.100.0/24", NASIdentifier: "ap-1"},
		config.Client{Name: "range", Address: "198.51.0.0/16"},
	)
	addr := netip.MustParseAddr("192.0.2.1")
	for id, want := range map[string]string{"bng-a": "bng-a", "bng-b": "bng-b", "bng-c": "catch-all", "": "catch-all", "BNG-A": "catch-all"} {
		if got := name(tab.Match(addr, packet(id))); got != want {
			t.Errorf("NAS-Identifier %q -> %s, want %s", id, got, want)
		}
	}
	only := netip.MustParseAddr("192.0.2.2")
	if got := name(tab.Match(only, packet("y"))); got != "<nil>" {
		t.Errorf("wrong identifier matched %s", got)
	}
	if got := name(tab.Match(only, packet(""))); got != "<nil>" {
		t.Errorf("missing identifier matched %s", got)
	}
	if got := name(tab.Match(only, packet("x"))); got != "only-ids" {
		t.Errorf("right identifier: %s", got)
	}
	// In ranges: the narrower prefix needs its identifier, else the wider one takes it.
	ap := netip.MustParseAddr("198.51.100.7")
	if got := name(tab.Match(ap, packet("ap-1"))); got != "range-id" {
		t.Errorf("range with identifier: %s", got)
	}
	if got := name(tab.Match(ap, packet("ap-2"))); got != "range" {
		t.Errorf("range fallback: %s", got)
	}
	// A malformed attribute list cannot select by identifier: only the catch-all matches.
	bad := append(packet(""), 32, 50, 'x')
	binary.BigEndian.PutUint16(bad[2:4], uint16(len(bad)))
	if got := name(tab.Match(addr, bad)); got != "catch-all" {
		t.Errorf("malformed packet: %s", got)
	}
}

func TestBuild(t *testing.T) {
	tab := build(t,
		config.Client{Name: "b", Address: "192.0.2.1", CoAPort: 1700},
		config.Client{Name: "a", Address: "192.0.2.0/24"},
	)
	all := tab.All()
	if len(all) != 2 || all[0].Name != "a" || all[1].Name != "b" {
		t.Fatalf("All (sorted by name): %v", []string{name(all[0]), name(all[1])})
	}
	if string(all[0].Secret) != topSecret {
		t.Fatalf("secret %q: trailing newline must be trimmed", all[0].Secret)
	}
	if all[0].CoAPort != 3799 || all[1].CoAPort != 1700 {
		t.Fatalf("CoA ports %d %d", all[0].CoAPort, all[1].CoAPort)
	}
	if !all[0].RequireMA {
		t.Fatal("RequireMA defaults to true")
	}
	if all[0].Prefix.String() != "192.0.2.0/24" {
		t.Fatal(all[0].Prefix)
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\r\n\n"), 0o600)
	good := secretFile(t, topSecret)
	cases := []struct {
		name string
		cs   []config.Client
		key  string
	}{
		{"bad address", []config.Client{{Name: "x", Address: "nope", SecretFile: good}}, "clients[0].address"},
		{"missing secret file", []config.Client{{Name: "ok", Address: "192.0.2.1", SecretFile: good}, {Name: "x", Address: "192.0.2.2", SecretFile: filepath.Join(dir, "missing")}}, "clients[1].secretFile"},
		{"empty secret", []config.Client{{Name: "x", Address: "192.0.2.1", SecretFile: empty}}, "clients[0].secretFile"},
		{"duplicate", []config.Client{{Name: "x", Address: "192.0.2.1", SecretFile: good}, {Name: "y", Address: "192.0.2.1/32", SecretFile: good}}, "clients[1]"},
		{"duplicate with id", []config.Client{{Name: "x", Address: "192.0.2.0/24", NASIdentifier: "n", SecretFile: good}, {Name: "y", Address: "192.0.2.9/24", NASIdentifier: "n", SecretFile: good}}, "clients[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(c.cs)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.HasPrefix(err.Error(), c.key) {
				t.Fatalf("error %q does not start with %s", err, c.key)
			}
			if strings.Contains(err.Error(), topSecret) {
				t.Fatal("error contains the secret")
			}
		})
	}
}

// Whatever goes wrong reading a secret, the error shows the path, never the content.
func TestReadSecretNeverLeaks(t *testing.T) {
	dir := t.TempDir()
	// A directory, a file of only newlines, a missing file.
	for _, p := range []string{dir, secretFile(t, "\n\n"), filepath.Join(dir, "nope")} {
		_, err := ReadSecret(p)
		if err == nil {
			t.Fatalf("%s: accepted", p)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name the file", err)
		}
	}
	s, err := ReadSecret(secretFile(t, topSecret+"\r\n"))
	if err != nil || string(s) != topSecret {
		t.Fatalf("%q %v", s, err)
	}
	// Inner whitespace and trailing spaces are part of the secret.
	s, _ = ReadSecret(secretFile(t, " a b \n"))
	if string(s) != " a b " {
		t.Fatalf("%q", s)
	}
}

// A client owns the addresses a request would be matched to it from: its own address or
// range, less what a more specific client or a NAS-Identifier-less client of the address
// takes. Copies of a client (RadSec's) keep its place; a client in no table owns nothing.
func TestOwns(t *testing.T) {
	tab := build(t,
		config.Client{Name: "pool", Address: "10.0.0.0/8"},
		config.Client{Name: "bng", Address: "10.1.1.2"},
		config.Client{Name: "natted", Address: "10.1.1.3", NASIdentifier: "n-1"},
		config.Client{Name: "twin", Address: "10.1.1.4"},
		config.Client{Name: "twin", Address: "10.1.1.5"},
	)
	by := func(addr string) *Client { return tab.Match(netip.MustParseAddr(addr), nil) }
	pool, bng, twin4 := by("10.9.9.9"), by("10.1.1.2"), by("10.1.1.4")
	cases := []struct {
		c    *Client
		addr string
		want bool
	}{
		{pool, "10.9.9.9", true},
		{pool, "10.1.1.2", false}, // bng's
		{pool, "10.1.1.3", true},  // natted takes only requests with its NAS-Identifier
		{pool, "192.0.2.1", false},
		{bng, "10.1.1.2", true},
		{bng, "10.9.9.9", false},
		{twin4, "10.1.1.5", false}, // same name, another client
		{pool, "", false},
	}
	for _, c := range cases {
		a, _ := netip.ParseAddr(c.addr)
		if got := c.c.Owns(a); got != c.want {
			t.Errorf("%s owns %s = %v, want %v", c.c.Name, c.addr, got, c.want)
		}
	}
	cp := *bng
	if !cp.Owns(netip.MustParseAddr("10.1.1.2")) {
		t.Error("a copy of the client lost its place")
	}
	if (&Client{Name: "bng", Prefix: netip.MustParsePrefix("10.1.1.2/32")}).Owns(netip.MustParseAddr("10.1.1.2")) {
		t.Error("a client in no table owns nothing")
	}
	if tab2 := NewTable(&Client{Name: "x", Prefix: netip.MustParsePrefix("192.0.2.0/24")}); !tab2.All()[0].Owns(netip.MustParseAddr("192.0.2.7")) {
		t.Error("NewTable: client does not own its range")
	}
}
