package app

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"layeh.com/radius/rfc2759"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

func unhexT(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	apptest.Check(t, err)
	return b
}

// RFC 2759 §9.2: the authenticator challenge and the peer "User"'s MS-CHAP2-Response
// (ident 7, flags 0, peer challenge, 8 reserved octets, NT-Response for "clientPass").
const (
	mschapChallenge = "MS-CHAP-Challenge = 0x5B5D7C7D7B3F2F3E3C2C602132262628"
	mschapResponse  = "MS-CHAP2-Response = 0x070021402324255E262A28295F2B3A337C7E000000000000000082309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF"
	mschapBadNT     = "MS-CHAP2-Response = 0x070021402324255E262A28295F2B3A337C7E0000000000000000000000000000000000000000000000000000000000000000"
)

// radclientAttr returns the value radclient printed for attribute name in a reply ("" if none).
func radclientAttr(out, name string) string {
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + ` = (.*)$`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// One MS-CHAPv2 exchange from radclient to policing and to FreeRADIUS 3.2's rlm_mschap, the
// same user in both: the Access-Accepts carry the same MS-CHAP2-Success (the RFC's
// authenticator response) and the same MPPE keys (radclient decrypts them with the secret),
// and a wrong NT-Response gets a Reject with MS-CHAP-Error from both.
func TestMSCHAPv2AgainstFreeRADIUS(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "fr-users")
	apptest.Check(t, os.WriteFile(users, []byte("User\tCleartext-Password := \"clientPass\"\n"+
		"HashUser\tNT-Password := 0x44EBBA8D5312B8D611474411F56989AE\n"), 0o600))
	fr := newFreeRADIUS(t, "mschap", "--users", users, "--secret", radclientSecret, "--threads", "1")
	n := edgeNode(t, dir, `
log: {level: info}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0"}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  - {name: nas, address: 127.0.0.1, secretFile: {{dir}}/secret}
subscribers: {source: file, file: {{dir}}/subs.yaml}
`, "subscribers:\n  - {username: User, password: clientPass}\n  - {username: HashUser, ntPassword: 44EBBA8D5312B8D611474411F56989AE}\n")

	request := []string{`User-Name = "User"`, mschapChallenge, mschapResponse, "Message-Authenticator = 0x00"}
	ours := apptest.Radclient(t, n.Addr("radius.authAddress").String(), "auth", radclientSecret, 1, 2, request...)
	theirs := apptest.Radclient(t, fr.addr(), "auth", radclientSecret, 1, 2, request...)
	for _, out := range []string{ours, theirs} {
		if !strings.Contains(out, "Received Access-Accept") {
			t.Fatalf("no Access-Accept:\n%s", out)
		}
	}
	// "S=407A5589115FD0D6209F510FE9C04566932CDA56" after the ident 7, in hex.
	if got := radclientAttr(ours, "MS-CHAP2-Success"); got != "0x07533d34303741353538393131354644304436323039463531304645394330343536363933324344413536" {
		t.Fatalf("MS-CHAP2-Success %s:\n%s", got, ours)
	}
	for _, attr := range []string{"MS-CHAP2-Success", "MS-MPPE-Send-Key", "MS-MPPE-Recv-Key", "MS-MPPE-Encryption-Policy", "MS-MPPE-Encryption-Types"} {
		o, f := radclientAttr(ours, attr), radclientAttr(theirs, attr)
		if o == "" || o != f {
			t.Errorf("%s: policing %q, FreeRADIUS %q", attr, o, f)
		}
	}
	if t.Failed() {
		t.Fatalf("policing:\n%s\nFreeRADIUS:\n%s", ours, theirs)
	}

	// A subscriber stored as an NT hash only (NT-Password in FreeRADIUS): the same keys.
	nt, err := rfc2759.GenerateNTResponse(unhexT(t, "5B5D7C7D7B3F2F3E3C2C602132262628"), unhexT(t, "21402324255E262A28295F2B3A337C7E"), []byte("HashUser"), []byte("clientPass"))
	apptest.Check(t, err)
	hashReq := []string{`User-Name = "HashUser"`, mschapChallenge,
		fmt.Sprintf("MS-CHAP2-Response = 0x070021402324255E262A28295F2B3A337C7E0000000000000000%X", nt), "Message-Authenticator = 0x00"}
	ours = apptest.Radclient(t, n.Addr("radius.authAddress").String(), "auth", radclientSecret, 1, 2, hashReq...)
	theirs = apptest.Radclient(t, fr.addr(), "auth", radclientSecret, 1, 2, hashReq...)
	for _, attr := range []string{"MS-CHAP2-Success", "MS-MPPE-Send-Key", "MS-MPPE-Recv-Key"} {
		o, f := radclientAttr(ours, attr), radclientAttr(theirs, attr)
		if o == "" || o != f {
			t.Fatalf("ntPassword: %s: policing %q, FreeRADIUS %q\npolicing:\n%s\nFreeRADIUS:\n%s", attr, o, f, ours, theirs)
		}
	}

	bad := []string{`User-Name = "User"`, mschapChallenge, mschapBadNT, "Message-Authenticator = 0x00"}
	ours = apptest.Radclient(t, n.Addr("radius.authAddress").String(), "auth", radclientSecret, 1, 2, bad...)
	theirs = apptest.Radclient(t, fr.addr(), "auth", radclientSecret, 1, 2, bad...)
	for name, out := range map[string]string{"policing": ours, "FreeRADIUS": theirs} {
		if !strings.Contains(out, "Received Access-Reject") || !strings.Contains(radclientAttr(out, "MS-CHAP-Error"), "E=691") {
			t.Errorf("%s: no Access-Reject with MS-CHAP-Error E=691:\n%s", name, out)
		}
		if radclientAttr(out, "MS-MPPE-Send-Key") != "" {
			t.Errorf("%s: a key in a Reject:\n%s", name, out)
		}
	}
}
