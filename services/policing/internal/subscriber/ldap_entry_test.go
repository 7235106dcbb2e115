package subscriber

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-ldap/ldap/v3"

	"github.com/openaaa/openaaa/services/policing/config"
)

// Several Name=value of one name in the multi-valued reply attribute are repeated
// attributes in the entry's order (they used to overwrite each other: the last one won).
func TestLDAPEntryRepeatedReplyAttributes(t *testing.T) {
	l := &LDAP{cfg: config.Default().Subscribers.LDAP}
	e := ldap.NewEntry("uid=alice,ou=subscribers,dc=example", map[string][]string{
		"userPassword": {"pw"},
		"openaaaReplyAttribute": {"Cisco-AVPair=ip:addr-pool=gold", "Framed-MTU=1492",
			"Cisco-AVPair=ip:vrf-id=inet", "Cisco-AVPair = subscriber:accounting-list=acct"},
	})
	s, err := l.toSubscriber("alice", []*ldap.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(s.Profile.ReplyAttributes)
	if want := "map[Cisco-AVPair:[ip:addr-pool=gold ip:vrf-id=inet subscriber:accounting-list=acct] Framed-MTU:[1492]]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// An entry with an NT hash (sambaNTPassword) and no clear text is a subscriber with
// NTPassword; a malformed hash or neither attribute is an error that names the attribute and
// not the value.
func TestLDAPEntryNTPassword(t *testing.T) {
	cfg := config.Default().Subscribers.LDAP
	cfg.Attributes.NTPassword = "sambaNTPassword"
	l := &LDAP{cfg: cfg}
	entry := func(attrs map[string][]string) []*ldap.Entry {
		return []*ldap.Entry{ldap.NewEntry("uid=u,ou=subscribers,dc=example", attrs)}
	}
	s, err := l.toSubscriber("u", entry(map[string][]string{"sambaNTPassword": {"44EBBA8D5312B8D611474411F56989AE"}}))
	if err != nil || s.NTPassword != "44EBBA8D5312B8D611474411F56989AE" || s.Password != "" {
		t.Fatalf("%v %+v", err, s)
	}
	// The clear text wins when both are there (CHAP works then).
	s, err = l.toSubscriber("u", entry(map[string][]string{"userPassword": {"pw"}, "sambaNTPassword": {"44EBBA8D5312B8D611474411F56989AE"}}))
	if err != nil || s.Password != "pw" || s.NTPassword != "" {
		t.Fatalf("%v %+v", err, s)
	}
	_, err = l.toSubscriber("u", entry(map[string][]string{"sambaNTPassword": {"secret-not-a-hash"}}))
	if err == nil || !strings.Contains(err.Error(), "sambaNTPassword") || strings.Contains(err.Error(), "secret-not-a-hash") {
		t.Fatalf("error %v", err)
	}
	_, err = l.toSubscriber("u", entry(map[string][]string{"openaaaClass": {"x"}}))
	if err == nil || !strings.Contains(err.Error(), "userPassword or sambaNTPassword") {
		t.Fatalf("error %v", err)
	}
}

// An entry naming a profile the profiles file lacks is an invalid entry, naming the attribute.
func TestLDAPEntryUnknownProfile(t *testing.T) {
	cfg := config.Default().Subscribers.LDAP
	cfg.ProfilesFile, cfg.Attributes.ProfileName = "profiles.yaml", "openaaaProfile"
	l := &LDAP{cfg: cfg, profiles: map[string]Profile{"gold": {Class: "g"}}}
	entry := func(profile string) []*ldap.Entry {
		return []*ldap.Entry{ldap.NewEntry("uid=u,ou=subscribers,dc=example", map[string][]string{"userPassword": {"pw"}, "openaaaProfile": {profile}})}
	}
	if s, err := l.toSubscriber("u", entry("gold")); err != nil || s.Profile.Class != "g" {
		t.Fatalf("%v %+v", err, s)
	}
	if _, err := l.toSubscriber("u", entry("platinum")); err == nil || !strings.Contains(err.Error(), `openaaaProfile: no profile "platinum"`) {
		t.Fatalf("error %v", err)
	}
}

// A USIM entry (Ki, OPc, AMF, SQN attributes) needs no password; a malformed Ki is an error
// that names the field and not the value.
func TestLDAPEntryAKA(t *testing.T) {
	cfg := config.Default().Subscribers.LDAP
	cfg.Attributes.Ki, cfg.Attributes.OPc, cfg.Attributes.AMF, cfg.Attributes.SQN = "openaaaKi", "openaaaOPc", "openaaaAMF", "openaaaSQN"
	l := &LDAP{cfg: cfg}
	entry := func(attrs map[string][]string) []*ldap.Entry {
		return []*ldap.Entry{ldap.NewEntry("uid=001010000000001,ou=subscribers,dc=example", attrs)}
	}
	s, err := l.toSubscriber("001010000000001", entry(map[string][]string{"openaaaKi": {"465b5ce8b199b49faa5f0a2ee238a6bc"},
		"openaaaOPc": {"cd63cb71954a9f4e48a5994e37a02baf"}, "openaaaAMF": {"8000"}, "openaaaSQN": {"000000000020"}}))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.AKA(); err != nil || a.SQN != 0x20 || a.AMF != [2]byte{0x80, 0} || len(a.OPc) != 16 {
		t.Fatalf("%+v %v", a, err)
	}
	_, err = l.toSubscriber("u", entry(map[string][]string{"openaaaKi": {"secret-not-hex-secret-not-hex-00"}, "openaaaOPc": {"cd63cb71954a9f4e48a5994e37a02baf"}}))
	if err == nil || !strings.Contains(err.Error(), "attributes.ki: want 32 hex digits") || strings.Contains(err.Error(), "secret-not-hex") {
		t.Fatalf("error %v", err)
	}
	if n := cfg.Attributes.Names(); !strings.Contains(strings.Join(n, ","), "openaaaKi,openaaaOPc") {
		t.Fatalf("the search does not ask for the AKA attributes: %v", n)
	}
}
