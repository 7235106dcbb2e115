package gx

import (
	"testing"

	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Our AVPs resolve after loading, and go-diameter's own Gx AVPs still do (Supported-Features
// and its members through go-diameter's other 3GPP dictionaries: features.go reads them).
func TestDictionary(t *testing.T) {
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Charging-Rule-Report", "PCC-Rule-Status", "Rule-Failure-Code",
		"Event-Report-Indication", "Bearer-Control-Mode", "Session-Release-Cause",
		"Charging-Rule-Install", "QoS-Information", "Usage-Monitoring-Information",
		"Supported-Features", "Feature-List-ID", "Feature-List"} {
		if _, err := dict.Default.FindAVP(16777238, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := dict.Default.FindCommand(16777238, 272); err != nil {
		t.Errorf("CCR no longer known: %v", err)
	}
}
