//go:build unix

package population

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func writeHello(w io.Writer) error {
	_, err := io.WriteString(w, "hello\n")
	return err
}

// What is not a regular file is written through, not replaced by one: `subscribers
// --policing /dev/stdout` once turned /dev/stdout (a symbolic link) into a regular file.
func TestWriteFileKeepsNonRegularTargets(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.yaml")
	os.WriteFile(target, []byte("old content, longer than the new\n"), 0o600)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, writeHello); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symbolic link was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "hello\n" {
		t.Fatalf("target holds %q", b)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := WriteFile(fifo, writeHello); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello\n" {
		t.Fatalf("read %q from the pipe", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(fifo + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}

	// A regular file is still replaced atomically.
	if err := WriteFile(target, writeHello); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("regular file: %v %v", fi.Mode(), err)
	}
}
