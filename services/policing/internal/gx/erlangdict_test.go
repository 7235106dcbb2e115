package gx

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/internal/testenv"
)

// diaAVP is a row of a diameter dictionary's @avp_types (Erlang/OTP's .dia format).
type diaAVP struct {
	code  uint32
	typ   string
	flags string // M, P, V; "-" for none
}

// readDia reads the AVP types and the enumerations of a .dia dictionary.
func readDia(t *testing.T, path string) (map[string]diaAVP, map[string][]uint32) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	avps, enums := map[string]diaAVP{}, map[string][]uint32{}
	var section, enum string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), ";;")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.HasPrefix(fields[0], "@") {
			section = fields[0]
			if section == "@enum" {
				enum = fields[1]
			}
			continue
		}
		switch {
		case section == "@avp_types" && len(fields) == 4:
			code, err := strconv.ParseUint(fields[1], 10, 32)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			avps[fields[0]] = diaAVP{uint32(code), fields[2], fields[3]}
		case section == "@enum" && len(fields) == 2:
			v, err := strconv.ParseUint(fields[1], 10, 32)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			enums[enum] = append(enums[enum], uint32(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return avps, enums
}

// The Erlang PCEF's Gx dictionary (hack/erlang-pcef/pcef_gx.dia) and the server's table
// (avps.go) are two transcriptions of the same specification tables: every AVP the server
// sends that is not a base AVP (the Erlang dictionary inherits RFC 6733's) is in the Erlang
// one with the same code, vendor, type, M bit rule and enumeration.
func TestErlangDictionaryAgrees(t *testing.T) {
	dia, enums := readDia(t, filepath.Join(testenv.Root(t), "hack", "erlang-pcef", "pcef_gx.dia"))
	for _, s := range Specs {
		if strings.HasPrefix(s.Ref, "RFC 6733") {
			continue
		}
		d, ok := dia[s.Name]
		if !ok {
			t.Errorf("%s (%s) is not in pcef_gx.dia", s.Name, s.Ref)
			continue
		}
		if d.code != s.Code || strings.Contains(d.flags, "V") != (s.Vendor == Vendor3GPP) {
			t.Errorf("%s: pcef_gx.dia has code %d flags %s; avps.go code %d vendor %d", s.Name, d.code, d.flags, s.Code, s.Vendor)
		}
		if datatype.Available[d.typ] != s.Type {
			t.Errorf("%s: pcef_gx.dia has type %s; avps.go %d", s.Name, d.typ, s.Type)
		}
		// The M bit the .dia sets is the one we send: set when the table says must, clear when
		// must not or may (Supported-Features; pcef.erl accepts either on receipt).
		if m := strings.Contains(d.flags, "M"); m != (s.Must&avp.Mbit != 0) {
			t.Errorf("%s: pcef_gx.dia flags %s; avps.go must %08b must not %08b (%s)", s.Name, d.flags, s.Must, s.MustNot, s.Ref)
		}
		if s.Enum != nil {
			want := slices.Sorted(maps.Keys(s.Enum))
			if got := slices.Sorted(slices.Values(enums[s.Name])); !slices.Equal(got, want) {
				t.Errorf("%s: pcef_gx.dia enumerates %v; avps.go %v (%s)", s.Name, got, want, s.Ref)
			}
		}
	}
}
