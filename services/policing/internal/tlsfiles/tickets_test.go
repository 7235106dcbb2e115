package tlsfiles

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ticket key file: one key a line (the SHA-256 of the line), the first first, comments and
// blank lines skipped; a short line or no key is refused, naming the line, never the key,
// and the keys in force stay.
func TestTicketKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tickets")
	one, two := strings.Repeat("a", 43), strings.Repeat("b", 32)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k := &TicketKeys{}
	if k.Keys() != nil {
		t.Fatal("keys before a load")
	}
	write("# rotated on 2026-11-27\n" + one + "\n\n  " + two + "  \n")
	if n, err := k.Load(file); err != nil || n != 2 {
		t.Fatalf("Load = %d, %v", n, err)
	}
	if got := k.Keys(); len(got) != 2 || got[0] != sha256.Sum256([]byte(one)) || got[1] != sha256.Sum256([]byte(two)) {
		t.Fatalf("keys not in the file's order")
	}
	for content, want := range map[string]string{one + "\nshort-secret\n": "line 2", "# none\n\n": "no ticket key"} {
		write(content)
		if _, err := k.Load(file); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "short-secret") {
			t.Fatalf("Load(%q) = %v, want an error with %q and no key", content, err, want)
		}
	}
	if len(k.Keys()) != 2 {
		t.Fatal("a refused file replaced the keys in force")
	}
	if _, err := k.Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file loaded")
	}
	r := NewRandomTicketKeys()
	if len(r.Keys()) != 1 || r.Keys()[0] == NewRandomTicketKeys().Keys()[0] {
		t.Fatal("random keys: not one of its own")
	}
}
