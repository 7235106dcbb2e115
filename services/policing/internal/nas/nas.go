// Package nas is the table of RADIUS clients (NAS devices): who may talk to us, with which
// shared secret, and how a NAS is told apart when several share one address.
package nas

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"sort"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
)

// Client is one configured NAS.
type Client struct {
	Name          string
	Prefix        netip.Prefix
	NASIdentifier string
	Secret        []byte
	RequireMA     bool
	// LimitProxyState drops Access-Requests with Proxy-State and without
	// Message-Authenticator (BlastRADIUS) when RequireMA is off.
	LimitProxyState bool
	CoAPort         int
	// table and id place the client in the table it was indexed in (Owns); copies of the
	// client keep them.
	table *Table
	id    int
}

// Table finds the client of a request. It is immutable; reloads build a new one.
type Table struct {
	exact    map[netip.Addr][]*Client
	prefixes []*Client // longest prefix first
	byName   map[string]*Client
}

// Build reads every secret file and indexes the clients. Errors name the client key.
func Build(cfgs []config.Client) (*Table, error) {
	var cs []*Client
	seen := map[string]string{}
	for i, c := range cfgs {
		key := fmt.Sprintf("clients[%d]", i)
		if c.Origin != "" {
			key = c.Origin // a client of clientsFile: its file and index there
		}
		p, err := config.ParseClientAddress(c.Address)
		if err != nil {
			return nil, fmt.Errorf("%s.address: %q is not an IP address or CIDR", key, c.Address)
		}
		secret, err := ReadSecret(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("%s.secretFile: %w", key, err)
		}
		id := p.String() + "|" + c.NASIdentifier
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("%s: same address and nasIdentifier as %s", key, prev)
		}
		seen[id] = key
		coa := c.CoAPort
		if coa == 0 {
			coa = config.DefaultCoAPort
		}
		cs = append(cs, &Client{Name: c.Name, Prefix: p, NASIdentifier: c.NASIdentifier, Secret: secret,
			RequireMA: c.RequiresMessageAuthenticator(), LimitProxyState: c.LimitsProxyState(), CoAPort: coa})
	}
	return NewTable(cs...), nil
}

// NewTable indexes clients (Build, or tests). The table owns them from then on.
func NewTable(cs ...*Client) *Table {
	t := &Table{exact: map[netip.Addr][]*Client{}, byName: map[string]*Client{}}
	for i, cl := range cs {
		cl.table, cl.id = t, i
		if _, dup := t.byName[cl.Name]; !dup {
			t.byName[cl.Name] = cl
		}
		if p := cl.Prefix; p.IsSingleIP() {
			t.exact[p.Addr()] = append(t.exact[p.Addr()], cl)
		} else {
			t.prefixes = append(t.prefixes, cl)
		}
	}
	sort.SliceStable(t.prefixes, func(i, j int) bool { return t.prefixes[i].Prefix.Bits() > t.prefixes[j].Prefix.Bits() })
	return t
}

// Owns reports whether addr is this client's own: a request from addr (without
// NAS-Identifier) would be taken as this client's, in the table the client came from. A
// NAS may name only its own address as NAS-IP-Address and be trusted with it (session
// keys, Accounting-On): the shared secret proves the client, not the address it claims.
func (c *Client) Owns(addr netip.Addr) bool {
	if c.table == nil || !addr.IsValid() {
		return false
	}
	m := c.table.Match(addr, nil)
	return m != nil && m.id == c.id
}

// ReadSecret reads a shared secret from a file; trailing newlines are not part of it.
// The error never contains the secret.
func ReadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return b, nil
}

// Match returns the client for a request from addr; pkt is consulted for NAS-Identifier
// only when several NAS share the address. nil means unknown client.
func (t *Table) Match(addr netip.Addr, pkt []byte) *Client {
	addr = addr.Unmap()
	if cs, ok := t.exact[addr]; ok {
		if c := pick(cs, pkt); c != nil {
			return c
		}
	}
	for _, c := range t.prefixes {
		if c.Prefix.Contains(addr) {
			if c2 := pick([]*Client{c}, pkt); c2 != nil {
				return c2
			}
		}
	}
	return nil
}

// pick chooses among clients of one address: the one whose NAS-Identifier the packet
// carries, else the one configured without a NAS-Identifier.
func pick(cs []*Client, pkt []byte) *Client {
	if len(cs) == 1 && cs[0].NASIdentifier == "" {
		return cs[0]
	}
	var id string
	if off, l, err := radiusx.FindAttr(pkt, 32); err == nil && off >= 0 {
		id = string(pkt[off : off+l])
	}
	var fallback *Client
	for _, c := range cs {
		switch c.NASIdentifier {
		case "":
			fallback = c
		case id:
			return c
		}
	}
	return fallback
}

// Named returns the first client of that name, nil if none (a round another node
// forwarded names its NAS so).
func (t *Table) Named(name string) *Client { return t.byName[name] }

// All returns every client (for the admin API and CoA).
func (t *Table) All() []*Client {
	var out []*Client
	for _, cs := range t.exact {
		out = append(out, cs...)
	}
	out = append(out, t.prefixes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
