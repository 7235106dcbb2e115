package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// A Lua accounting hook's coa() reaches the session's NAS as a CoA-Request with the
// script's attributes (FreeRADIUS as the NAS's CoA receiver), once per resendAfter.
func TestLuaPolicyCoAOnQuota(t *testing.T) {
	nas := newFreeRADIUS(t, "nasl", "--role", "coa", "--secret", radclientSecret)
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "policy.lua"), []byte(`
inputs = { accounting = { "session.quotaPercent" } }
function accounting(req, session, sub)
  local used = session.quotaPercent
  if used and used >= 100 then coa("Mikrotik-Rate-Limit", "1M/1M") end
end`), 0o600))
	n := coaNodeIn(t, dir, nas, "policy: {lua: {file: "+filepath.Join(dir, "policy.lua")+"}}\n")
	crossQuota(t, n.Addr("radius.acctAddress").String(), "L-1", 500)
	testenv.Eventually(t, 20*time.Second, "policy CoA-Request at the NAS", func() bool {
		return strings.Contains(nas.detail(), "CoA-Request")
	})
	d := nas.detail()
	for _, w := range []string{`Acct-Session-Id = "L-1"`, `Mikrotik-Rate-Limit = "1M/1M"`} {
		if !strings.Contains(d, w) {
			t.Errorf("the NAS's record lacks %q:\n%s", w, d)
		}
	}
	testenv.Eventually(t, 10*time.Second, "policy CoA counted", func() bool {
		return Metric(t, n, `openaaa_coa_requests_total{kind="coa",result="ack",trigger="policy"}`) == 1
	})
	if c := strings.Count(d, "Disconnect-Request"); c != 0 {
		t.Errorf("%d Disconnect-Requests: the script asked for a CoA", c)
	}
}
