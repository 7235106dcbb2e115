package gx

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

// pythonPCEF is the command of testdata/pcef.py (python-diameter) in the venv
// hack/diameter-peers.sh installs, before its arguments.
func pythonPCEF(t *testing.T) []string {
	t.Helper()
	return []string{diameterPeer(t, "python", "python-diameter"), "testdata/pcef.py"}
}

// erlangPCEF is the command of hack/erlang-pcef (Erlang/OTP's diameter application), built by
// hack/diameter-peers.sh once per change of its sources, before its arguments.
func erlangPCEF(t *testing.T) []string {
	t.Helper()
	dir := diameterPeer(t, "erlang-pcef", "Erlang/OTP diameter")
	return []string{"erl", "-noshell", "-pa", dir, "-run", "pcef", "main"}
}

// diameterPeer is what `hack/diameter-peers.sh what` prints, skipping (failing under
// OPENAAA_INTEGRATION=require) when it says the peer is not installed or cannot be built.
func diameterPeer(t *testing.T, what, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "diameter-peers.sh"), what).Output()
	why := " (hack/diameter-peers.sh install)"
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
		why += ": " + strings.TrimSpace(string(ee.Stderr)) // a build's errors
	}
	testenv.Need(t, err == nil, name+why)
	return strings.TrimSpace(string(out))
}

// pcefResult is what a PCEF simulator prints (testdata/pcef.py, hack/erlang-pcef/pcef.erl):
// Errors only from the Erlang one, which decodes strictly.
type pcefResult struct {
	Ready   bool `json:"ready"`
	Answers []struct {
		ResultCode uint32   `json:"resultCode"`
		Installed  []string `json:"installed"`
		Removed    []string `json:"removed"`
		Granted    uint64   `json:"granted"`
		// Features are the answer's Supported-Features, [Vendor-Id, Feature-List-ID,
		// Feature-List] each (the Erlang PCEF only).
		Features [][3]uint32 `json:"features"`
		Errors   []string    `json:"errors"`
	} `json:"answers"`
	SessionID    string   `json:"sessionId"`
	RARReceived  bool     `json:"rarReceived"`
	RARInstalled []string `json:"rarInstalled"`
	CEAVendorID  *uint32  `json:"ceaVendorId"`
	Errors       []string `json:"errors"`
}

// runPCEF runs the PCEF command pcef (PORT ORIGIN_HOST IMSI [rar] appended) against the
// server on port, through a recording relay: tshark decodes what the PCEF and the server said.
func runPCEF(t *testing.T, pcef []string, port, originHost string, during ...func()) pcefResult {
	t.Helper()
	return execPCEF(t, pcef, strconv.Itoa(diametertest.Proxy(t, "127.0.0.1:"+port)), originHost, during...)
}

// execPCEF is runPCEF without the relay, running the functions during while the PCEF runs.
func execPCEF(t *testing.T, pcef []string, port, originHost string, during ...func()) pcefResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append(slices.Clip(pcef[1:]), port, originHost, "001010000000001")
	if len(during) > 0 {
		args = append(args, "rar")
	}
	cmd := exec.CommandContext(ctx, pcef[0], args...)
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
		t.Fatalf("PCEF %v: %v\n%s", pcef, err, stderr.String())
	}
	var r pcefResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("PCEF output %q: %v\n%s", out, err, stderr.String())
	}
	return r
}

// testRegistry holds the metrics of the Gx handlers and Diameter servers (serveOn) and Lua
// engines (TestLuaThrottle) these tests build; counter reads it.
var (
	testRegistry        = prometheus.NewRegistry()
	testShared          = metrics.New(metrics.With(testRegistry))
	testDiameterMetrics = diameter.NewMetrics(metrics.With(testRegistry), testShared)
	testLuaMetrics      = luapolicy.NewMetrics(metrics.With(testRegistry), testShared)
	testGxMetrics       = NewMetrics(metrics.With(testRegistry))
)

// counter reads a counter of testRegistry by name and labels.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := testRegistry.Gather()
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
	pcefSession(t, pythonPCEF(t), "pgw.py.test")
}

// Erlang/OTP's diameter application as the PCEF, strict: it decodes every answer and the RAR
// with its own compiled Gx dictionary (hack/erlang-pcef/pcef_gx.dia: TS 29.212's commands
// and flag rules), and reports each decode error (strict_mbit, strict_arities) and each AVP
// whose M bit its dictionary does not allow. It sends a PGW's CCR-I (both Subscription-Ids,
// Supported-Features, RAT-Type, ULI, default bearer QoS, charging identifiers…) and CCR-U/T
// reporting input and output octets; the CCA-I answers the features in common.
func TestErlangDiameterPCEF(t *testing.T) {
	r := pcefSession(t, erlangPCEF(t), "pgw.erl.test")
	// RFC 6733 §5.3.3: without diameter.vendorId the CEA's Vendor-Id is 0, "ignore this field".
	if r.CEAVendorID == nil || *r.CEAVendorID != 0 {
		t.Errorf("the CEA's Vendor-Id as Erlang decoded it: %v, want 0", r.CEAVendorID)
	}
	// It announced Rel8, Rel9, Rel10 and ADC of list 1 and a feature of list 2: the CCA-I
	// answers Rel8 and Rel9 of list 1 (TS 29.212 §5.4.1, features.go), no other answer any.
	for n, a := range r.Answers {
		var want [][3]uint32
		if n == 0 {
			want = [][3]uint32{{Vendor3GPP, featureListGx, featureRel8 | featureRel9}}
		}
		if !slices.Equal(a.Features, want) {
			t.Errorf("answer %d: Supported-Features as Erlang decoded them %v, want %v", n, a.Features, want)
		}
	}
}

// The Erlang PCEF is as strict as TestErlangDiameterPCEF relies on: a server answering every
// CCR with a CCA that is wrong in four ways gets each reported. Not through the recording
// relay: tshark would fail the test on the same answer.
func TestErlangPCEFReportsWrongAnswers(t *testing.T) {
	pcef := erlangPCEF(t)
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	id := diameter.Identity{Host: "pcrf.test", Realm: "test"}
	wrong := appFunc(func(_ diameter.PeerInfo, m *diam.Message) (*diam.Message, uint32) {
		a := id.Answer(m, diam.Success)
		a.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(diameter.GxApplicationID))
		a.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(1)) // no CC-Request-Number
		a.NewAVP(avp.EventTrigger, avp.Mbit|avp.Vbit, Vendor3GPP, datatype.Enumerated(99))
		a.NewAVP(avp.DefaultEPSBearerQoS, avp.Vbit, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.AllocationRetentionPriority, avp.Vbit, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.PriorityLevel, avp.Mbit|avp.Vbit, Vendor3GPP, datatype.Unsigned32(8)),
			}}),
		}})
		a.NewAVP(3999, avp.Mbit|avp.Vbit, Vendor3GPP, datatype.OctetString("x"))
		return a, diam.Success
	})
	srv, err := diameter.Listen("127.0.0.1:0", diameter.Options{OriginHost: id.Host, OriginRealm: id.Realm,
		Peers: allowPeers([]string{"pgw.erl.test"}), Apps: map[uint32]diameter.Handler{diameter.GxApplicationID: wrong}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	r := execPCEF(t, pcef, strconv.Itoa(srv.Addr().(*net.TCPAddr).Port), "pgw.erl.test")
	if !r.Ready || len(r.Answers) == 0 {
		t.Fatalf("PCEF result %+v", r)
	}
	got := strings.Join(r.Answers[0].Errors, "\n")
	for _, want := range []string{
		"decode error 5005 on AVP 'CC-Request-Number'",                 // strict_arities
		"decode error 5004 on AVP 'Event-Trigger'",                     // outside the dictionary's @enum
		"decode error 5001 on AVP undefined (code 3999, vendor 10415)", // strict_mbit
		"Priority-Level: M bit set, its table says it must not be",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the PCEF did not report %q; it reported:\n%s", want, got)
		}
	}
}

type appFunc func(diameter.PeerInfo, *diam.Message) (*diam.Message, uint32)

func (f appFunc) ServeDiameter(r *diameter.Request) (*diam.Message, uint32) {
	return f(r.Peer, r.Message)
}

// pcefSession runs a PCEF's session (pcef: pythonPCEF, erlangPCEF) against a Gx server on
// the embedded store and subscribersYAML, pushing a RAR once the session is stored, and
// checks what any PCEF must see: 2001 to every CCR without a decode error, the rules and
// grants of a 1000-octet quota used 600 + 400 + 5, the throttle at the quota, the history
// after the CCR-T, the DPR answered.
func pcefSession(t *testing.T, pcef []string, originHost string) pcefResult {
	t.Helper()
	st, addr, h := newServerWith(t, nil, subscribersYAML, originHost)
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
	r := runPCEF(t, pcef, port, originHost, pushRAR)
	if !r.Ready || len(r.Answers) != 4 {
		t.Fatalf("PCEF result %+v", r)
	}
	for _, e := range r.Errors {
		t.Errorf("the PCEF: %s", e)
	}
	i, u1, u2, term := r.Answers[0], r.Answers[1], r.Answers[2], r.Answers[3]
	for n, a := range r.Answers {
		for _, e := range a.Errors {
			t.Errorf("answer %d: %s", n, e)
		}
		if a.ResultCode != 2001 {
			t.Fatalf("answer %d: Result-Code %d", n, a.ResultCode)
		}
	}
	if rarErr != nil || rarCode != 2001 || !r.RARReceived || len(r.RARInstalled) != 1 || r.RARInstalled[0] != "boost" {
		t.Fatalf("RAR: %d, %v; the PCEF received it: %v, installing %v", rarCode, rarErr, r.RARReceived, r.RARInstalled)
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
	if err != nil || len(hist) != 1 || hist[0].ID != r.SessionID || hist[0].InputOctets+hist[0].OutputOctets != 1005 || hist[0].NASIdentifier != originHost {
		t.Fatalf("history after CCR-T: %+v, %v", hist, err)
	}
	if got := counter(t, "openaaa_diameter_requests_total", map[string]string{"command": "DPR", "result_code": "2001"}); got != dpr+1 {
		t.Errorf("DPR answered %v times, want %v", got, dpr+1)
	}
	return r
}

// python-diameter as a peer the table does not allow: its CER is refused with 3010 and
// counted, and it never becomes ready.
func TestPythonDiameterUnknownPeer(t *testing.T) {
	_, addr := newServer(t, "pgw.py.test")
	port := strconv.Itoa(addr.(*net.TCPAddr).Port)
	refused := counter(t, "openaaa_diameter_peers_refused_total", map[string]string{"reason": "unknown_peer"})
	if r := runPCEF(t, pythonPCEF(t), port, "intruder.py.test"); r.Ready || len(r.Answers) != 0 {
		t.Fatalf("an unknown peer got through: %+v", r)
	}
	if counter(t, "openaaa_diameter_peers_refused_total", map[string]string{"reason": "unknown_peer"}) <= refused {
		t.Fatal("refusal not counted")
	}
}
