package procstat

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 1000 200\n"
	cpu, err := ParseStat([]byte(line))
	if err != nil || cpu != 3.0 {
		t.Fatalf("cpu %v err %v, want 3.0 s (250+50 ticks)", cpu, err)
	}
	if _, err := ParseStat([]byte("garbage")); err == nil {
		t.Error("garbage accepted")
	}
	if got := ParseRSS([]byte("Name:\tx\nVmRSS:\t   2048 kB\n")); got != 2<<20 {
		t.Errorf("rss %d", got)
	}
}

func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	s, err := Read(0)
	if err != nil || s.RSSBytes <= 0 {
		t.Fatalf("%+v %v", s, err)
	}
}
