package diameter

import (
	"encoding/binary"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Result-Codes of RFC 6733 §7.1 for requests that are framed but wrong, answered from what
// the request's bytes say before (or instead of) go-diameter's decoding.
const (
	resultUnableToDeliver  = 3002 // §7.1.3: Destination-Host of no node we answer for
	resultRealmNotServed   = 3003 // §7.1.3: Destination-Realm not ours
	resultInvalidHdrBits   = 3008 // §7.1.3: e.g. a request with the E bit
	resultAVPUnsupported   = 5001 // §7.1.5: an AVP with the M bit we do not know
	resultInvalidAVPLength = 5014 // §7.1.5: an AVP length that overruns or mismatches its type
)

// fault is what is wrong with a request's AVPs: the Result-Code and the AVP for Failed-AVP.
type fault struct {
	code   uint32
	failed *diam.AVP
}

// checkAVPs walks a message's AVPs (body: after the header), through grouped AVPs, as RFC 6733
// §4.1 and §7.1.5 read them: an AVP length under its header or past the end of its container,
// or a fixed-size type (Unsigned32, Time…: §4.2) or an IPv4/IPv6 Address of another length,
// is 5014 with the AVP (its header and a zero payload of its type's size) in Failed-AVP; an
// AVP the dictionary does not know with the M bit is 5001 with the AVP as received. nil: the
// AVPs are sound. In the same pass (one walk over the bytes, one type lookup per AVP) it
// tells whether sound AVPs are lean (lean.go: a handler may read them from the bytes).
func checkAVPs(body []byte, app uint32, d *dict.Parser) (f *fault, lean bool) {
	return check(body, tableOf(app, d), app, d)
}

// noFault reports whether checkAVPs finds body sound.
func noFault(body []byte, app uint32, d *dict.Parser) bool {
	f, _ := checkAVPs(body, app, d)
	return f == nil
}

func check(body []byte, t *appTable, app uint32, d *dict.Parser) (f *fault, lean bool) {
	lean = true
	for len(body) > 0 {
		if len(body) < 8 {
			h := make([]byte, 8)
			copy(h, body)
			code := binary.BigEndian.Uint32(h[0:4])
			return &fault{resultInvalidAVPLength, example(code, h[4]&^avp.Vbit, 0, typeOf(app, code, 0, d))}, false
		}
		code, flags := binary.BigEndian.Uint32(body[0:4]), body[4]
		length := int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		hdr, vendor := 8, uint32(0)
		if flags&avp.Vbit != 0 {
			hdr = 12
			if len(body) < 12 {
				return &fault{resultInvalidAVPLength, example(code, flags&^avp.Vbit, 0, typeOf(app, code, 0, d))}, false
			}
			vendor = binary.BigEndian.Uint32(body[8:12])
		}
		types := typesIn(t, app, code, vendor, d)
		typ, known := types.check()
		if length < hdr || length > len(body) {
			return &fault{resultInvalidAVPLength, example(code, flags, vendor, typ)}, false
		}
		payload := body[hdr:length]
		next := (length + 3) &^ 3
		switch {
		case !known:
			if flags&avp.Mbit != 0 {
				return &fault{resultAVPUnsupported, diam.NewAVP(code, flags, vendor, datatype.OctetString(payload))}, false
			}
		case !lengthFits(typ, payload):
			return &fault{resultInvalidAVPLength, example(code, flags, vendor, typ)}, false
		case typ == datatype.GroupedType:
			f, inner := check(payload, t, app, d)
			if f != nil {
				return f, false
			}
			lean = lean && inner
		}
		if lean {
			lean = next <= len(body) && leanValue(types, payload)
		}
		body = body[min(next, len(body)):]
	}
	return nil, lean
}

// typeOf is the dictionary's type of an AVP (OctetString when unknown).
func typeOf(app, code, vendor uint32, d *dict.Parser) datatype.TypeID {
	typ, _ := lookupType(app, code, vendor, d)
	return typ
}

// avpTypes is what the request path asks the dictionary of one AVP, both answers in one word
// (one cache slot, one lookup per AVP for checkAVPs and the decoding): its type and whether
// the dictionary knows it as checkAVPs looks it up (FindAVPWithVendor; OctetString when not),
// and as go-diameter's decoding does (FindAVPByCode, which DecodeAVP asks: it may find another
// definition). Packed: 1<<31 | decodeKnown<<24 | decodeType<<16 | checkKnown<<8 | checkType.
type avpTypes uint32

func (t avpTypes) check() (datatype.TypeID, bool) {
	return datatype.TypeID(t & 0xff), t&0x100 != 0
}

func (t avpTypes) decode() (datatype.TypeID, bool) {
	return datatype.TypeID(t >> 16 & 0xff), t&0x1000000 != 0
}

// findTypes asks the dictionary.
func findTypes(app, code, vendor uint32, d *dict.Parser) avpTypes {
	t := avpTypes(1<<31 | datatype.OctetStringType<<16 | datatype.OctetStringType)
	if def, err := d.FindAVPWithVendor(app, code, vendor); err == nil && def != nil {
		t = t&^0xff | 0x100 | avpTypes(def.Data.Type)&0xff
	}
	if def, err := d.FindAVPByCode(app, code, vendor); def != nil {
		_ = err // go-diameter decodes with the definition it found, error or not
		t = t&^0xff0000 | 0x1000000 | (avpTypes(def.Data.Type)&0xff)<<16
	}
	return t
}

// typeKey names a cached dictionary answer.
type typeKey struct{ app, code, vendor uint32 }

// types caches the dictionary's answers for the default dictionary (go-diameter's lookup
// locks and probes several maps: 4% of a CCR-U's CPU), copied on write: a peer's AVPs are a
// few dozen kinds, and an unknown one is cached only up to typesMax.
var types atomic.Pointer[map[typeKey]avpTypes]

const typesMax = 4096

// DictionaryChanged forgets the cached AVP types: call it after loading AVPs into
// go-diameter's default dictionary (gx.LoadDictionary does).
func DictionaryChanged() {
	types.Store(nil)
	appTables.Store(nil)
	lastTable.Store(nil)
}

// appTable is the cached types of one application's AVPs of the base protocol and Gx (codes
// under 2048, no vendor or 3GPP): [3GPP][code], 0 when not looked up yet. An array, not the
// map: the map's hashing was a sixth of a CCR-U's CPU.
type appTable struct {
	app uint32
	e   [2][2048]atomic.Uint32
	// cmds are the command codes the dictionary was found to have (a lookup per request
	// hashed a struct in go-diameter's map); dictionaries only grow between changes.
	cmds [512]atomic.Bool
}

// knownCommand reports whether the default dictionary has the command code of app, whose
// table t (tableOf, nil: not cached) remembers the codes found.
func knownCommand(t *appTable, app, code uint32) bool {
	cached := t != nil && code < uint32(len(t.cmds))
	if cached && t.cmds[code].Load() {
		return true
	}
	if _, err := dict.Default.FindCommand(app, code); err != nil {
		return false
	}
	if cached {
		t.cmds[code].Store(true)
	}
	return true
}

// appTables are the tables of the applications seen (a node serves a few: the base protocol,
// Gx), copied on write, at most appTablesMax.
var appTables atomic.Pointer[[]*appTable]

const appTablesMax = 8

// lastTable is the table appTypesOf found last: a node's requests are nearly all of one
// application, and its lookups were a third of the types' cost.
var lastTable atomic.Pointer[appTable]

// appTypesOf is the table of app's AVPs in the default dictionary; nil past appTablesMax
// applications.
func appTypesOf(app uint32) *appTable {
	if t := lastTable.Load(); t != nil && t.app == app {
		return t
	}
	for {
		old := appTables.Load()
		if old != nil {
			for _, t := range *old {
				if t.app == app {
					lastTable.Store(t)
					return t
				}
			}
			if len(*old) >= appTablesMax {
				return nil
			}
		}
		var next []*appTable
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, &appTable{app: app})
		if appTables.CompareAndSwap(old, &next) {
			return next[len(next)-1]
		}
	}
}

// tableOf is the table for a request of app decoded with d: nil for another dictionary than
// the default one (typesIn then asks it).
func tableOf(app uint32, d *dict.Parser) *appTable {
	if d != dict.Default {
		return nil
	}
	return appTypesOf(app)
}

// lookupType is the dictionary's type of an AVP and whether the dictionary knows it
// (OctetString when not), as checkAVPs looks it up.
func lookupType(app, code, vendor uint32, d *dict.Parser) (datatype.TypeID, bool) {
	return typesIn(tableOf(app, d), app, code, vendor, d).check()
}

// typesIn is an AVP's types (cached for the default dictionary only): from t, the table of
// the request's application (tableOf, looked up once per request), when the AVP has a place
// in it, else from the map.
func typesIn(t *appTable, app, code, vendor uint32, d *dict.Parser) avpTypes {
	if t != nil && code < 2048 && (vendor == 0 || vendor == Vendor3GPP) {
		slot := &t.e[b2i(vendor != 0)][code]
		if v := slot.Load(); v != 0 {
			return avpTypes(v)
		}
		v := findTypes(app, code, vendor, d)
		slot.Store(uint32(v))
		return v
	}
	return mapTypes(typeKey{app, code, vendor}, d)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mapTypes is typesIn for the AVPs the tables have no place for.
func mapTypes(k typeKey, d *dict.Parser) avpTypes {
	cached := d == dict.Default
	if cached {
		if m := types.Load(); m != nil {
			if v, ok := (*m)[k]; ok {
				return v
			}
		}
	}
	v := findTypes(k.app, k.code, k.vendor, d)
	if cached {
		old := types.Load()
		if old == nil || len(*old) < typesMax {
			next := make(map[typeKey]avpTypes, 16)
			if old != nil {
				maps.Copy(next, *old)
			}
			next[k] = v
			types.CompareAndSwap(old, &next)
		}
	}
	return v
}

// lengthFits reports whether a payload has a length its type allows.
func lengthFits(typ datatype.TypeID, payload []byte) bool {
	if n := fixedSize(typ); n > 0 {
		return len(payload) == n
	}
	if typ == datatype.AddressType {
		if len(payload) < 2 {
			return false
		}
		switch binary.BigEndian.Uint16(payload) { // RFC 6733 §4.3.1, IANA address families
		case 1:
			return len(payload) == 2+4
		case 2:
			return len(payload) == 2+16
		}
	}
	return true
}

// example is an AVP for Failed-AVP when the one received cannot be sent back: its header and
// a zero-filled payload of its type's minimum length (RFC 6733 §7.1.5, 5014); an Address is
// the IPv4 family and 0.0.0.0.
func example(code uint32, flags byte, vendor uint32, typ datatype.TypeID) *diam.AVP {
	if vendor == 0 {
		flags &^= avp.Vbit
	}
	payload := make([]byte, fixedSize(typ))
	if typ == datatype.AddressType {
		payload = []byte{0, 1, 0, 0, 0, 0}
	}
	return diam.NewAVP(code, flags&(avp.Vbit|avp.Mbit), vendor, datatype.OctetString(payload))
}

// undecodableAVP finds the top-level AVP go-diameter cannot decode (for Failed-AVP of a 5004),
// as received; nil when none can be named.
func undecodableAVP(body []byte, app uint32, d *dict.Parser) *diam.AVP {
	for len(body) >= 8 {
		length := int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		if length < 8 || length > len(body) {
			return nil
		}
		if !decodes(body[:length], app, d) {
			code, flags := binary.BigEndian.Uint32(body[0:4]), body[4]
			hdr, vendor := 8, uint32(0)
			if flags&avp.Vbit != 0 && length >= 12 {
				hdr, vendor = 12, binary.BigEndian.Uint32(body[8:12])
			}
			return diam.NewAVP(code, flags&(avp.Vbit|avp.Mbit), vendor, datatype.OctetString(body[hdr:length]))
		}
		body = body[min((length+3)&^3, len(body)):]
	}
	return nil
}

func decodes(b []byte, app uint32, d *dict.Parser) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := diam.DecodeAVP(b, app, d)
	return err == nil
}

// topLevel decodes the request's Session-Id and Proxy-Info AVPs that are well formed (for
// an answer to a request that cannot be decoded whole: RFC 6733 §6.2 wants both back).
func topLevel(body []byte, app uint32, d *dict.Parser) []*diam.AVP {
	var out []*diam.AVP
	for len(body) >= 8 {
		length := int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		if length < 8 || length > len(body) {
			break
		}
		if code := binary.BigEndian.Uint32(body[0:4]); (code == avp.SessionID || code == avp.ProxyInfo) && body[4]&avp.Vbit == 0 &&
			noFault(body[:length], app, d) && decodes(body[:length], app, d) {
			if a, err := diam.DecodeAVP(body[:length], app, d); err == nil {
				out = append(out, a)
			}
		}
		body = body[min((length+3)&^3, len(body)):]
	}
	return out
}

// destination checks where an application request is addressed (RFC 6733 §6.1.4): any node
// of ours serves any session of our realm, so a request is processed here when its
// Destination-Realm is ours (or absent: the application's ABNF decides whether that is
// allowed) and its Destination-Host, if any, is our identity or one of the identities we
// answer for (Options.ServedHosts: the other data centers of the cluster). Another realm is
// 3003 DIAMETER_REALM_NOT_SERVED; another host of our realm is 3002
// DIAMETER_UNABLE_TO_DELIVER (we relay nothing). Diameter identities compare
// case-insensitively (FQDNs, realms).
func (s *Server) destination(m *diam.Message) uint32 {
	code := uint32(0)
	for _, a := range m.AVP {
		if a.VendorID != 0 {
			continue
		}
		switch s.misaddressed(a.Code, String(a)) {
		case resultRealmNotServed:
			return resultRealmNotServed // the realm's fault first
		case resultUnableToDeliver:
			code = resultUnableToDeliver
		}
	}
	return code
}

// misaddressed is destination's answer to one AVP (vendor 0) of the code and text: 3003 for a
// Destination-Realm not ours, 3002 for a Destination-Host we do not answer for, else 0.
func (s *Server) misaddressed(code uint32, value string) uint32 {
	switch {
	case code == avp.DestinationRealm && !strings.EqualFold(value, s.opt.OriginRealm):
		return resultRealmNotServed
	case code == avp.DestinationHost && !s.serves(value):
		return resultUnableToDeliver
	}
	return 0
}

func (s *Server) serves(host string) bool {
	if strings.EqualFold(host, s.opt.OriginHost) {
		return true
	}
	for _, h := range s.opt.ServedHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}
