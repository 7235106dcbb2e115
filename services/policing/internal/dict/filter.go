package dict

import (
	"fmt"
	"strconv"
	"strings"

	"layeh.com/radius/dictionary"
)

// The filter rewrites each dictionary file into what layeh.com/radius/dictionary parses,
// keeping aside what the library has no field for, and drops (counted by reason) the lines
// neither can use. It sees the files in the order the library parses them.

// Types the library does not have (numbered above its own).
const (
	kindComboIP dictionary.AttributeType = 100 + iota
	kindExtended
	kindLongExtended
	kindEVS
)

func kindName(k dictionary.AttributeType) string {
	switch k {
	case kindComboIP:
		return "combo-ip"
	case kindExtended:
		return "extended"
	case kindLongExtended:
		return "long-extended"
	case kindEVS:
		return "evs"
	}
	return k.String()
}

// extra is what an ATTRIBUTE line says beyond the library's fields.
type extra struct {
	kind    dictionary.AttributeType // 0: the library's type stands
	virtual bool
	evs     int // in an Extended-Vendor-Specific-N block: the extended attribute (241 + N - 1)
}

type vendorFormat struct {
	typeLen, lenLen int
	cont            bool
}

// definition is an ATTRIBUTE or VENDOR line as first seen, to tell an identical
// redefinition (dropped silently) from a conflicting one (skipped, counted).
type definition struct {
	text    string
	builtin bool
}

type filter struct {
	skip       func(where, reason string)
	extra      map[string]extra
	vendors    map[string]vendorFormat // by canonical name
	vendorNums map[int]string          // number → canonical name
	vendorNum  map[string]int          // canonical name → number
	emitted    map[string]bool         // vendors declared to the library in this parse
	aliases    map[string]string       // a second name of a vendor number → canonical
	attrs      map[string]definition
	extParents map[int]dictionary.AttributeType // extended / long-extended attribute numbers
}

func newFilter(skip func(where, reason string)) *filter {
	return &filter{skip: skip, extra: map[string]extra{}, vendors: map[string]vendorFormat{},
		vendorNums: map[int]string{}, vendorNum: map[string]int{}, emitted: map[string]bool{}, aliases: map[string]string{}, attrs: map[string]definition{},
		extParents: map[int]dictionary.AttributeType{}}
}

// Types the library knows, by their FreeRADIUS name, and the FreeRADIUS 4 names of some.
var libraryTypes = map[string]string{
	"string": "string", "octets": "octets", "ipaddr": "ipaddr", "date": "date", "integer": "integer",
	"ipv6addr": "ipv6addr", "ipv6prefix": "ipv6prefix", "ifid": "ifid", "integer64": "integer64",
	"ether": "ether", "abinary": "abinary", "byte": "byte", "short": "short", "signed": "signed",
	"tlv": "tlv", "ipv4prefix": "ipv4prefix", "vsa": "vsa",
	"uint8": "byte", "uint16": "short", "uint32": "integer", "uint64": "integer64", "int32": "signed",
}

// Ours, passed to the library as a type with the same layout.
var ownTypes = map[string]struct {
	kind dictionary.AttributeType
	as   string
}{
	"combo-ip":      {kindComboIP, "octets"},
	"extended":      {kindExtended, "tlv"},
	"long-extended": {kindLongExtended, "tlv"},
	"evs":           {kindEVS, "vsa"},
}

// startParse begins a top-level file: the library knows no vendor yet.
func (f *filter) startParse() { f.emitted = map[string]bool{} }

// declare is the VENDOR line of a vendor known from an earlier top-level file (the built-in
// dictionary) that this one uses without declaring it again.
func (f *filter) declare(name string) string {
	if f.emitted[name] {
		return ""
	}
	f.emitted[name] = true
	return "VENDOR " + name + " " + strconv.Itoa(f.vendorNum[name]) + "\n"
}

// rewrite filters one file. exists tells whether an optional include ($INCLUDE-) is there.
func (f *filter) rewrite(path, text string, builtin bool, exists func(string) bool) string {
	var out strings.Builder
	var block string // the vendor block we are in (canonical name), "" outside
	var evs int      // its Extended-Vendor-Specific attribute, 0 for a plain vendor block
	var dropBlock string
	tlvDepth := 0
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		where := fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line))
		skip := func(reason string) { f.skip(where, reason) }
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		emit := ""
		switch {
		case len(fields) == 0:
		case dropBlock != "":
			// Inside a vendor block whose vendor is unknown: dropped with its BEGIN line.
			if fields[0] == "END-VENDOR" {
				dropBlock = ""
			}
			skip("inside a vendor block of an unknown vendor")
		case tlvDepth > 0 || fields[0] == "BEGIN-TLV":
			switch fields[0] {
			case "BEGIN-TLV":
				tlvDepth++
			case "END-TLV":
				tlvDepth--
			}
			skip("BEGIN-TLV block (old TLV syntax; TLV members cannot be sent from a profile)")
		case fields[0] == "$INCLUDE" || fields[0] == "$INCLUDE-":
			switch {
			case len(fields) != 2:
				skip("$INCLUDE without exactly one file")
			case block != "":
				skip("$INCLUDE inside a vendor block")
			case fields[0] == "$INCLUDE-" && !exists(fields[1]):
				// Optional and absent: nothing to read.
			default:
				emit = "$INCLUDE " + fields[1]
			}
		case fields[0] == "VENDOR":
			emit = f.vendor(fields, skip)
		case fields[0] == "BEGIN-VENDOR":
			if block != "" {
				skip("BEGIN-VENDOR inside a vendor block")
				break
			}
			name, ok := f.canonical(fields[1:])
			if !ok {
				skip("BEGIN-VENDOR of a vendor not defined")
				dropBlock = "?"
				break
			}
			evs = 0
			if len(fields) == 3 {
				n, ok := strings.CutPrefix(fields[2], "format=Extended-Vendor-Specific-")
				k, err := strconv.Atoi(n)
				if !ok || err != nil || k < 1 || k > 6 {
					skip("BEGIN-VENDOR with an unknown format")
					dropBlock = name
					break
				}
				evs = 240 + k
			}
			block = name
			emit = f.declare(name) + "BEGIN-VENDOR " + name
		case fields[0] == "END-VENDOR":
			name, _ := f.canonical(fields[1:])
			if block == "" || name != block {
				skip("END-VENDOR without its BEGIN-VENDOR")
				break
			}
			block, evs = "", 0
			emit = "END-VENDOR " + name
		case fields[0] == "ATTRIBUTE":
			emit = f.attribute(fields, builtin, block, evs, skip)
		case fields[0] == "VALUE":
			if len(fields) != 4 {
				skip("VALUE without exactly attribute, name and number")
				break
			}
			if _, err := strconv.ParseUint(strings.TrimPrefix(fields[3], "0x"), base(fields[3]), 32); err != nil {
				skip("VALUE number not a 32-bit unsigned number")
				break
			}
			emit = strings.Join(fields, " ")
		case fields[0] == "BEGIN-PROTOCOL", fields[0] == "END-PROTOCOL", fields[0] == "PROTOCOL",
			fields[0] == "FLAGS", fields[0] == "ENUM", fields[0] == "ALIAS", fields[0] == "STRUCT",
			fields[0] == "MEMBER", fields[0] == "DEFINE":
			skip(fields[0] + " (FreeRADIUS 4 syntax)")
		default:
			skip("unknown keyword " + fields[0])
		}
		out.WriteString(emit) // blank for dropped lines: the library's line numbers stay right
		out.WriteByte('\n')
	}
	if block != "" { // the library refuses an unclosed block; FreeRADIUS too, but say why
		f.skip(path, "vendor block not closed at the end of its file")
		out.WriteString("END-VENDOR " + block + "\n")
	}
	return out.String()
}

func base(s string) int {
	if strings.HasPrefix(s, "0x") {
		return 16
	}
	return 10
}

// canonical names the vendor of a BEGIN-/END-VENDOR line.
func (f *filter) canonical(rest []string) (string, bool) {
	if len(rest) == 0 {
		return "", false
	}
	if c, ok := f.aliases[rest[0]]; ok {
		return c, true
	}
	_, ok := f.vendors[rest[0]]
	return rest[0], ok
}

func (f *filter) vendor(fields []string, skip func(string)) string {
	if len(fields) != 3 && len(fields) != 4 {
		skip("VENDOR without exactly name, number and format")
		return ""
	}
	num, err := strconv.Atoi(fields[2])
	if err != nil || num < 1 || num > 1<<24-1 {
		skip("VENDOR number not a vendor number")
		return ""
	}
	format := vendorFormat{typeLen: 1, lenLen: 1}
	if len(fields) == 4 {
		ft, ok := parseVendorFormat(fields[3])
		if !ok {
			skip("VENDOR format not of the form format=T,L[,c]")
			return ""
		}
		format = ft
	}
	name := fields[1]
	if old, ok := f.vendors[name]; ok {
		if f.vendorNums[num] != name || old != format {
			skip("VENDOR defined again with another number or format (first kept)")
			return ""
		}
		return strings.TrimSuffix(f.declare(name), "\n")
	}
	if c, ok := f.vendorNums[num]; ok {
		// A second name of the same vendor (FreeRADIUS allows it): blocks under either name
		// add to the same vendor.
		if f.vendors[c] != format {
			skip("VENDOR number defined again with another format (first kept)")
			return ""
		}
		f.aliases[name] = c
		return ""
	}
	f.vendors[name] = format
	f.vendorNums[num] = name
	f.vendorNum[name] = num
	f.emitted[name] = true
	// The format stays with us: the library's check of it refuses ",c".
	return "VENDOR " + name + " " + fields[2]
}

func (f *filter) attribute(fields []string, builtin bool, block string, evs int, skip func(string)) string {
	if len(fields) != 4 && len(fields) != 5 {
		skip("ATTRIBUTE without exactly name, number, type and flags")
		return ""
	}
	name, oid, typ := fields[1], fields[2], strings.ToLower(fields[3])
	oid, ok := normalOID(oid)
	if !ok {
		skip("ATTRIBUTE number not a number or dotted numbers")
		return ""
	}
	x := extra{evs: evs}
	switch {
	case libraryTypes[typ] != "":
		typ = libraryTypes[typ]
	case ownTypes[typ].as != "":
		x.kind, typ = ownTypes[typ].kind, ownTypes[typ].as
	case strings.HasPrefix(typ, "octets[") && strings.HasSuffix(typ, "]"):
	default:
		skip("ATTRIBUTE of an unknown type")
		return ""
	}
	var flags []string
	if len(fields) == 5 {
		for _, fl := range strings.Split(fields[4], ",") {
			switch {
			case fl == "has_tag", fl == "concat", fl == "encrypt=1", fl == "encrypt=2", fl == "encrypt=3":
				flags = append(flags, fl)
			case fl == "virtual":
				x.virtual = true
			case fl == "array", fl == "secret", fl == "internal":
				// array: several values packed in one attribute, which FreeRADIUS 3 uses for
				// DHCP only; secret: hidden in FreeRADIUS's logs. Neither changes the
				// encoding of one value.
			default:
				skip("ATTRIBUTE with an unknown flag")
				return ""
			}
		}
	}
	def := strings.Join([]string{block, oid, typ, kindName(x.kind), strings.Join(flags, ","), strconv.FormatBool(x.virtual), strconv.Itoa(evs)}, " ")
	if old, ok := f.attrs[name]; ok {
		switch {
		case old.text == def:
			return "" // identical: nothing new
		case old.builtin && !builtin:
			// A file the operator chose redefines a built-in attribute: it wins (merge).
		default:
			skip("ATTRIBUTE name defined again differently (first definition kept)")
			return ""
		}
	}
	f.attrs[name] = definition{text: def, builtin: builtin}
	if x != (extra{}) {
		f.extra[name] = x
	} else {
		delete(f.extra, name)
	}
	if block == "" && !strings.Contains(oid, ".") && (x.kind == kindExtended || x.kind == kindLongExtended) {
		if n, err := strconv.Atoi(oid); err == nil {
			f.extParents[n] = x.kind
		}
	}
	line := "ATTRIBUTE " + name + " " + oid + " " + typ
	if len(flags) > 0 {
		line += " " + strings.Join(flags, ",")
	}
	return line
}

// normalOID writes an attribute number as the library's OID parser takes it: decimal
// numbers joined by single dots (FreeRADIUS also takes hex: USR's 0x0066).
func normalOID(s string) (string, bool) {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		n, err := strconv.ParseUint(strings.TrimPrefix(p, "0x"), base(p), 31)
		if err != nil {
			return "", false
		}
		parts[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(parts, "."), true
}
