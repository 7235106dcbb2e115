package subscriber

import (
	"fmt"
	"testing"

	"github.com/go-ldap/ldap/v3"

	"github.com/openaaa/openaaa/services/policing/internal/config"
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
