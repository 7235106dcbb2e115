package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gxReport holds the fields of `aaa-loadgen gx --json` the tests read.
type gxReport struct {
	Seconds           float64 `json:"seconds"`
	TPS               float64 `json:"tps"`
	Sessions          uint64  `json:"sessions"`
	SessionsCompleted uint64  `json:"sessionsCompleted"`
	RARs              uint64  `json:"rarsAnswered"`
	Failovers         uint64  `json:"failovers"`
	Unconfirmed       uint64  `json:"unconfirmed"`
	Abandoned         uint64  `json:"abandoned"`
	Commands          []struct {
		Name     string            `json:"name"`
		Answered uint64            `json:"answered"`
		Timeouts uint64            `json:"timeouts"`
		Errors   uint64            `json:"errors"`
		Codes    map[string]uint64 `json:"resultCodes"`
	} `json:"commands"`
	Total struct {
		Answered uint64            `json:"answered"`
		Timeouts uint64            `json:"timeouts"`
		Errors   uint64            `json:"errors"`
		Codes    map[string]uint64 `json:"resultCodes"`
		AvgMs    float64           `json:"avgMs"`
		P99Ms    float64           `json:"p99Ms"`
	} `json:"total"`
	Targets []struct {
		Name     string `json:"name"`
		Answered uint64 `json:"answered"`
	} `json:"targets"`
}

// gxSubscribers is how many Gx subscribers (IMSIs) the tests' subscriber files hold.
const gxSubscribers = 200

// gxIMSIBase is aaa-loadgen's first IMSI (its --imsi-base default).
const gxIMSIBase = 1010000000001

// diameterConfig is the diameter block of a test policing: the generator's identity allowed.
func diameterConfig(port int, host string) string {
	return fmt.Sprintf(`diameter:
  enabled: true
  address: 127.0.0.1:%d
  originHost: %s
  originRealm: e2e
  peers: [{originHost: pcef.loadgen, originRealm: loadgen, address: 127.0.0.0/8}]
`, port, host)
}

// activeGx lists the IDs of the active Gx sessions policing's store has.
func (p *policing) activeGx() []string {
	p.t.Helper()
	// By subscriber: Gx sessions have no by-NAS lookup (docs/diameter-gx.md), and the
	// generator's subscribers are the IMSIs from its default base.
	var ids []string
	for i := range gxSubscribers {
		var body struct {
			Sessions []struct {
				NAS string `json:"nas"`
				ID  string `json:"acctSessionId"`
			} `json:"sessions"`
		}
		user := fmt.Sprintf("%015d", gxIMSIBase+i)
		if code := p.call(http.MethodGet, "/api/v1/sessions?user="+user, nil, &body); code != http.StatusOK {
			p.t.Fatalf("%s GET /api/v1/sessions?user=%s: %d", p.name, user, code)
		}
		for _, s := range body.Sessions {
			if s.NAS == "gx" {
				ids = append(ids, s.ID)
			}
		}
	}
	return ids
}

// TestGxLoadgen: aaa-loadgen's Gx mode (a PCEF) against a real policing with the embedded
// store: every session gets its rules and grants (2001 for every CCR), ends closed in the
// store, counts as Diameter transactions, and a RAR pushed through the admin API reaches the
// generator, which answers it.
func TestGxLoadgen(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if !enabled() {
		t.Skip("end-to-end test: `make test-e2e` (OPENAAA_E2E=1) or OPENAAA_INTEGRATION=require runs it")
	}
	root := repoRoot(t)
	policingBin, loadgenBin := buildBinaries(t, root)
	work := t.TempDir()
	subs := filepath.Join(work, "subscribers.yaml")
	if out, err := exec.Command(loadgenBin, "subscribers", "--users", "10", "--gx-subscribers", fmt.Sprint(gxSubscribers),
		"--policing", subs).CombinedOutput(); err != nil {
		t.Fatalf("aaa-loadgen subscribers: %v\n%s", err, out)
	}
	secret := filepath.Join(work, "secret")
	tokenFile := filepath.Join(work, "admin-token")
	must(t, os.WriteFile(secret, []byte("e2e-secret\n"), 0o600))
	must(t, os.WriteFile(tokenFile, []byte(e2eAdminToken+"\n"), 0o600))
	ports := freePorts(t, 4)
	p := &policing{t: t, bin: policingBin, name: "pcrf", config: filepath.Join(work, "policing.yaml"),
		logFile: filepath.Join(work, "policing.log"), auth: ports[0], acct: ports[1], admin: ports[2]}
	cfg := fmt.Sprintf(`log: {level: info, format: json}
radius: {authAddress: "127.0.0.1:%d", acctAddress: "127.0.0.1:%d"}
clients:
  - {name: loadgen, address: 127.0.0.0/8, secretFile: %s}
subscribers: {source: file, file: %s}
session: {store: embedded}
admin: {address: "127.0.0.1:%d", tokenFile: %s}
%s`, p.auth, p.acct, secret, subs, p.admin, tokenFile, diameterConfig(ports[3], "pcrf.e2e"))
	must(t, os.WriteFile(p.config, []byte(cfg), 0o600))
	p.start()
	defer func() {
		p.stop()
		if t.Failed() {
			t.Logf("---- policing log tail ----\n%s", p.logTail())
		}
	}()
	target := fmt.Sprintf("127.0.0.1:%d", ports[3])
	txBefore := p.mustMetric(`openaaa_transactions_total{kind="diameter"}`)

	const sessions, updates = 300, 3
	var r gxReport
	startLoadgenCommand(t, loadgenBin, "gx", "--target", target, "--subscribers", fmt.Sprint(gxSubscribers),
		"--sessions", fmt.Sprint(sessions), "--updates", fmt.Sprint(updates), "--concurrency", "8",
		"--duration", "2m", "--quiet").waitJSON(t, false, 3*time.Minute, &r)
	t.Logf("gx: %d sessions, %d answered in %.1f s (%.0f/s), avg %.2f ms, p99 %.2f ms, codes %v",
		r.Sessions, r.Total.Answered, r.Seconds, r.TPS, r.Total.AvgMs, r.Total.P99Ms, r.Total.Codes)
	if r.SessionsCompleted != sessions || r.Total.Timeouts != 0 || r.Total.Errors != 0 || r.Failovers != 0 {
		t.Fatalf("%d/%d sessions completed, %d timeouts, %d errors, %d failovers", r.SessionsCompleted, sessions,
			r.Total.Timeouts, r.Total.Errors, r.Failovers)
	}
	want := uint64(sessions * (updates + 2))
	if r.Total.Answered != want || r.Total.Codes["2001"] != want {
		t.Fatalf("answered %d with codes %v, want %d × 2001", r.Total.Answered, r.Total.Codes, want)
	}
	if ids := p.activeGx(); len(ids) != 0 {
		t.Fatalf("%d Gx sessions still active after their CCR-T: %v", len(ids), ids[:min(len(ids), 5)])
	}
	// Every CCR counts as a Diameter transaction, as the field counts them (CER/DPR too).
	if got := p.mustMetric(`openaaa_transactions_total{kind="diameter"}`) - txBefore; got < float64(want) {
		t.Fatalf("openaaa_transactions_total{kind=\"diameter\"} grew by %.0f, want at least %d", got, want)
	}

	// A RAR pushed while a session is up reaches the generator, which answers 2001.
	lg := startLoadgenCommand(t, loadgenBin, "gx", "--target", target, "--subscribers", fmt.Sprint(gxSubscribers),
		"--sessions", "1", "--updates", "3", "--interval", "2s", "--concurrency", "1", "--duration", "1m", "--quiet")
	var sid string
	if err := eventually(t.Context(), 20*time.Second, 100*time.Millisecond, func() error {
		if ids := p.activeGx(); len(ids) == 1 {
			sid = ids[0]
			return nil
		}
		return fmt.Errorf("no active Gx session")
	}); err != nil {
		t.Fatal(err)
	}
	// Through `policing ctl gx-rar`, as an operator does (the admin API's POST /api/v1/gx/rar).
	ctl := exec.Command(policingBin, "ctl", "gx-rar", "--admin", p.adminURL(""), "--session", sid, "--install", "video-hd")
	ctl.Env = append(os.Environ(), "POLICING_ADMIN_TOKEN_FILE="+tokenFile)
	if out, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "2001") {
		t.Fatalf("policing ctl gx-rar: %v\n%s", err, out)
	}
	var r2 gxReport
	lg.waitJSON(t, false, time.Minute, &r2)
	if r2.RARs != 1 || r2.SessionsCompleted != 1 {
		t.Fatalf("the generator answered %d RARs (want 1), completed %d sessions (want 1)", r2.RARs, r2.SessionsCompleted)
	}
}
