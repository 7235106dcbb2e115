package app_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/app"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
)

const acmeDict = `
VENDOR		Acme		99999	format=2,1
BEGIN-VENDOR	Acme
ATTRIBUTE	Acme-Level	1	integer
VALUE		Acme-Level	Gold	3
ATTRIBUTE	Acme-Service	2	string
END-VENDOR	Acme
`

// acmeValues returns the Acme vendor attributes (format=2,1) of a reply: "type=value" in order.
func acmeValues(p *radius.Packet) []string {
	var out []string
	for _, a := range p.Attributes {
		v := a.Attribute
		if a.Type != 26 || len(v) < 7 || binary.BigEndian.Uint32(v) != 99999 {
			continue
		}
		typ, l := binary.BigEndian.Uint16(v[4:]), int(v[6])
		val := v[7 : 4+l]
		if typ == 1 && len(val) == 4 {
			out = append(out, fmt.Sprintf("%d=%d", typ, binary.BigEndian.Uint32(val)))
		} else {
			out = append(out, fmt.Sprintf("%d=%s", typ, val))
		}
	}
	return out
}

// A node loads radius.dictionaries; a profile's list of values goes out as repeated
// attributes in order; the dictionaries reload when they change, and a dictionary that is
// broken, or that the subscriber file no longer fits, is refused with the old one kept.
func TestDictionariesLoadAndReload(t *testing.T) {
	dir := t.TempDir()
	dictPath := filepath.Join(dir, "dictionary")
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s1\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "dictionary.acme"), []byte(acmeDict), 0o600))
	apptest.Check(t, os.WriteFile(dictPath, []byte("$INCLUDE dictionary.acme\n"), 0o600))
	subs := func(extra string) string {
		return `
subscribers:
  - username: alice
    password: wonderland
    profile:
      replyAttributes:
        Acme-Level: [Gold, "7"]
        Acme-Service: [web, voip, tv]` + extra + "\n"
	}
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte(subs("")), 0o600))
	n := app.StartYAML(t, dir, `
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", dictionaries: ["{{dir}}/dictionary"]}
admin: {address: "127.0.0.1:0"}
clients: [{name: lo, address: 127.0.0.1, secretFile: "{{dir}}/secret"}]
subscribers: {source: file, file: "{{dir}}/subs.yaml"}
reload: {interval: 50ms}
`)
	accept := func() []string {
		t.Helper()
		reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP("s1", "alice", "wonderland"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessAccept {
			t.Fatalf("alice: %v", reply.Code)
		}
		return acmeValues(reply)
	}
	want := "[1=3 1=7 2=web 2=voip 2=tv]"
	if got := fmt.Sprint(accept()); got != want {
		t.Fatalf("reply %s, want %s", got, want)
	}
	if v, want := app.Metric(t, n, "openaaa_dictionary_attributes"), len(dict.Builtin.Names())+2; v != float64(want) {
		t.Errorf("openaaa_dictionary_attributes %v, want %d (built-in and Acme's 2)", v, want)
	}

	rejectedWith := func(what, text string) {
		t.Helper()
		rejected := reloads(t, n, "dictionaries", "rejected")
		apptest.WriteAtomically(t, filepath.Join(dir, "dictionary.acme"), []byte(text))
		testenv.Eventually(t, 5*time.Second, "rejected reload: "+what, func() bool { return reloads(t, n, "dictionaries", "rejected") > rejected })
		if got := fmt.Sprint(accept()); got != want {
			t.Fatalf("after %s: reply %s, want the old %s", what, got, want)
		}
	}
	// An include that is not there (a file of the tree, watched too, changed).
	rejectedWith("a missing include", acmeDict+"$INCLUDE dictionary.gone\n")
	// Acme-Service gone: the subscriber file no longer encodes.
	rejectedWith("an attribute the subscribers use removed", strings.Replace(acmeDict, "ATTRIBUTE\tAcme-Service\t2\tstring\n", "", 1))

	// A new attribute and its first use, written one after the other: taken together.
	ok := reloads(t, n, "dictionaries", "ok") + reloads(t, n, "subscribers", "ok")
	apptest.WriteAtomically(t, filepath.Join(dir, "subs.yaml"), []byte(subs("\n        Acme-Zone: north")))
	apptest.WriteAtomically(t, filepath.Join(dir, "dictionary.acme"), []byte(strings.Replace(acmeDict, "END-VENDOR", "ATTRIBUTE\tAcme-Zone\t300\tstring\nEND-VENDOR", 1)))
	want = "[1=3 1=7 2=web 2=voip 2=tv 300=north]"
	testenv.Eventually(t, 5*time.Second, "the new attribute in replies", func() bool {
		return fmt.Sprint(accept()) == want
	})
	if reloads(t, n, "dictionaries", "ok")+reloads(t, n, "subscribers", "ok") <= ok {
		t.Error("no reload counted")
	}
}
