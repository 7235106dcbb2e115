// Package testenv decides what an integration test does when a real component it needs
// (radclient, Cassandra, slapd, kube-apiserver) is missing: skip during a developer's plain
// `go test`, fail under `make test`, which sets OPENAAA_INTEGRATION=require after
// provisioning every component — so a missing install can never pass as green.
package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Required reports whether integration components are mandatory in this run.
func Required() bool { return os.Getenv("OPENAAA_INTEGRATION") == "require" }

// Need skips or fails the test when ok is false; what names the component and how to get it.
func Need(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if Required() {
		t.Fatalf("%s is required (OPENAAA_INTEGRATION=require) but missing; run `make provision`", what)
	}
	t.Skipf("%s not available; `make test` provisions it", what)
}

// LookPath returns the path of a program, or skips/fails the test through Need.
func LookPath(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Need(t, err == nil, name+" ("+hint+")")
	return p
}

// RepoRoot returns the repository root: the directory with go.mod above the working directory
// (a test runs in its package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 20 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("no go.mod above the working directory")
}

// Root is RepoRoot for tests: it fails t when there is no go.mod above the working directory.
// Tests use it rather than runtime.Caller, whose file names -trimpath (make test) rewrites.
func Root(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
