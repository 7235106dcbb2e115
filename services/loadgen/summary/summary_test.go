package summary

import (
	"strings"
	"testing"
)

func TestMarshalRoundsAndParses(t *testing.T) {
	out := 14000.123456
	s := Summary{Seconds: 10.00049, Figures: Figures{IncomingTPS: 7000.0004, OutgoingTPS: &out, AvgAuthMs: 2.5004, P99Ms: 9.87654},
		Targets: []Target{{Name: "dc1", Figures: Figures{IncomingTPS: 3500.0006}}}}
	b, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.V != Version || got.IncomingTPS != 7000 || *got.OutgoingTPS != 14000.123 || got.P99Ms != 9.877 || got.Targets[0].IncomingTPS != 3500.001 {
		t.Errorf("round trip: %s", b)
	}
}

// Eight data centers with long names and every figure set still fit in a termination message.
func TestMarshalFitsEightDCs(t *testing.T) {
	v := 123456.789
	f := Figures{IncomingTPS: v, OutgoingTPS: &v, WorkersBusy: &v, Workers: &v, AvgAuthMs: v, AvgAcctMs: v, P99Ms: v,
		Answered: 1 << 40, Timeouts: 1 << 40, Errors: 1 << 40, Accepts: 1 << 40, Rejects: 1 << 40}
	s := Summary{Figures: f}
	for i := range 8 {
		s.Targets = append(s.Targets, Target{Name: strings.Repeat("d", 19) + string(rune('0'+i)), Figures: f})
	}
	b, err := Marshal(s)
	if err != nil || len(b) > MaxBytes {
		t.Fatalf("%d bytes: %v", len(b), err)
	}
	if got, _ := Parse(b); got == nil || got.Truncated || len(got.Targets) != 8 {
		t.Errorf("eight DCs were truncated: %s", b)
	}
}

func TestMarshalTruncates(t *testing.T) {
	s := Summary{Error: strings.Repeat("x", 10000)}
	b, err := Marshal(s)
	if err != nil || len(b) > MaxBytes {
		t.Fatalf("%d bytes: %v", len(b), err)
	}
	got, err := Parse(b)
	if err != nil || !strings.HasSuffix(got.Error, "...") {
		t.Errorf("long error: %v", err)
	}
	var many []Target
	for range 200 {
		many = append(many, Target{Name: strings.Repeat("n", 20)})
	}
	b, err = Marshal(Summary{Targets: many})
	if err != nil || len(b) > MaxBytes {
		t.Fatalf("%d bytes: %v", len(b), err)
	}
	if got, _ := Parse(b); got == nil || !got.Truncated || got.Targets != nil {
		t.Errorf("200 targets: not truncated")
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "not json", `{"v":2}`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
