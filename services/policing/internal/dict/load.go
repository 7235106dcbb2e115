package dict

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"layeh.com/radius"
	"layeh.com/radius/dictionary"
)

// Loading FreeRADIUS dictionary trees.
//
// layeh.com/radius/dictionary parses ATTRIBUTE, VALUE, VENDOR, BEGIN-VENDOR/END-VENDOR and
// $INCLUDE, and most types; it stops at the first line it does not know. A real tree (the
// /usr/share/freeradius of Debian's freeradius-common) has more: vendor formats with a
// continuation octet (format=1,1,c), BEGIN-VENDOR ... format=Extended-Vendor-Specific-N,
// the types combo-ip, extended, long-extended and evs, the flags array, virtual and secret,
// includes relative to the including file, vendors with two names, attributes defined
// twice. So each file goes through a filter (filter.go) before the library parses it: lines
// it can pass on go through (possibly rewritten, the original meaning kept aside), lines it
// cannot are dropped, counted by reason; only an unreadable file or an include loop fails
// the load.

// maxIncludeDepth bounds nested $INCLUDEs (the Debian tree nests two deep).
const maxIncludeDepth = 16

// Stats says what a load read and what it left out.
type Stats struct {
	// Files are every file read, includes too, in order (reload watches them); the built-in
	// dictionary is not one.
	Files []string
	// Attributes is the number of attribute names known.
	Attributes int
	// Skipped counts the lines left out, by reason.
	Skipped map[string]int
	// Examples holds the first line skipped for each reason ("file:line: text").
	Examples map[string]string
}

// SkippedTotal is the number of lines left out.
func (s Stats) SkippedTotal() int {
	n := 0
	for _, c := range s.Skipped {
		n += c
	}
	return n
}

// Reasons lists the skip reasons, most frequent first.
func (s Stats) Reasons() []string {
	out := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if s.Skipped[out[i]] != s.Skipped[out[j]] {
			return s.Skipped[out[i]] > s.Skipped[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// Load returns the built-in dictionary extended by the files of paths (FreeRADIUS format,
// e.g. /usr/share/freeradius/dictionary with its $INCLUDEs), read in order. An attribute a
// file defines differently from the built-in dictionary replaces it; between the files, the
// first definition of a name stays and the later one is skipped (counted).
func Load(paths []string) (*Dict, error) {
	l := newLoader()
	if err := l.parse("dictionary", true); err != nil {
		return nil, fmt.Errorf("built-in dictionary: %w", err)
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if err := l.parse(abs, false); err != nil {
			return nil, err
		}
	}
	return l.finish(), nil
}

// Parse reads one dictionary given as text (no $INCLUDE), on top of nothing.
func Parse(text string) (*Dict, error) {
	l := newLoader()
	l.read = func(string) ([]byte, error) { return []byte(text), nil }
	if err := l.parse("dictionary", false); err != nil {
		return nil, err
	}
	return l.finish(), nil
}

type loader struct {
	f     *filter
	read  func(path string) ([]byte, error)
	t     *table
	stats Stats
}

func newLoader() *loader {
	l := &loader{read: os.ReadFile, t: &table{byName: map[string]*Attr{}},
		stats: Stats{Skipped: map[string]int{}, Examples: map[string]string{}}}
	l.f = newFilter(l.skip)
	return l
}

func (l *loader) skip(where, reason string) {
	l.stats.Skipped[reason]++
	if _, ok := l.stats.Examples[reason]; !ok {
		l.stats.Examples[reason] = where
	}
}

// parse reads one top-level file with the library, through an opener that resolves
// includes against the including file's directory and filters every file it opens.
func (l *loader) parse(path string, builtin bool) error {
	l.f.startParse()
	o := &opener{l: l, builtin: builtin}
	p := dictionary.Parser{Opener: o}
	raw, err := p.ParseFile(path)
	if err != nil {
		return err
	}
	l.merge(raw, builtin)
	return nil
}

// opener implements dictionary.Opener. The library opens an include while it parses the
// including file and closes it when done, so the directories of the files being parsed form
// a stack: a relative $INCLUDE is taken from the top one, as FreeRADIUS does.
type opener struct {
	l       *loader
	builtin bool
	dirs    []string
	open    []string
}

func (o *opener) OpenFile(name string) (dictionary.File, error) {
	path := name
	if o.builtin {
		if name != "dictionary" {
			return nil, fmt.Errorf("$INCLUDE %s: the built-in dictionary includes nothing", name)
		}
		return o.file(name, []byte(builtin), "."), nil
	}
	if !filepath.IsAbs(path) && len(o.dirs) > 0 {
		path = filepath.Join(o.dirs[len(o.dirs)-1], path)
	}
	path = filepath.Clean(path)
	for _, p := range o.open {
		if p == path {
			return nil, fmt.Errorf("$INCLUDE %s: includes itself (through %s)", path, strings.Join(o.open, " → "))
		}
	}
	if len(o.open) >= maxIncludeDepth {
		return nil, fmt.Errorf("$INCLUDE %s: more than %d nested includes", path, maxIncludeDepth)
	}
	b, err := o.l.read(path)
	if err != nil {
		return nil, err
	}
	return o.file(path, b, filepath.Dir(path)), nil
}

func (o *opener) file(path string, b []byte, dir string) dictionary.File {
	if !o.builtin {
		o.l.stats.Files = append(o.l.stats.Files, path)
	}
	text := o.l.f.rewrite(path, string(b), o.builtin, func(inc string) bool {
		if !filepath.IsAbs(inc) {
			inc = filepath.Join(dir, inc)
		}
		_, err := os.Stat(inc)
		return err == nil
	})
	o.dirs = append(o.dirs, dir)
	o.open = append(o.open, path)
	return &memFile{Reader: strings.NewReader(text), name: path, closed: func() {
		o.dirs = o.dirs[:len(o.dirs)-1]
		o.open = o.open[:len(o.open)-1]
	}}
}

type memFile struct {
	*strings.Reader
	name   string
	closed func()
}

func (m *memFile) Name() string { return m.name }

// Close pops the file off the opener's stack once (the library closes includes twice).
func (m *memFile) Close() error {
	if m.closed != nil {
		m.closed()
		m.closed = nil
	}
	return nil
}

// merge adds what the library parsed to the table: each attribute resolved to how it goes on
// the wire, then the VALUEs by attribute name.
func (l *loader) merge(raw *dictionary.Dictionary, builtin bool) {
	add := func(da *dictionary.Attribute, v *dictionary.Vendor) {
		a := l.resolve(da, v)
		if old, ok := l.t.byName[a.Name]; ok && !old.builtin {
			// Not expected: the filter passes one definition per name (a safety net that
			// keeps the first, as the filter does).
			l.skip(a.Name, "attribute name defined twice (first definition kept)")
			return
		}
		a.builtin = builtin
		l.t.byName[a.Name] = a
	}
	for _, da := range raw.Attributes {
		add(da, nil)
	}
	for _, v := range raw.Vendors {
		for _, da := range v.Attributes {
			add(da, v)
		}
	}
	values := raw.Values
	for _, v := range raw.Vendors {
		values = append(values, v.Values...)
	}
	for _, val := range values {
		a := l.t.byName[val.Attribute]
		if a == nil {
			l.skip("VALUE "+val.Attribute+" "+val.Name, "VALUE of an attribute not defined")
			continue
		}
		if a.values == nil {
			a.values = map[string]uint64{}
		}
		if _, dup := a.values[val.Name]; !dup { // FreeRADIUS keeps the first
			a.values[val.Name] = val.Number
		}
	}
}

// resolve turns the library's attribute into ours, with what the filter kept aside.
func (l *loader) resolve(da *dictionary.Attribute, v *dictionary.Vendor) *Attr {
	x := l.f.extra[da.Name]
	a := &Attr{Name: da.Name, kind: da.Type, tagged: da.HasTag(), vtypeLen: 1, vlenLen: 1}
	if x.kind != 0 {
		a.kind = x.kind
	}
	if da.FlagEncrypt.Valid && da.FlagEncrypt.Int != 0 {
		a.encrypt = da.FlagEncrypt.Int
	}
	a.concat = da.FlagConcat.Valid && da.FlagConcat.Bool
	a.virtual = x.virtual
	oid := da.OID
	a.Type = radius.Type(oid[0])
	if v != nil {
		a.Vendor = uint32(v.Number)
		f := l.f.vendors[v.Name]
		a.vtypeLen, a.vlenLen, a.vcont = f.typeLen, f.lenLen, f.cont
		if x.evs != 0 {
			a.ext = radius.Type(x.evs)
		}
	} else if len(oid) >= 2 && l.f.extParents[oid[0]] != 0 {
		a.ext = radius.Type(oid[0])
		a.Type = radius.Type(oid[1])
		oid = oid[1:]
	}
	a.noWire = a.why(oid, v)
	return a
}

// why says why a profile cannot send the attribute ("" when it can).
func (a *Attr) why(oid dictionary.OID, v *dictionary.Vendor) string {
	switch {
	case a.virtual:
		return "a virtual attribute of FreeRADIUS's own, never sent"
	case len(oid) > 1:
		return "a member of a TLV (" + oid.String() + "): TLVs cannot be sent from a profile"
	case v == nil && a.ext == 0 && (oid[0] < 1 || oid[0] > 255):
		return fmt.Sprintf("a FreeRADIUS-internal attribute (number %d), never sent", oid[0])
	case v != nil && a.vtypeLen < 4 && oid[0] >= 1<<(8*a.vtypeLen):
		return fmt.Sprintf("vendor type %d does not fit the vendor's %d-octet type field", oid[0], a.vtypeLen)
	case a.ext != 0 && oid[0] > 255:
		return fmt.Sprintf("extended type %d above 255", oid[0])
	}
	switch a.kind {
	case dictionary.AttributeTLV, dictionary.AttributeVSA, kindExtended, kindLongExtended, kindEVS:
		return "a container (" + kindName(a.kind) + "): set the attributes inside it"
	}
	if a.encrypt != 0 {
		return fmt.Sprintf("encrypted on the wire (encrypt=%d), which profiles do not support", a.encrypt)
	}
	return ""
}

func (l *loader) finish() *Dict {
	l.stats.Attributes = len(l.t.byName)
	l.t.stats = l.stats
	d := &Dict{}
	d.t.Store(l.t)
	return d
}

// parseVendorFormat reads "format=T,L" or "format=T,L,c" (FreeRADIUS VENDOR lines): T type
// octets (1, 2, 4), L length octets (0, 1, 2), c a continuation octet (WiMAX).
func parseVendorFormat(s string) (vendorFormat, bool) {
	spec, ok := strings.CutPrefix(s, "format=")
	if !ok {
		return vendorFormat{}, false
	}
	parts := strings.Split(spec, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return vendorFormat{}, false
	}
	t, err1 := strconv.Atoi(parts[0])
	n, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || (t != 1 && t != 2 && t != 4) || n < 0 || n > 2 {
		return vendorFormat{}, false
	}
	f := vendorFormat{typeLen: t, lenLen: n}
	if len(parts) == 3 {
		if parts[2] != "c" || t != 1 || n != 1 {
			return vendorFormat{}, false
		}
		f.cont = true
	}
	return f, true
}
