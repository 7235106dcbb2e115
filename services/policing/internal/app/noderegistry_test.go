package app

import (
	"testing"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// A Diameter and an EAP record under one name are one record with both; under two names,
// two; nothing to register is none.
func TestMergeNodes(t *testing.T) {
	gx := &session.Node{Name: "pod-0", Host: "pcrf", AdminURL: "http://10.0.0.1:9090"}
	ep := &session.Node{Name: "pod-0", EAPForward: "10.0.0.1:1815"}
	got := mergeNodes(gx, ep)
	if len(got) != 1 || got[0].Host != "pcrf" || got[0].AdminURL != gx.AdminURL || got[0].EAPForward != ep.EAPForward {
		t.Fatalf("one name: %+v", got)
	}
	other := &session.Node{Name: "pod-0:3868", Host: "pcrf", AdminURL: gx.AdminURL}
	if got := mergeNodes(other, ep); len(got) != 2 || got[0].EAPForward != "" || got[1].AdminURL != "" {
		t.Fatalf("two names: %+v", got)
	}
	if got := mergeNodes(nil, nil); len(got) != 0 {
		t.Fatalf("nothing: %+v", got)
	}
	if got := mergeNodes(nil, ep); len(got) != 1 || got[0] != *ep {
		t.Fatalf("EAP only: %+v", got)
	}
}
