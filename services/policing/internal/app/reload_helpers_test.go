package app_test

// Helpers of the hot-reload tests that package app's own tests do not need (those both
// use are in package apptest and in export_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// k8sVolume mimics how the kubelet lays out a mounted Secret: dir/NAME -> ..data/NAME,
// ..data -> ..<timestamp>/, and an update writes a new timestamp directory and swaps the
// ..data symlink atomically (rename).
type k8sVolume struct {
	t   *testing.T
	dir string
	gen int
}

func newK8sVolume(t *testing.T, files map[string]string) *k8sVolume {
	v := &k8sVolume{t: t, dir: t.TempDir()}
	v.update(files)
	for name := range files {
		apptest.Check(t, os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)))
	}
	return v
}

func (v *k8sVolume) path(name string) string { return filepath.Join(v.dir, name) }

func (v *k8sVolume) update(files map[string]string) {
	v.gen++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", v.gen, time.Now().UnixNano())
	apptest.Check(v.t, os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	for name, text := range files {
		apptest.Check(v.t, os.WriteFile(filepath.Join(v.dir, ts, name), []byte(text), 0o600))
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	apptest.Check(v.t, os.Symlink(ts, tmp))
	apptest.Check(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}
