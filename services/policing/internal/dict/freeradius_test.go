package dict

// The dictionary tree of Debian's freeradius-common loads, and attributes encode on the wire
// byte for byte as FreeRADIUS's own encoder (radclient, freeradius-utils) encodes them.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/testenv"
)

const freeradiusDir = "/usr/share/freeradius"

func freeradiusTree(t *testing.T) string {
	t.Helper()
	top := filepath.Join(freeradiusDir, "dictionary")
	_, err := os.Stat(top)
	testenv.Need(t, err == nil, "FreeRADIUS's dictionary tree "+freeradiusDir+" (Debian freeradius-common: hack/freeradius.sh install)")
	return top
}

// Every file of the tree loads: the top-level dictionary with its $INCLUDEs, and each file
// it does not include (alternatives that conflict with the included ones) on its own.
func TestFreeRADIUSTreeLoads(t *testing.T) {
	top := freeradiusTree(t)
	d, err := Load([]string{top})
	if err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	read := map[string]bool{}
	for _, f := range st.Files {
		read[f] = true
	}
	all, _ := filepath.Glob(filepath.Join(freeradiusDir, "dictionary*"))
	var alone []string
	for _, f := range all {
		if !read[f] {
			alone = append(alone, f)
		}
	}
	t.Logf("%d attributes from %d files (%d more not included by the top level); %d lines skipped",
		st.Attributes, len(st.Files), len(alone), st.SkippedTotal())
	for _, r := range st.Reasons() {
		t.Logf("  skipped %4d × %s (e.g. %s)", st.Skipped[r], r, st.Examples[r])
	}
	if len(st.Files) < 200 || st.Attributes < 7000 {
		t.Fatalf("only %d files, %d attributes read", len(st.Files), st.Attributes)
	}
	// Debian 12's tree (3.2.1) loads whole: a line skipped means the loader lost something.
	for r, n := range st.Skipped {
		t.Errorf("%d lines skipped: %s (e.g. %s)", n, r, st.Examples[r])
	}
	for _, f := range alone {
		ds, err := Load([]string{f})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		t.Logf("%s alone: %d attributes, %d lines skipped", filepath.Base(f), ds.Stats().Attributes, ds.Stats().SkippedTotal())
		for _, r := range ds.Stats().Reasons() {
			t.Logf("  skipped %4d × %s (e.g. %s)", ds.Stats().Skipped[r], r, ds.Stats().Examples[r])
		}
	}
}

// wireCase is one attribute as a profile gives it and as radclient's input writes it.
type wireCase struct {
	name, value string
	tag         int
	fr          string // the value in FreeRADIUS syntax when it differs (quoted strings)
}

func (c wireCase) line() string {
	name := c.name
	if c.tag != 0 {
		name = fmt.Sprintf("%s:%d", c.name, c.tag)
	}
	v := c.fr
	if v == "" {
		v = c.value
	}
	return name + " += " + v
}

func str(name, value string) wireCase {
	return wireCase{name: name, value: value, fr: `"` + value + `"`}
}

var wireCases = []wireCase{
	// Cisco: the AVPair list of a BNG profile, repeated in order
	str("Cisco-AVPair", "ip:addr-pool=gold"),
	str("Cisco-AVPair", "subscriber:accounting-list=acct"),
	str("Cisco-AVPair", "ip:vrf-id=inet"),
	{name: "Cisco-Account-Info", value: "QU;10000000;D;20000000", fr: `"QU;10000000;D;20000000"`},
	// Juniper ERX: tagged service activations, QoS, DNS
	{name: "ERX-Service-Activate", value: "svc-internet(10M,20M)", tag: 1, fr: `"svc-internet(10M,20M)"`},
	{name: "ERX-Service-Activate", value: "svc-voip", tag: 2, fr: `"svc-voip"`},
	{name: "ERX-Service-Statistics", value: "time-volume", tag: 1},
	str("ERX-Qos-Profile-Name", "gold"),
	{name: "ERX-Primary-Dns", value: "192.0.2.53"},
	{name: "ERX-Ipv6-Primary-Dns", value: "2001:db8::53"},
	{name: "ERX-IPv6-NdRa-Prefix", value: "2001:db8:1:2::/64"},
	// Huawei
	{name: "Huawei-Input-Average-Rate", value: "10000000"},
	{name: "Huawei-Output-Average-Rate", value: "20000000"},
	str("Huawei-Policy-Name", "gold-policy"),
	str("Huawei-Domain-Name", "isp.example"),
	{name: "Huawei-Framed-IPv6-Address", value: "2001:db8::2"},
	{name: "Huawei-IPv6-Policy-Route", value: "2001:db8:aa::/48"},
	// Nokia / Alcatel-Lucent service router (Timetra), and Alcatel-Lucent's AAA vendor
	str("Alc-SLA-Prof-Str", "sla-100M"),
	str("Alc-Subsc-Prof-Str", "residential"),
	{name: "Alc-Primary-Dns", value: "192.0.2.1"},
	{name: "Alc-Ipv6-Primary-Dns", value: "2001:db8::1"},
	{name: "Alc-Tunnel-Max-Sessions", value: "10", tag: 3},
	{name: "ALU-AAA-Address-0", value: "192.0.2.7"},
	{name: "ALU-AAA-Address-1", value: "2001:db8::7"},
	{name: "ALU-AAA-DF-CC-Port", value: "4000"},
	{name: "ALU-AAA-Lawful-Intercept-Status", value: "1"},
	// Ericsson (and Ericsson-AB, formerly Redback)
	{name: "Ericsson-ViG-Balance", value: "17"},
	str("Context-Name", "internet"),
	str("Qos-Policy-Queuing", "q-gold"),
	{name: "Acct-Input-Octets-64", value: "5000000000"},
	{name: "Tunnel-Hello-Timer", value: "60", tag: 1},
	// 3GPP
	str("3GPP-Charging-Characteristics", "0800"),
	{name: "3GPP-RAT-Type", value: "EUTRAN"},
	{name: "3GPP-MS-Time-Zone", value: "0x8000"},
	{name: "3GPP-Negotiated-DSCP", value: "46"},
	// Microsoft
	{name: "MS-Primary-DNS-Server", value: "192.0.2.8"},
	{name: "MS-Acct-EAP-Type", value: "MD5"},
	str("MS-CHAP-Error", "E=691 R=0"),
	{name: "MS-Filter", value: "0x0102030405"},
	// vendor formats: 2,1 (Lucent), 4,0 (USR), 2,2 (Starent), 1,1,c (WiMAX)
	{name: "Lucent-Max-Shared-Users", value: "4"},
	str("USR-Last-Number-Dialed-Out", "5551234"),
	{name: "SN-VPN-ID", value: "12"},
	{name: "SN-Assigned-VLAN-ID", value: "100"},
	{name: "WiMAX-Device-Authentication-Indicator", value: "1"},
	{name: "WiMAX-GMT-Timezone-offset", value: "-3600"},
	// standard attributes of every type
	{name: "Service-Type", value: "Framed-User"},
	{name: "Framed-MTU", value: "1492"},
	{name: "Framed-IPv6-Prefix", value: "2001:db8:aa::/48"},
	{name: "Framed-IPv6-Prefix", value: "2001:db8:aa:bb::/64"},
	{name: "Delegated-IPv6-Prefix", value: "2001:db8:aa:bb00::/56"},
	{name: "Framed-Interface-Id", value: "0000:0000:0000:0001"},
	{name: "Event-Timestamp", value: "1700000000"},
	{name: "PMIP6-Home-IPv4-HoA", value: "10.1.0.0/16"},
	{name: "Fortinet-WirelessController-Device-MAC", value: "00:11:22:aa:bb:cc"},
	{name: "Tunnel-Type", value: "VLAN", tag: 1},
	{name: "Tunnel-Medium-Type", value: "IEEE-802", tag: 1},
	{name: "Tunnel-Private-Group-Id", value: "100", tag: 1, fr: `"100"`},
	// tag 0: a string without its tag octet, an integer with 0 in the high octet
	{name: "Tunnel-Private-Group-Id", value: "200", fr: `"200"`},
	{name: "Tunnel-Type", value: "VLAN"},
	{name: "ERX-Service-Activate", value: "svc", fr: `"svc"`},
	// RFC 6929 extended attribute, and an extended vendor-specific one (245.26)
	{name: "Frag-Status", value: "1"},
	{name: "FreeRADIUS-802.1X-EAPoL-Key-Msg", value: "0x0102"},
}

// radclientEncodes sends lines as one Access-Request with radclient to a UDP listener of
// ours and returns the attributes it encoded, in order.
func radclientEncodes(t *testing.T, lines []string) radius.Attributes {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils: hack/freeradius.sh install")
	const secret = "dict-secret"
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := make(chan *radius.Packet, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			p, err := radius.Parse(buf[:n], []byte(secret))
			if err != nil {
				continue
			}
			select {
			case got <- p:
			default:
			}
			if b, err := p.Response(radius.CodeAccessReject).Encode(); err == nil {
				_, _ = conn.WriteTo(b, from)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-r", "1", "-t", "3", conn.LocalAddr().String(), "auth", secret)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, _ := cmd.CombinedOutput() // exits non-zero on the reject
	select {
	case p := <-got:
		var attrs radius.Attributes
		for _, a := range p.Attributes {
			if a.Type != 80 { // a Message-Authenticator radclient may add
				attrs = append(attrs, a)
			}
		}
		return attrs
	default:
		t.Fatalf("radclient sent nothing:\n%s", out)
	}
	return nil
}

// matchesFreeRADIUS encodes cases with d and has radclient encode the same lines: the
// attributes must be the same, byte for byte, in order.
func matchesFreeRADIUS(t *testing.T, d *Dict, cases []wireCase) {
	t.Helper()
	lines := make([]string, len(cases))
	want := make([]Encoded, len(cases))
	for i, c := range cases {
		a, ok := d.Lookup(c.name)
		if !ok {
			t.Fatalf("%s not in the loaded dictionaries", c.name)
		}
		e, err := a.EncodeTag(c.value, c.tag)
		if err != nil {
			t.Fatalf("%s: %v", c.line(), err)
		}
		lines[i], want[i] = c.line(), e
	}
	got := radclientEncodes(t, lines)
	if len(got) != len(want) {
		t.Fatalf("radclient sent %d attributes for %d lines", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Type != w.Type || !bytes.Equal(got[i].Attribute, w.Value) {
			t.Errorf("%s:\n  FreeRADIUS type %d % x\n  ours       type %d % x", lines[i], got[i].Type, []byte(got[i].Attribute), w.Type, []byte(w.Value))
		}
	}
}

// Each attribute encodes as FreeRADIUS encodes it: radclient reads the same attributes from
// its own copy of the dictionaries and sends them; the bytes must be ours.
func TestEncodeMatchesFreeRADIUS(t *testing.T) {
	d, err := Load([]string{freeradiusTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	matchesFreeRADIUS(t, d, wireCases)
}

// The values every attribute of a vendor's dictionary takes: each attribute of the named
// vendors that a profile can send, with a sample value of its type, encodes as FreeRADIUS
// encodes it (one Access-Request per vendor, within the 4096-octet limit).
func TestVendorDictionariesMatchFreeRADIUS(t *testing.T) {
	d, err := Load([]string{freeradiusTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	sample := map[string][2]string{
		"string": {"abc", `"abc"`}, "octets": {"0x0a0b", ""}, "integer": {"7", ""}, "ipaddr": {"192.0.2.9", ""},
		"ipv6addr": {"2001:db8::9", ""}, "ipv6prefix": {"2001:db8:9::/48", ""}, "byte": {"9", ""}, "short": {"300", ""},
		"integer64": {"4294967296", ""}, "date": {"1700000000", ""}, "combo-ip": {"192.0.2.10", ""}, "signed": {"-5", ""},
		"ifid": {"0000:0000:0000:0009", ""}, "ether": {"00:11:22:33:44:55", ""}, "ipv4prefix": {"10.9.0.0/16", ""}, "abinary": {"0x0101", ""},
	}
	vendors := map[uint32]string{2011: "Huawei", 6527: "Alcatel-Lucent-Service-Router", 831: "ALU-AAA", 193: "Ericsson",
		2352: "Ericsson-AB", 4874: "ERX", 9: "Cisco", 10415: "3GPP", 311: "Microsoft"}
	byVendor := map[uint32][]wireCase{}
	for _, n := range d.Names() {
		a, _ := d.Lookup(n)
		if vendors[a.Vendor] == "" || a.noWire != "" || a.ext != 0 {
			continue
		}
		s, ok := sample[a.Kind()]
		if !ok {
			continue
		}
		c := wireCase{name: n, value: s[0], fr: s[1]}
		if a.tagged {
			c.tag = 1
			if a.Kind() == "string" || a.Kind() == "octets" {
				c.fr = `"abc"`
				c.value = "abc"
			}
		}
		byVendor[a.Vendor] = append(byVendor[a.Vendor], c)
	}
	ids := make([]int, 0, len(byVendor))
	for v := range byVendor {
		ids = append(ids, int(v))
	}
	sort.Ints(ids)
	if len(ids) != len(vendors) {
		t.Fatalf("vendors with sendable attributes: %v, want all of %v", ids, vendors)
	}
	for _, id := range ids {
		cases := byVendor[uint32(id)]
		t.Run(vendors[uint32(id)], func(t *testing.T) {
			for len(cases) > 0 { // batches that fit one packet
				n := min(len(cases), 100)
				matchesFreeRADIUS(t, d, cases[:n])
				cases = cases[n:]
			}
			t.Logf("%d attributes compared", len(byVendor[uint32(id)]))
		})
	}
}
