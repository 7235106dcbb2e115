// Package ctl is `policing ctl`: operator commands that call a running node's admin API.
//
//	policing ctl disconnect (--user NAME | --ip ADDRESS|PREFIX | --session NAS/ACCT-SESSION-ID) [--admin URL] [--token-file FILE]
//	policing ctl coa        (selector as above) --attr Name=value [--attr ...] [--admin URL] [--token-file FILE]
//	policing ctl gx-rar     --session SESSION-ID [--install RULE,...] [--remove RULE,...] [--admin URL] [--token-file FILE]
//	policing ctl sessions   (--user NAME | --calling-station ID | --ip ADDRESS|PREFIX | --nas NAS) [--admin URL] [--token-file FILE]
//	policing ctl session    NAS/ACCT-SESSION-ID [--admin URL] [--token-file FILE]
//
// The admin API's bearer token comes from --token-file, $POLICING_ADMIN_TOKEN_FILE,
// $POLICING_ADMIN_TOKEN, or the file the operator mounts in policing pods (DefaultTokenFile),
// so that `kubectl exec ... policing ctl` needs no flag. Never from a flag's value: command
// lines are visible to every process on the host.
//
// It prints the JSON answer (one result per session: ack, nak with its Error-Cause,
// timeout, ...) and exits 0 when every session was ACKed, 1 when any was not, 3 when no
// active session matched, 2 on usage or connection errors. gx-rar pushes rule changes to a
// Gx session's PCEF (a RAR, from whichever node holds its connection: docs/diameter-gx.md)
// and exits 0 when the RAA is 2001, 1 for another Result-Code, 3 for no such session.
// sessions lists the active sessions matching a selector and session shows one
// (sessions.go): they exit 0 when something was found, 3 when nothing was.
package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/admin"
)

const usage = `usage: policing ctl <command> [flags]

commands:
  disconnect  send a Disconnect-Request to the NAS of the selected sessions
  coa         send a CoA-Request with --attr Name=value attributes to the NAS of the selected sessions
  gx-rar      send a Gx RAR installing/removing rules to the PCEF of --session (a Diameter Session-Id)
  sessions    list the active sessions of --user, --calling-station, --ip or --nas (JSON)
  session     show one active session: NAS/ACCT-SESSION-ID (JSON)

select with one of: --user NAME, --ip ADDRESS|PREFIX, --session NAS/ACCT-SESSION-ID
  (--ip: an IPv4 framed address, or an IPv6 address or prefix inside a session's delegated
  or framed IPv6 prefix, longest match; --framed-ip is its older name)
--admin URL is the node's admin address (env POLICING_ADMIN, default http://127.0.0.1:9812)
--token-file FILE holds the admin API's bearer token (env POLICING_ADMIN_TOKEN_FILE, or the
  token itself in POLICING_ADMIN_TOKEN; default ` + DefaultTokenFile + ` when it exists)
`

// DefaultTokenFile is where the operator and the chart mount the admin token in policing pods.
const DefaultTokenFile = "/etc/openaaa/admin/token"

type attrFlags map[string]string

func (a attrFlags) String() string { return fmt.Sprint(map[string]string(a)) }
func (a attrFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want Name=value, got %q", v)
	}
	a[k] = val
	return nil
}

// Main runs `policing ctl ARGS`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	switch cmd {
	case "gx-rar":
		return gxRAR(ctx, args[1:], stdout, stderr)
	case "sessions":
		return listSessions(ctx, args[1:], stdout, stderr)
	case "session":
		return showSession(ctx, args[1:], stdout, stderr)
	}
	if cmd != "disconnect" && cmd != "coa" {
		fmt.Fprintf(stderr, "policing ctl: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	fs := flag.NewFlagSet("ctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	adminURL, tokenFile := apiFlags(fs)
	user := fs.String("user", "", "every active session of this user")
	ip := fs.String("ip", "", "the active session holding this IPv4 framed address, or whose IPv6 prefix covers this IPv6 address or prefix")
	framedIP := fs.String("framed-ip", "", "older name of --ip")
	sess := fs.String("session", "", "one session: NAS/ACCT-SESSION-ID (NAS as shown by the sessions API)")
	timeout := fs.Duration("timeout", 90*time.Second, "overall timeout")
	attrs := attrFlags{}
	if cmd == "coa" {
		fs.Var(attrs, "attr", "attribute of the CoA-Request, Name=value (repeatable)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	q := url.Values{}
	n := 0
	if *user != "" {
		q.Set("user", *user)
		n++
	}
	for _, v := range []string{*ip, *framedIP} {
		if v != "" {
			q.Set("ip", v)
			n++
		}
	}
	if *sess != "" {
		nasKey, id, ok := strings.Cut(*sess, "/")
		if !ok || nasKey == "" || id == "" {
			fmt.Fprintln(stderr, "policing ctl: --session wants NAS/ACCT-SESSION-ID")
			return 2
		}
		q.Set("nas", nasKey)
		q.Set("id", id)
		n++
	}
	if n != 1 {
		fmt.Fprintf(stderr, "policing ctl %s: give exactly one of --user, --ip, --session\n", cmd)
		return 2
	}
	var body io.Reader
	if cmd == "coa" {
		if len(attrs) == 0 {
			fmt.Fprintln(stderr, "policing ctl coa: give at least one --attr Name=value")
			return 2
		}
		b, _ := json.Marshal(map[string]any{"attributes": map[string]string(attrs)})
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	raw, code := post(ctx, *adminURL, *tokenFile, "/api/v1/"+cmd+"?"+q.Encode(), body, stdout, stderr)
	if code >= 0 {
		return code
	}
	var out struct {
		Results []json.RawMessage `json:"results"`
		ACKed   int               `json:"acked"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		fmt.Fprintln(stderr, "policing ctl: bad answer:", err)
		return 2
	}
	if out.ACKed != len(out.Results) {
		return 1
	}
	return 0
}

// apiFlags are the flags of every command: the admin API's address and token file.
func apiFlags(fs *flag.FlagSet) (adminURL, tokenFile *string) {
	def := os.Getenv("POLICING_ADMIN")
	if def == "" {
		def = fmt.Sprintf("http://127.0.0.1:%d", config.DefaultAdminPort)
	}
	adminURL = fs.String("admin", def, "admin API base URL (env POLICING_ADMIN)")
	tokenFile = fs.String("token-file", os.Getenv("POLICING_ADMIN_TOKEN_FILE"), "file holding the admin API's bearer token (env POLICING_ADMIN_TOKEN_FILE)")
	return adminURL, tokenFile
}

// post sends body to the admin API and prints the answer. It returns the answer when it is
// 200 with code -1, else the exit code (3 for 404, 2 for anything else).
func post(ctx context.Context, adminURL, tokenFile, path string, body io.Reader, stdout, stderr io.Writer) ([]byte, int) {
	return call(ctx, http.MethodPost, adminURL, tokenFile, path, body, stdout, stderr)
}

// call is post with any method.
func call(ctx context.Context, method, adminURL, tokenFile, path string, body io.Reader, stdout, stderr io.Writer) ([]byte, int) {
	token, err := adminToken(tokenFile)
	if err != nil {
		fmt.Fprintln(stderr, "policing ctl:", err)
		return nil, 2
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(adminURL, "/")+path, body)
	if err != nil {
		fmt.Fprintln(stderr, "policing ctl:", err)
		return nil, 2
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "policing ctl:", err)
		return nil, 2
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	_, _ = stdout.Write(raw)
	switch resp.StatusCode {
	case http.StatusOK:
		return raw, -1
	case http.StatusNotFound:
		return raw, 3
	case http.StatusUnauthorized, http.StatusForbidden:
		fmt.Fprintf(stderr, "\npolicing ctl: HTTP %d: the admin API wants its token (--token-file, POLICING_ADMIN_TOKEN_FILE)\n", resp.StatusCode)
	}
	return raw, 2
}

// gxRAR is `policing ctl gx-rar`.
func gxRAR(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ctl gx-rar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	adminURL, tokenFile := apiFlags(fs)
	sess := fs.String("session", "", "the Gx session's Diameter Session-Id")
	install := fs.String("install", "", "Charging-Rule-Names to install, comma-separated")
	remove := fs.String("remove", "", "Charging-Rule-Names to remove, comma-separated")
	timeout := fs.Duration("timeout", 15*time.Second, "overall timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	req := admin.GxRARRequest{SessionID: *sess, Install: names(*install), Remove: names(*remove)}
	if req.SessionID == "" || len(req.Install)+len(req.Remove) == 0 {
		fmt.Fprintln(stderr, "policing ctl gx-rar: give --session and at least one rule to --install or --remove")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	b, _ := json.Marshal(req)
	raw, code := post(ctx, *adminURL, *tokenFile, "/api/v1/gx/rar", bytes.NewReader(b), stdout, stderr)
	if code >= 0 {
		return code
	}
	var out struct {
		ResultCode uint32 `json:"resultCode"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		fmt.Fprintln(stderr, "policing ctl: bad answer:", err)
		return 2
	}
	if out.ResultCode != 2001 {
		return 1
	}
	return 0
}

func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// adminToken finds the bearer token: the named file, else $POLICING_ADMIN_TOKEN, else the
// default file when it exists; "" when there is none (the API will answer 401).
func adminToken(file string) (string, error) {
	if file == "" {
		if t := strings.TrimSpace(os.Getenv("POLICING_ADMIN_TOKEN")); t != "" {
			return t, nil
		}
		if _, err := os.Stat(DefaultTokenFile); err != nil {
			return "", nil
		}
		file = DefaultTokenFile
	}
	b, err := admin.ReadTokenFile(file) // the file as policing reads it
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return string(b), nil
}
