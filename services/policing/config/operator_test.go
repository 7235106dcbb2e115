package config

import (
	"path/filepath"
	"testing"
)

// The operator renders policing's configuration (controllers/config.go); its golden files
// must load here, or pods it creates would refuse to start on an unknown or invalid key.
func TestOperatorRenderedConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../../../controllers/testdata/golden/policing-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no operator-rendered configs found: %v", err)
	}
	for _, f := range files {
		if _, err := Load(f, nil, nil); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}
