package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// FreeRADIUS decodes what policing sends from a profile with the system's dictionaries:
// radclient, reading /usr/share/freeradius, prints each reply attribute by name — the
// Cisco-AVPair and ERX-Service-Activate lists in the profile's order, Huawei, Nokia (Timetra),
// Ericsson, 3GPP and Microsoft attributes with their values.
func TestRadclientDecodesVendorReplies(t *testing.T) {
	_, err := os.Stat("/usr/share/freeradius/dictionary")
	testenv.Need(t, err == nil, "FreeRADIUS's dictionary tree /usr/share/freeradius (hack/freeradius.sh install)")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "subscribers.yaml"), []byte(`
profiles:
  bng:
    replyAttributes:
      Cisco-AVPair: ["ip:addr-pool=gold", "subscriber:accounting-list=acct", "ip:vrf-id=inet"]
      ERX-Service-Activate: [svc-internet, svc-voip]
      Huawei-Input-Average-Rate: 10000000
      Alc-SLA-Prof-Str: sla-100M
      Context-Name: internet
      3GPP-Charging-Characteristics: "0800"
      MS-Primary-DNS-Server: 192.0.2.8
      ALU-AAA-Address-0: 2001:db8::7
subscribers:
  - {username: alice, password: wonderland, profileName: bng}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startPolicing(t, dir, "--set", "radius.dictionaries=[/usr/share/freeradius/dictionary]")
	defer n.stop(t)
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma)
	mustContain(t, out, "Access-Accept",
		`Huawei-Input-Average-Rate = 10000000`, `Alc-SLA-Prof-Str = "sla-100M"`, `Context-Name = "internet"`,
		`3GPP-Charging-Characteristics = "0800"`, `MS-Primary-DNS-Server = 192.0.2.8`, `ALU-AAA-Address-0 = 2001:db8::7`)
	order := regexp.MustCompile(`(?s)Cisco-AVPair = "ip:addr-pool=gold".*Cisco-AVPair = "subscriber:accounting-list=acct".*Cisco-AVPair = "ip:vrf-id=inet".*ERX-Service-Activate(:0)? = "svc-internet".*ERX-Service-Activate(:0)? = "svc-voip"`)
	if !order.MatchString(out) {
		t.Fatalf("repeated attributes not decoded in order:\n%s", out)
	}
	t.Logf("radclient:\n%s", out)
	if strings.Contains(out, "Attr-26") {
		t.Fatalf("FreeRADIUS could not decode a vendor attribute:\n%s", out)
	}
}
