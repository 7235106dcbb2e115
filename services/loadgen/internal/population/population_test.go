package population

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPatternAndFiles(t *testing.T) {
	p, err := Pattern(3, "user%05d", "pass%05d", "10.0.0.254")
	if err != nil {
		t.Fatal(err)
	}
	if p.Users[0].Name != "user00001" || p.Users[2].Password != "pass00003" || p.Users[2].FramedIP != [4]byte{10, 0, 1, 0} {
		t.Fatalf("users %+v", p.Users)
	}
	dir := t.TempDir()
	yml := filepath.Join(dir, "subscribers.yaml")
	if err := WriteFile(yml, p.WritePolicing); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(yml)
	if !strings.Contains(string(raw), `- {username: "user00001", password: "pass00001", profileName: default, profile: {framedIPAddress: 10.0.0.254}}`) {
		t.Errorf("policing file:\n%s", raw)
	}
	back, err := Load(yml)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Users) != 3 || back.Users[1] != p.Users[1] {
		t.Errorf("round trip: %+v", back.Users)
	}
	var fr bytes.Buffer
	p.WriteFreeRADIUS(&fr)
	if !strings.Contains(fr.String(), "user00002 Cleartext-Password := \"pass00002\"\n\tFramed-IP-Address = 10.0.0.255,\n\tSession-Timeout = 3600,\n\tAcct-Interim-Interval = 300\n") {
		t.Errorf("users file:\n%s", fr.String())
	}
}

func TestLoadLines(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.txt")
	os.WriteFile(f, []byte("# comment\nalice secret 192.0.2.7\n\nbob pw\n"), 0o600)
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Users) != 2 || p.Users[0].FramedIP != [4]byte{192, 0, 2, 7} || p.Users[1].Password != "pw" {
		t.Fatalf("%+v", p.Users)
	}
	os.WriteFile(f, []byte("only-a-name\n"), 0o600)
	if _, err := Load(f); err == nil {
		t.Error("bad line accepted")
	}
}

func TestPatternNoIP(t *testing.T) {
	p, err := Pattern(1, "u%d", "p%d", "none")
	if err != nil || p.Users[0].FramedIP != [4]byte{} {
		t.Fatal(err, p.Users)
	}
	var b bytes.Buffer
	p.WritePolicing(&b)
	if strings.Contains(b.String(), "framedIPAddress") {
		t.Error("address written for none")
	}
	if _, err := Pattern(0, "u%d", "p%d", ""); err == nil {
		t.Error("empty population accepted")
	}
}
