// Package dict resolves RADIUS attributes by dictionary name (as in FreeRADIUS) so that
// subscriber profiles can name any reply attribute, vendor-specific ones included. The
// built-in dictionary is ours; FreeRADIUS dictionary trees load on top of it (load.go,
// docs/dictionaries.md).
package dict

import (
	_ "embed"
	"sort"
	"sync/atomic"

	"layeh.com/radius"
	"layeh.com/radius/dictionary"
)

//go:embed dictionary
var builtin string

// Attr is a resolved attribute ready to encode values.
type Attr struct {
	Name   string
	Type   radius.Type // attribute number (vendor type for VSAs, extended type under ext)
	Vendor uint32      // 0 for standard attributes
	kind   dictionary.AttributeType
	tagged bool
	values map[string]uint64
	// vendor format (FreeRADIUS VENDOR format=T,L[,c]): type and length octets, and a
	// continuation octet (WiMAX)
	vtypeLen, vlenLen int
	vcont             bool
	// ext is the RFC 6929 extended attribute (241-246) this one is carried in; 0: none.
	ext     radius.Type
	encrypt int
	concat  bool
	virtual bool
	builtin bool
	// noWire says why this attribute cannot be sent from a profile ("": it can).
	noWire string
}

// Dict is a parsed dictionary indexed by attribute name. Its content can be replaced as a
// whole (Set, on reload) while it is in use.
type Dict struct{ t atomic.Pointer[table] }

type table struct {
	byName map[string]*Attr
	stats  Stats
}

// Builtin is the dictionary shipped in the binary.
var Builtin *Dict

// init, not a variable initializer: the loader reaches the filter's tables through the
// library's Opener interface, which Go's initialization order does not follow.
func init() {
	d, err := Load(nil)
	if err != nil {
		panic(err)
	}
	Builtin = d
}

// Lookup returns the attribute of that name.
func (d *Dict) Lookup(name string) (*Attr, bool) {
	a, ok := d.t.Load().byName[name]
	return a, ok
}

// Stats says what the dictionary was loaded from and what was left out.
func (d *Dict) Stats() Stats { return d.t.Load().stats }

// Names lists the attribute names, sorted.
func (d *Dict) Names() []string {
	m := d.t.Load().byName
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Set replaces d's content with from's (a reload): lookups from then on see the new one;
// attributes looked up before stay valid.
func (d *Dict) Set(from *Dict) { d.t.Store(from.t.Load()) }

// Kind is the attribute's type as the dictionary names it (integer, string, combo-ip...).
func (a *Attr) Kind() string { return kindName(a.kind) }
