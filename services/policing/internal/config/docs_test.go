package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every scalar key a user can set must be documented (docs/*.md names it in backticks), so
// the reference stays true as keys are added.
func TestEveryKeyIsDocumented(t *testing.T) {
	files, err := filepath.Glob("../../../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	docs := all.String()
	for _, kv := range EnvNames() {
		if !strings.Contains(docs, "`"+kv[1]+"`") {
			t.Errorf("config key %s is not documented in docs/*.md", kv[1])
		}
	}
}
