package acctcheck

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMissing(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "acked")
	if err := os.WriteFile(f, []byte("s1 1 5 1\ns2 1 2 0\ns3 1 0 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	acked, err := ReadAcked([]string{f, f}) // a file twice: its records counted twice
	if err != nil {
		t.Fatal(err)
	}
	if a := acked["s1"]; a.Starts != 2 || a.Interims != 10 || a.Stops != 2 {
		t.Fatalf("s1 summed %+v", a)
	}
	acked, _ = ReadAcked([]string{f})
	h := map[Key]*Records{
		{NAS: "127.0.0.1", ID: "s1"}: {Starts: 1, Interims: 5, Stops: 1},
		{NAS: "127.0.0.1", ID: "s2"}: {Starts: 1, Interims: 1, Stops: 1}, // an unacknowledged Stop stored: fine
	}
	missing, samples := Missing(acked, h)
	// s2 lacks an interim, s3 its start.
	if missing != 2 || len(samples) != 2 {
		t.Fatalf("missing %d %v, want 2", missing, samples)
	}
	if err := os.WriteFile(f, []byte("s1 x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAcked([]string{f}); err == nil {
		t.Fatal("a malformed line read without error")
	}
}
