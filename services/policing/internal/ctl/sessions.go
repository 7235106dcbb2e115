package ctl

// policing ctl sessions / session: the admin API's session lookups (GET /api/v1/sessions,
// GET /api/v1/sessions/{nas}/{id}) from the command line, e.g. through `kubectl exec` or a
// port-forward (docs/security.md).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// listSessions is `policing ctl sessions`: prints {"sessions": [...]}; exit 0 with at least
// one session, 3 with none.
func listSessions(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ctl sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	adminURL, tokenFile := apiFlags(fs)
	sel := []struct{ flag, param, help string }{
		{"user", "user", "every active session of this user"},
		{"calling-station", "callingStationId", "the sessions of this Calling-Station-Id (MSISDN, MAC)"},
		{"ip", "ip", "the session holding this IPv4 framed address, or whose IPv6 prefix covers this address or prefix"},
		{"nas", "nas", "every active session of this NAS (as shown by the sessions API)"},
	}
	vals := make([]*string, len(sel))
	for i, s := range sel {
		vals[i] = fs.String(s.flag, "", s.help)
	}
	called := fs.String("called-station", "", "narrow to this Called-Station-Id (APN)")
	timeout := fs.Duration("timeout", 15*time.Second, "overall timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	q := url.Values{}
	for i, s := range sel {
		if *vals[i] != "" {
			q.Set(s.param, *vals[i])
		}
	}
	if len(q) != 1 || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "policing ctl sessions: give exactly one of --user, --calling-station, --ip, --nas")
		return 2
	}
	if *called != "" {
		q.Set("calledStationId", *called)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	raw, code := call(ctx, http.MethodGet, *adminURL, *tokenFile, "/api/v1/sessions?"+q.Encode(), nil, stdout, stderr)
	if code >= 0 {
		return code
	}
	var out struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		fmt.Fprintln(stderr, "policing ctl: bad answer:", err)
		return 2
	}
	if len(out.Sessions) == 0 {
		return 3
	}
	return 0
}

// showSession is `policing ctl session NAS/ACCT-SESSION-ID`: prints the session; exit 0, or 3
// when it is not active.
func showSession(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ctl session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	adminURL, tokenFile := apiFlags(fs)
	timeout := fs.Duration("timeout", 15*time.Second, "overall timeout")
	// The key may come before or after the flags.
	var key string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		key, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if key == "" && fs.NArg() == 1 {
		key = fs.Arg(0)
	} else if fs.NArg() != 0 {
		key = ""
	}
	nasKey, id, ok := strings.Cut(key, "/")
	if !ok || nasKey == "" || id == "" {
		fmt.Fprintln(stderr, "policing ctl session: give one NAS/ACCT-SESSION-ID (NAS as shown by policing ctl sessions)")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	_, code := call(ctx, http.MethodGet, *adminURL, *tokenFile, "/api/v1/sessions/"+url.PathEscape(nasKey)+"/"+url.PathEscape(id), nil, stdout, stderr)
	if code >= 0 {
		return code
	}
	return 0
}
