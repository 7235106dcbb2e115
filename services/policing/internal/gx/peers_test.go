package gx

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
)

// pythonDiameter is the python of the venv hack/diameter-peers.sh installs python-diameter in.
func pythonDiameter(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "diameter-peers.sh"), "python").Output()
	testenv.Need(t, err == nil, "python-diameter (hack/diameter-peers.sh install)")
	return strings.TrimSpace(string(out))
}

type pcefResult struct {
	Ready   bool `json:"ready"`
	Answers []struct {
		ResultCode uint32   `json:"resultCode"`
		Installed  []string `json:"installed"`
		Removed    []string `json:"removed"`
		Granted    uint64   `json:"granted"`
	} `json:"answers"`
	SessionID    string   `json:"sessionId"`
	RARReceived  bool     `json:"rarReceived"`
	RARInstalled []string `json:"rarInstalled"`
}

func runPCEF(t *testing.T, python, port, originHost string, during ...func()) pcefResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Through a recording relay: tshark decodes what python-diameter and the server said.
	port = strconv.Itoa(diametertest.Proxy(t, "127.0.0.1:"+port))
	args := []string{"testdata/pcef.py", port, originHost, "001010000000001"}
	if len(during) > 0 {
		args = append(args, "rar")
	}
	cmd := exec.CommandContext(ctx, python, args...)
	var stderr, stdout strings.Builder
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range during {
		f()
	}
	err := cmd.Wait()
	out := []byte(stdout.String())
	if err != nil {
		t.Fatalf("pcef.py: %v\n%s", err, stderr.String())
	}
	var r pcefResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("pcef.py output %q: %v\n%s", out, err, stderr.String())
	}
	return r
}

// counter reads a counter of the default registry by name and labels.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if matches(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.Label {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

// python-diameter, a Diameter stack no one here wrote, as the PCEF: CER, CCR-I, a RAR it
// answers, CCR-U/T with usage reports and DPR, against the server and the embedded store.
func TestPythonDiameterPCEF(t *testing.T) {
	python := pythonDiameter(t)
	st, addr, h := newServerWith(t, nil, subscribersYAML, "pgw.py.test")
	port := strconv.Itoa(addr.(*net.TCPAddr).Port)
	dpr := counter(t, "openaaa_diameter_requests_total", map[string]string{"command": "DPR", "result_code": "2001"})
	var rarCode uint32
	var rarErr error
	// Once the PCEF's session is stored, push a RAR to it (bounded wait, polling the store).
	pushRAR := func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if ss, err := st.ByUser(context.Background(), "001010000000001"); err == nil && len(ss) == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				rarCode, rarErr = h.RAR(ctx, ss[0].ID, []string{"boost"}, nil)
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		rarErr = errors.New("the PCEF's session was not stored within 20 s")
	}
	r := runPCEF(t, python, port, "pgw.py.test", pushRAR)
	if !r.Ready || len(r.Answers) != 4 {
		t.Fatalf("PCEF result %+v", r)
	}
	if rarErr != nil || rarCode != 2001 || !r.RARReceived || len(r.RARInstalled) != 1 || r.RARInstalled[0] != "boost" {
		t.Fatalf("RAR: %d, %v; the PCEF received it: %v, installing %v", rarCode, rarErr, r.RARReceived, r.RARInstalled)
	}
	i, u1, u2, term := r.Answers[0], r.Answers[1], r.Answers[2], r.Answers[3]
	for n, a := range r.Answers {
		if a.ResultCode != 2001 {
			t.Fatalf("answer %d: Result-Code %d", n, a.ResultCode)
		}
	}
	if len(i.Installed) != 1 || i.Installed[0] != "internet" || i.Granted != 500 {
		t.Errorf("CCA-I installed %v granted %d, want [internet] and 500", i.Installed, i.Granted)
	}
	if u1.Granted != 400 {
		t.Errorf("CCA-U after 600 of 1000: granted %d, want 400", u1.Granted)
	}
	if len(u2.Installed) != 1 || u2.Installed[0] != "throttle-64k" || len(u2.Removed) == 0 || u2.Granted != 0 {
		t.Errorf("CCA-U at the quota: installed %v removed %v granted %d, want the throttle rule", u2.Installed, u2.Removed, u2.Granted)
	}
	if len(term.Installed) != 0 {
		t.Errorf("CCA-T installed %v", term.Installed)
	}
	hist, err := st.History(context.Background(), "001010000000001", 0)
	if err != nil || len(hist) != 1 || hist[0].ID != r.SessionID || hist[0].InputOctets+hist[0].OutputOctets != 1005 || hist[0].NASIdentifier != "pgw.py.test" {
		t.Fatalf("history after CCR-T: %+v, %v", hist, err)
	}
	if got := counter(t, "openaaa_diameter_requests_total", map[string]string{"command": "DPR", "result_code": "2001"}); got != dpr+1 {
		t.Errorf("DPR answered %v times, want %v", got, dpr+1)
	}
}

// python-diameter as a peer the table does not allow: its CER is refused with 3010 and
// counted, and it never becomes ready.
func TestPythonDiameterUnknownPeer(t *testing.T) {
	python := pythonDiameter(t)
	_, addr := newServer(t, "pgw.py.test")
	port := strconv.Itoa(addr.(*net.TCPAddr).Port)
	refused := counter(t, "openaaa_diameter_peers_refused_total", map[string]string{"reason": "unknown_peer"})
	if r := runPCEF(t, python, port, "intruder.py.test"); r.Ready || len(r.Answers) != 0 {
		t.Fatalf("an unknown peer got through: %+v", r)
	}
	if counter(t, "openaaa_diameter_peers_refused_total", map[string]string{"reason": "unknown_peer"}) <= refused {
		t.Fatal("refusal not counted")
	}
}
