package dict

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"layeh.com/radius"
)

// writeTree writes files (relative path → text) under a temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A tree with what FreeRADIUS 3.2's dictionaries use beyond the library's parser: relative
// includes from a subdirectory, vendor formats, extended attributes, new types and flags.
var tree = map[string]string{
	"dictionary": `
# top level
$INCLUDE vendors/dictionary.formats
$INCLUDE vendors/dictionary.ext
$INCLUDE- dictionary.absent
$INCLUDE- dictionary.local
BEGIN-PROTOCOL RADIUS
ATTRIBUTE	Odd-Type		200	fancytype
ATTRIBUTE	Odd-Flag		201	string	sparkly
ATTRIBUTE	Cisco-AVPair		1	integer
ATTRIBUTE	Framed-MTU		12	integer
`,
	"dictionary.local": "ATTRIBUTE\tLocal-Attr\t202\tstring\n",
	"vendors/dictionary.formats": `
$INCLUDE dictionary.more
VENDOR		Lucent		4846	format=2,1
VENDOR		USR		429	format=4,0
VENDOR		Starent		8164	format=2,2
VENDOR		WiMAX		24757	format=1,1,c
VENDOR		Starent-Alias	8164	format=2,2
VENDOR		Broken		99	format=3,1
BEGIN-VENDOR	Lucent
ATTRIBUTE	Lucent-Thing		300	string
ATTRIBUTE	Lucent-Small		2	short
END-VENDOR	Lucent
BEGIN-VENDOR	USR
ATTRIBUTE	USR-Number		0x9800	integer
ATTRIBUTE	USR-Count		38912	integer
VALUE	USR-Count		Seven		0x7
END-VENDOR	USR
BEGIN-VENDOR	Starent-Alias
ATTRIBUTE	SN-Thing		5	string
END-VENDOR	Starent-Alias
BEGIN-VENDOR	WiMAX
ATTRIBUTE	WiMAX-Capability	1	tlv
ATTRIBUTE	WiMAX-Release		1.1	string
ATTRIBUTE	WiMAX-Hotline		24	byte
END-VENDOR	WiMAX
BEGIN-VENDOR	Broken
ATTRIBUTE	Broken-Attr		1	string
END-VENDOR	Broken
`,
	"vendors/dictionary.more": `
VENDOR		ALU-AAA		831
BEGIN-VENDOR	ALU-AAA
ATTRIBUTE	ALU-AAA-Client-IP	1	combo-ip
ATTRIBUTE	ALU-AAA-Stamp		2	date
END-VENDOR	ALU-AAA
ATTRIBUTE	Some-Internal		1050	string	virtual
ATTRIBUTE	Tunnel-Password		69	string	has_tag,encrypt=2
ATTRIBUTE	Delegated-IPv6-Prefix	123	ipv6prefix	array
`,
	"vendors/dictionary.ext": `
ATTRIBUTE	Extended-Attribute-1	241	extended
ATTRIBUTE	Extended-Attribute-5	245	long-extended
ATTRIBUTE	Extended-Vendor-Specific-1	241.26	evs
ATTRIBUTE	Frag-Status		241.1	integer
ATTRIBUTE	Long-Thing		245.3	string
VENDOR		Acme		99999
BEGIN-VENDOR	Acme	format=Extended-Vendor-Specific-1
ATTRIBUTE	Acme-Evs		7	string
END-VENDOR	Acme
`,
}

func TestLoadTree(t *testing.T) {
	dir := writeTree(t, tree)
	d, err := Load([]string{filepath.Join(dir, "dictionary")})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, value string
		typ         radius.Type
		want        []byte
	}{
		// format=2,1: two type octets, one length octet
		{"Lucent-Thing", "ab", 26, []byte{0, 0, 0x12, 0xee, 0x01, 0x2c, 5, 'a', 'b'}},
		{"Lucent-Small", "513", 26, []byte{0, 0, 0x12, 0xee, 0, 2, 5, 2, 1}},
		// format=4,0: four type octets, no length
		{"USR-Number", "7", 26, []byte{0, 0, 0x01, 0xad, 0, 0, 0x98, 0, 0, 0, 0, 7}},
		{"USR-Count", "Seven", 26, []byte{0, 0, 0x01, 0xad, 0, 0, 0x98, 0, 0, 0, 0, 7}},
		// format=2,2 through the vendor's second name
		{"SN-Thing", "x", 26, []byte{0, 0, 0x1f, 0xe4, 0, 5, 0, 5, 'x'}},
		// format=1,1,c: a continuation octet after the length
		{"WiMAX-Hotline", "3", 26, []byte{0, 0, 0x60, 0xb5, 24, 4, 0, 3}},
		{"ALU-AAA-Client-IP", "192.0.2.1", 26, []byte{0, 0, 0x03, 0x3f, 1, 6, 192, 0, 2, 1}},
		{"ALU-AAA-Client-IP", "2001:db8::1", 26, append([]byte{0, 0, 0x03, 0x3f, 1, 18}, mustIP16("2001:db8::1")...)},
		{"ALU-AAA-Stamp", "1700000000", 26, []byte{0, 0, 0x03, 0x3f, 2, 6, 0x65, 0x53, 0xf1, 0x00}},
		{"ALU-AAA-Stamp", "2023-11-14T22:13:20Z", 26, []byte{0, 0, 0x03, 0x3f, 2, 6, 0x65, 0x53, 0xf1, 0x00}},
		// RFC 6929 extended, long extended (flags octet), extended vendor-specific
		{"Frag-Status", "2", 241, []byte{1, 0, 0, 0, 2}},
		{"Long-Thing", "z", 245, []byte{3, 0, 'z'}},
		{"Acme-Evs", "q", 241, []byte{26, 0, 0x01, 0x86, 0x9f, 7, 'q'}},
		{"Local-Attr", "l", 202, []byte("l")},
		{"Delegated-IPv6-Prefix", "2001:db8::/32", 123, []byte{0, 32, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		a, ok := d.Lookup(c.name)
		if !ok {
			t.Errorf("%s not loaded", c.name)
			continue
		}
		e, err := a.Encode(c.value)
		if err != nil || e.Type != c.typ || !bytes.Equal(e.Value, c.want) {
			t.Errorf("%s=%s: type %d % x (%v), want type %d % x", c.name, c.value, e.Type, []byte(e.Value), err, c.typ, c.want)
			continue
		}
		// and Find reads it back
		raw, ok := a.Find(radius.Attributes{{Type: e.Type, Attribute: e.Value}})
		if !ok {
			t.Errorf("%s: Find does not read back its own encoding", c.name)
		} else if v, ok := a.Decode(raw); !ok || (!v.IsNum && v.Str == "") {
			t.Errorf("%s: Decode %+v %v", c.name, v, ok)
		}
	}
	// Loaded, but a profile cannot send them: the reason names what they are.
	for name, why := range map[string]string{
		"WiMAX-Release":        "TLV",
		"WiMAX-Capability":     "container",
		"Some-Internal":        "virtual",
		"Tunnel-Password":      "encrypt=2",
		"Extended-Attribute-1": "container",
	} {
		a, ok := d.Lookup(name)
		if !ok {
			t.Errorf("%s not loaded", name)
			continue
		}
		if _, err := a.Encode("1"); err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming it and %q", name, err, why)
		}
	}
	// The built-in definition is replaced by the file's (Cisco-AVPair as an integer here);
	// an identical one changes nothing.
	if a, _ := d.Lookup("Cisco-AVPair"); a.Vendor != 0 || a.Type != 1 || a.Kind() != "integer" {
		t.Errorf("Cisco-AVPair from the file: %+v", a)
	}
	st := d.Stats()
	for _, reason := range []string{"ATTRIBUTE of an unknown type", "ATTRIBUTE with an unknown flag",
		"BEGIN-PROTOCOL (FreeRADIUS 4 syntax)", "VENDOR format not of the form format=T,L[,c]",
		"BEGIN-VENDOR of a vendor not defined"} {
		if st.Skipped[reason] == 0 {
			t.Errorf("no skip counted for %q: %v", reason, st.Skipped)
		}
	}
	for _, n := range []string{"Odd-Type", "Odd-Flag", "Broken-Attr"} {
		if _, ok := d.Lookup(n); ok {
			t.Errorf("%s loaded from a skipped line", n)
		}
	}
	want := []string{"dictionary", "vendors/dictionary.formats", "vendors/dictionary.more", "vendors/dictionary.ext", "dictionary.local"}
	if len(st.Files) != len(want) {
		t.Fatalf("files %v", st.Files)
	}
	for i, w := range want {
		if st.Files[i] != filepath.Join(dir, w) {
			t.Errorf("file %d: %s, want %s", i, st.Files[i], w)
		}
	}
}

func mustIP16(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

func TestLoadErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"loop":    "$INCLUDE loop2\n",
		"loop2":   "$INCLUDE loop\n",
		"missing": "ATTRIBUTE\tA\t200\tstring\n$INCLUDE nowhere\n",
	})
	for file, want := range map[string]string{"loop": "includes itself", "missing": "nowhere"} {
		if _, err := Load([]string{filepath.Join(dir, file)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", file, err, want)
		}
	}
	if _, err := Load([]string{filepath.Join(dir, "absent")}); err == nil {
		t.Error("a missing dictionary file loaded")
	}
}

// Values that do not fit the type or the vendor's format are refused, naming the attribute.
func TestEncodeNewTypesErrors(t *testing.T) {
	d, err := Load([]string{filepath.Join(writeTree(t, tree), "dictionary")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{
		{"Lucent-Small", "65536"}, {"WiMAX-Hotline", "256"}, {"ALU-AAA-Client-IP", "nope"},
		{"ALU-AAA-Stamp", "yesterday"}, {"Lucent-Thing", strings.Repeat("x", 247)}, {"Acme-Evs", strings.Repeat("x", 248)},
	} {
		a, _ := d.Lookup(c[0])
		if _, err := a.Encode(c[1]); err == nil || !strings.Contains(err.Error(), c[0]) {
			t.Errorf("%s=%.20q: %v", c[0], c[1], err)
		}
	}
}
