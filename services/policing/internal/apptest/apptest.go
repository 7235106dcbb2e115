// Package apptest holds the helpers that package app's internal tests (package app) and
// external ones (package app_test) share and that need no app.Node: the two test packages
// would otherwise each keep their own copy. It must not import app, whose own tests import
// it (helpers that take a Node are exported from app's export_test.go instead).
package apptest

import (
	"os"
	"testing"
)

// Check fails the test at once on an error.
func Check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// WriteAtomically replaces a file the way a Secret volume update does (write, then rename
// over), so that a watcher never reads it half written.
func WriteAtomically(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	Check(t, os.WriteFile(tmp, data, 0o600))
	Check(t, os.Rename(tmp, path))
}
