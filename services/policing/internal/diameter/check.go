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
// AVPs are sound.
func checkAVPs(body []byte, app uint32, d *dict.Parser) *fault {
	for len(body) > 0 {
		if len(body) < 8 {
			h := make([]byte, 8)
			copy(h, body)
			code := binary.BigEndian.Uint32(h[0:4])
			return &fault{resultInvalidAVPLength, example(code, h[4]&^avp.Vbit, 0, typeOf(app, code, 0, d))}
		}
		code, flags := binary.BigEndian.Uint32(body[0:4]), body[4]
		length := int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		hdr, vendor := 8, uint32(0)
		if flags&avp.Vbit != 0 {
			hdr = 12
			if len(body) < 12 {
				return &fault{resultInvalidAVPLength, example(code, flags&^avp.Vbit, 0, typeOf(app, code, 0, d))}
			}
			vendor = binary.BigEndian.Uint32(body[8:12])
		}
		typ, known := lookupType(app, code, vendor, d)
		if length < hdr || length > len(body) {
			return &fault{resultInvalidAVPLength, example(code, flags, vendor, typ)}
		}
		payload := body[hdr:length]
		switch {
		case !known:
			if flags&avp.Mbit != 0 {
				return &fault{resultAVPUnsupported, diam.NewAVP(code, flags, vendor, datatype.OctetString(payload))}
			}
		case !lengthFits(typ, payload):
			return &fault{resultInvalidAVPLength, example(code, flags, vendor, typ)}
		case typ == datatype.GroupedType:
			if f := checkAVPs(payload, app, d); f != nil {
				return f
			}
		}
		next := min((length+3)&^3, len(body))
		body = body[next:]
	}
	return nil
}

// typeOf is the dictionary's type of an AVP (OctetString when unknown).
func typeOf(app, code, vendor uint32, d *dict.Parser) datatype.TypeID {
	typ, _ := lookupType(app, code, vendor, d)
	return typ
}

// typeKey names a cached dictionary answer: byCode for go-diameter's decoding's lookup
// (FindAVPByCode, decodeType), else checkAVPs' (FindAVPWithVendor, lookupType).
type typeKey struct {
	app, code, vendor uint32
	byCode            bool
}

type typeEntry struct {
	typ   datatype.TypeID
	known bool
}

// types caches the dictionary's answers for the default dictionary (go-diameter's lookup
// locks and probes several maps: 4% of a CCR-U's CPU), copied on write: a peer's AVPs are a
// few dozen kinds, and an unknown one is cached only up to typesMax.
var types atomic.Pointer[map[typeKey]typeEntry]

const typesMax = 4096

// DictionaryChanged forgets the cached AVP types: call it after loading AVPs into
// go-diameter's default dictionary (gx.LoadDictionary does).
func DictionaryChanged() {
	types.Store(nil)
	appTables.Store(nil)
	lastTable.Store(nil)
}

// appTable is the cached types of one application's AVPs: [byCode][3GPP][code], 0 when not
// looked up yet, else 1<<16 | known<<8 | type.
type appTable struct {
	app uint32
	e   [2][2][2048]atomic.Uint32
}

// appTables are the tables of the applications seen (a node serves a few: the base protocol,
// Gx), copied on write, at most appTablesMax.
var appTables atomic.Pointer[[]*appTable]

const appTablesMax = 8

// lastTable is the table appTypesOf found last: a node's requests are nearly all of one
// application, and its lookups were a third of the types' cost.
var lastTable atomic.Pointer[appTable]

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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lookupType is the dictionary's type of an AVP and whether the dictionary knows it
// (OctetString when not).
func lookupType(app, code, vendor uint32, d *dict.Parser) (datatype.TypeID, bool) {
	return cachedType(typeKey{app, code, vendor, false}, d, func() typeEntry {
		if def, err := d.FindAVPWithVendor(app, code, vendor); err == nil && def != nil {
			return typeEntry{def.Data.Type, true}
		}
		return typeEntry{typ: datatype.OctetStringType}
	})
}

// cachedType is the cached answer for k (the default dictionary's only), else find's. The
// AVPs of the base protocol and of Gx (codes under 2048, no vendor or 3GPP) are looked up in
// an array (the map's hashing was a sixth of a CCR-U's CPU once three lookups per AVP were
// made), any other in the map.
func cachedType(k typeKey, d *dict.Parser, find func() typeEntry) (datatype.TypeID, bool) {
	if d == dict.Default && k.code < 2048 && (k.vendor == 0 || k.vendor == Vendor3GPP) {
		if t := appTypesOf(k.app); t != nil {
			slot := &t.e[b2i(k.byCode)][b2i(k.vendor != 0)][k.code]
			if v := slot.Load(); v != 0 {
				return datatype.TypeID(v & 0xff), v&0x100 != 0
			}
			e := find()
			slot.Store(1<<16 | uint32(b2i(e.known))<<8 | uint32(e.typ)&0xff)
			return e.typ, e.known
		}
	}
	cached := d == dict.Default
	if cached {
		if m := types.Load(); m != nil {
			if e, ok := (*m)[k]; ok {
				return e.typ, e.known
			}
		}
	}
	e := find()
	if cached {
		old := types.Load()
		if old == nil || len(*old) < typesMax {
			next := make(map[typeKey]typeEntry, 16)
			if old != nil {
				maps.Copy(next, *old)
			}
			next[k] = e
			types.CompareAndSwap(old, &next)
		}
	}
	return e.typ, e.known
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
			checkAVPs(body[:length], app, d) == nil && decodes(body[:length], app, d) {
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
