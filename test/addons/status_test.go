package addons

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The status file make test's add-ons lane writes (hack/test.sh): a part's line releases the
// tests waiting for that part only; "failed" after it fails the others.
func TestWaitBuildStatusParts(t *testing.T) {
	status := filepath.Join(t.TempDir(), "status")
	wait := func(part string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := waitBuildStatus(ctx, status, part)
		return err
	}
	write := func(s string) {
		if err := os.WriteFile(status, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait(PartK8ssandra); err != context.DeadlineExceeded {
		t.Fatalf("no status file yet: %v, want to wait until the context ends", err)
	}
	write(PartK8ssandra + "\n")
	if err := wait(PartK8ssandra); err != nil {
		t.Fatalf("after %q: %v", PartK8ssandra, err)
	}
	if err := wait(partAll); err != context.DeadlineExceeded {
		t.Fatalf("every add-on, after only %q: %v, want to go on waiting", PartK8ssandra, err)
	}
	write(PartK8ssandra + "\nfailed\n")
	if err := wait(PartK8ssandra); err != nil {
		t.Fatalf("the part built, the rest failed: %v", err)
	}
	if err := wait(partAll); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("every add-on, the build failed: %v", err)
	}
	write("failed\n")
	if err := wait(PartK8ssandra); err == nil {
		t.Fatal("the part, the build failed before it: no error")
	}
	write(PartK8ssandra + "\nok\n")
	if err := wait(partAll); err != nil {
		t.Fatalf("every add-on built: %v", err)
	}
	if err := wait(PartArgoCD); err != context.DeadlineExceeded {
		t.Fatalf("Argo CD, after the add-ons alone: %v, want to go on waiting", err)
	}
	write(PartK8ssandra + "\nok\n" + PartArgoCD + "\n")
	if err := wait(PartArgoCD); err != nil {
		t.Fatalf("Argo CD built: %v", err)
	}
}
