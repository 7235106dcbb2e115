package subscriber

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleFile = `
profiles:
  gold:
    sessionTimeout: 3600
    idleTimeout: 600
    acctInterimInterval: 300
    class: gold
    rateLimit: 10M/10M
    quotaOctets: 1000000
    replyAttributes: {Framed-MTU: "1492", Service-Type: Framed-User}
  pool: {framedPool: pool-a, filterId: std}
subscribers:
  - username: alice
    password: wonderland
    profileName: gold
    profile:
      framedIPAddress: 10.1.0.1
      sessionTimeout: 7200
      usedOctets: 400000
      replyAttributes: {Framed-MTU: "1400", Filter-Id: vip}
  - {username: bob, password: builder, profileName: gold}
  - {username: carol, password: x, disabled: true, profile: {framedPool: p2}}
  - {username: dave, password: why, profileName: pool, profile: {filterId: custom}}
`

func TestParseFileOverlay(t *testing.T) {
	db, err := ParseFile([]byte(sampleFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(db) != 4 {
		t.Fatalf("%d subscribers", len(db))
	}
	a := db["alice"].Profile
	if a.SessionTimeout != 7200 || a.IdleTimeout != 600 || a.AcctInterimInterval != 300 || a.Class != "gold" ||
		a.RateLimit != "10M/10M" || a.QuotaOctets != 1000000 || a.UsedOctets != 400000 || a.FramedIPAddress != "10.1.0.1" {
		t.Fatalf("alice: subscriber fields must win over the profile's, the rest inherited: %+v", a)
	}
	want := ReplyAttributes{"Framed-MTU": {"1400"}, "Service-Type": {"Framed-User"}, "Filter-Id": {"vip"}}
	if fmt.Sprint(a.ReplyAttributes) != fmt.Sprint(want) {
		t.Fatalf("alice reply attributes %v, want %v", a.ReplyAttributes, want)
	}
	b := db["bob"].Profile
	if b.SessionTimeout != 3600 || b.FramedIPAddress != "" {
		t.Fatalf("bob: %+v", b)
	}
	// alice's overrides must not leak into the shared profile.
	if b.ReplyAttributes["Framed-MTU"].First() != "1492" || len(b.ReplyAttributes) != 2 {
		t.Fatalf("bob's reply attributes changed by alice's overlay: %v", b.ReplyAttributes)
	}
	if !db["carol"].Disabled || db["carol"].Profile.FramedPool != "p2" {
		t.Fatalf("carol: %+v", db["carol"])
	}
	if d := db["dave"].Profile; d.FramedPool != "pool-a" || d.FilterID != "custom" {
		t.Fatalf("dave: %+v", d)
	}
	if db["alice"].Password != "wonderland" {
		t.Fatal("password")
	}
}

// An NT hash alone is a password (PAP and MS-CHAPv2 need no clear text).
func TestParseFileNTPassword(t *testing.T) {
	db, err := ParseFile([]byte("subscribers:\n- {username: u, ntPassword: 44EBBA8D5312B8D611474411F56989AE}\n"), nil)
	if err != nil || db["u"].NTPassword != "44EBBA8D5312B8D611474411F56989AE" || db["u"].Password != "" {
		t.Fatalf("%v %+v", err, db["u"])
	}
}

// A USIM subscriber: Ki and OPc (or OP), AMF and SQN; errors name the field, never the value.
func TestParseFileAKA(t *testing.T) {
	const ki, opc = "465b5ce8b199b49faa5f0a2ee238a6bc", "cd63cb71954a9f4e48a5994e37a02baf"
	db, err := ParseFile([]byte("subscribers:\n- {username: '001010000000001', ki: "+ki+", opc: "+opc+", amf: 'b9b9', sqn: 'ff9bb4d0b607'}\n"+
		"- {username: '001010000000002', ki: "+ki+", op: cdc202d5123e20f62b6d676ac72cb318}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := db["001010000000001"].AKA()
	if err != nil || hex.EncodeToString(a.Ki) != ki || hex.EncodeToString(a.OPc) != opc || a.AMF != [2]byte{0xb9, 0xb9} || a.SQN != 0xff9bb4d0b607 {
		t.Fatalf("%+v %v", a, err)
	}
	if a, err := db["001010000000002"].AKA(); err != nil || a.OP == nil || a.OPc != nil || a.AMF != [2]byte{0x80, 0} || a.SQN != 0 {
		t.Fatalf("OP, default AMF and SQN: %+v %v", a, err)
	}
	if _, err := (&Subscriber{Password: "x"}).AKA(); !errors.Is(err, ErrNoAKA) {
		t.Fatalf("no Ki: %v", err)
	}
	secret := "0123456789abcdef0123456789abcdeZ"
	for text, want := range map[string]string{
		"{username: a, ki: " + secret + ", opc: " + opc + "}":                   "subscribers[0].ki: want 32 hex digits",
		"{username: a, ki: " + ki + "}":                                         "subscribers[0].opc: required",
		"{username: a, ki: " + ki + ", opc: " + opc + ", op: " + opc + "}":      "subscribers[0].opc, op: one of them",
		"{username: a, ki: " + ki + ", opc: abcd}":                              "subscribers[0].opc: want 32 hex digits",
		"{username: a, ki: " + ki + ", opc: " + opc + ", amf: '80'}":            "subscribers[0].amf",
		"{username: a, ki: " + ki + ", opc: " + opc + ", sqn: '1000000000000'}": "subscribers[0].sqn",
		"{username: a, opc: " + opc + ", password: x}":                          "subscribers[0].ki: required",
	} {
		_, err := ParseFile([]byte("subscribers:\n- "+text+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), opc) {
			t.Errorf("%s: %v, want %q and no secret", text, err, want)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"duplicate username", "subscribers:\n- {username: a, password: x}\n- {username: b}\n- {username: a, password: yy}\n",
			[]string{"subscribers[2].username", `"a" appears twice`}},
		{"unknown profile", "profiles: {gold: {}}\nsubscribers:\n- {username: a, password: p, profileName: silver}\n",
			[]string{"subscribers[0].profileName", `no profile "silver"`}},
		{"missing username", "subscribers:\n- {password: x}\n", []string{"subscribers[0].username: required"}},
		{"missing password", "subscribers:\n- {username: a}\n", []string{"subscribers[0].password: required"}},
		{"short ntPassword", "subscribers:\n- {username: a, ntPassword: 44EBBA8D}\n", []string{"subscribers[0].ntPassword", "32 hex digits"}},
		{"ntPassword not hex", "subscribers:\n- {username: a, ntPassword: 44EBBA8D5312B8D611474411F56989AZ}\n", []string{"subscribers[0].ntPassword"}},
		{"unknown key", "subscribers:\n- {username: a, pasword: x}\n", []string{"pasword"}},
		{"unknown profile key", "profiles: {gold: {sessionTimout: 5}}\n", []string{"sessionTimout"}},
		{"unknown top-level key", "users: []\n", []string{"users"}},
		{"wrong type", "subscribers:\n- {username: a, profile: {sessionTimeout: soon}}\n", []string{"sessionTimeout"}},
		{"negative number", "subscribers:\n- {username: a, profile: {idleTimeout: -1}}\n", []string{"idleTimeout"}},
		// YAML 1.1 reads an unquoted yes/no/on/off as a boolean: refused loudly, never
		// loaded as "true".
		{"boolean password", "subscribers:\n- {username: a, password: yes}\n", []string{"password"}},
		{"numeric password", "subscribers:\n- {username: a, password: 1234}\n", []string{"password"}},
		{"not YAML", "subscribers: [\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFile([]byte(c.text), nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Every bad subscriber is reported at once.
func TestParseFileReportsAll(t *testing.T) {
	_, err := ParseFile([]byte("subscribers:\n- {username: a, password: p, profileName: x}\n- {username: b, password: p}\n- {username: b, password: p}\n- {password: p}\n- {username: e}\n"), nil)
	for _, w := range []string{"subscribers[0].profileName", "subscribers[2].username", "subscribers[3].username", "subscribers[4].password"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s missing from %v", w, err)
		}
	}
}

func TestParseFileCheckHook(t *testing.T) {
	var seen []string
	check := func(p *Profile) error {
		seen = append(seen, p.Class)
		if p.FramedIPAddress == "bad" {
			return errors.New("framedIPAddress: \"bad\" is not an IPv4 address")
		}
		return nil
	}
	db, err := ParseFile([]byte(`
profiles: {gold: {class: gold}}
subscribers:
  - {username: ok, password: p, profileName: gold}
  - {username: broken, password: p, profileName: gold, profile: {framedIPAddress: bad}}
`), check)
	if err == nil || !strings.Contains(err.Error(), "subscribers[1] (broken): framedIPAddress") {
		t.Fatalf("check error must name the subscriber and the field: %v", err)
	}
	if len(seen) != 2 || seen[0] != "gold" || seen[1] != "gold" {
		t.Fatalf("the hook must see the resolved profile: %v", seen)
	}
	if _, ok := db["broken"]; ok {
		t.Fatal("a profile the check refused was loaded")
	}
	if _, ok := db["ok"]; !ok {
		t.Fatal("the good subscriber is missing")
	}
}

func TestParseFileEmpty(t *testing.T) {
	for _, text := range []string{"", "subscribers: []\n", "profiles: {}\n"} {
		db, err := ParseFile([]byte(text), nil)
		if err != nil || len(db) != 0 {
			t.Fatalf("%q: %v %d", text, err, len(db))
		}
	}
}

func TestFileSourceAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.yaml")
	if err := os.WriteFile(path, []byte(sampleFile), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path() != path || f.Len() != 4 {
		t.Fatalf("path %q len %d", f.Path(), f.Len())
	}
	ctx := context.Background()
	if s, err := f.Lookup(ctx, "alice"); err != nil || s.Username != "alice" {
		t.Fatalf("Lookup: %v", err)
	}
	if _, err := f.Lookup(ctx, "Alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("user names are case-sensitive: %v", err)
	}
	if _, err := f.Lookup(ctx, ""); !errors.Is(err, ErrNotFound) {
		t.Fatal("empty user name")
	}
	// A broken new version is refused and the old subscribers stay.
	if err := os.WriteFile(path, []byte("subscribers:\n- {username: x}\n- {username: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if _, err := f.Lookup(ctx, "alice"); err != nil {
		t.Fatal("subscribers lost after a refused reload")
	}
	// A good version replaces them all.
	if err := os.WriteFile(path, []byte("subscribers:\n- {username: zed, password: z}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Fatal("removed subscriber still found")
	}
	if f.Len() != 1 {
		t.Fatalf("Len %d", f.Len())
	}
	// A missing file is an error at open.
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Fatal("missing file accepted")
	}
}

// A profile may give several values of one attribute (Cisco-AVPair, ERX-Service-Activate):
// a YAML list, kept in order; a single value may stay a scalar, a number included. A
// subscriber's list replaces the profile's list of that attribute, as any other field.
func TestParseFileRepeatedReplyAttributes(t *testing.T) {
	db, err := ParseFile([]byte(`
profiles:
  bng:
    replyAttributes:
      Cisco-AVPair: ["ip:addr-pool=gold", "subscriber:accounting-list=acct", "ip:vrf-id=inet"]
      ERX-Service-Activate: [svc-a, svc-b]
      ERX-Service-Activate:2: svc-tagged
      Framed-MTU: 1492
subscribers:
  - {username: alice, password: p, profileName: bng}
  - {username: bob, password: p, profileName: bng, profile: {replyAttributes: {Cisco-AVPair: "ip:addr-pool=bob"}}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := db["alice"].Profile.ReplyAttributes
	if got := fmt.Sprint(a["Cisco-AVPair"]); got != "[ip:addr-pool=gold subscriber:accounting-list=acct ip:vrf-id=inet]" {
		t.Errorf("alice Cisco-AVPair %s: want the three values in order", got)
	}
	if got := fmt.Sprint(a["ERX-Service-Activate"]); got != "[svc-a svc-b]" {
		t.Errorf("alice ERX-Service-Activate %s", got)
	}
	if got := fmt.Sprint(a["ERX-Service-Activate:2"]); got != "[svc-tagged]" {
		t.Errorf("a Name:tag key: %s", got)
	}
	if got := fmt.Sprint(a["Framed-MTU"]); got != "[1492]" {
		t.Errorf("alice Framed-MTU %s: a number is one value", got)
	}
	if got := fmt.Sprint(db["bob"].Profile.ReplyAttributes["Cisco-AVPair"]); got != "[ip:addr-pool=bob]" {
		t.Errorf("bob Cisco-AVPair %s: the subscriber's value replaces the profile's list", got)
	}
	for _, bad := range []string{"{Cisco-AVPair: [a, [b]]}", "{Cisco-AVPair: {x: 1}}", "{Cisco-AVPair: []}", "{Cisco-AVPair: [a, null]}"} {
		_, err := ParseFile([]byte("subscribers:\n- {username: a, password: p, profile: {replyAttributes: "+bad+"}}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "Cisco-AVPair") {
			t.Errorf("%s: %v, want an error naming the attribute", bad, err)
		}
	}
}
