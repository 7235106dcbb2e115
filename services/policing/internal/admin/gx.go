package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// GxRAR sends a Re-Auth-Request to the PCEF of a Gx session and returns the RAA's
// Result-Code (gx.Handler.RAR, which gives up at diameter.rarTimeout).
type GxRAR func(ctx context.Context, sessionID string, install, remove []string) (uint32, error)

// GxNodes finds the base URL of the admin API of a node by its name (diameter.nodeName),
// through the store's node registry (session.NodeRegistry); session.ErrNotFound when none.
type GxNodes func(ctx context.Context, node string) (string, error)

// GxRARRequest is the body of POST /api/v1/gx/rar (docs/diameter-gx.md).
type GxRARRequest struct {
	SessionID string   `json:"sessionId"`
	Install   []string `json:"install,omitempty"`
	Remove    []string `json:"remove,omitempty"`
}

// forwardSlack is what a forwarded RAR adds to the holding node's own bound: the registry
// lookup and the HTTP hop, so that the holder's answer (a 504 included) is the one relayed.
const forwardSlack = 3 * time.Second

// forwardedHeader marks a RAR request one node forwarded to another (its value names the
// first node): it is forwarded once at most, so two nodes that disagree cannot loop.
const forwardedHeader = "X-OpenAAA-Forwarded-By"

// holder is the error of a RAR another node must send (gx.HeldElsewhere).
type holder interface {
	error
	Holder() string
}

// gxRAR pushes rule changes to a Gx session's PCEF: 200 with the RAA's Result-Code, 404
// for no such active session, 504 when the PCEF does not answer. When another node holds
// the PCEF's connection, the request is forwarded to it (any DC) and its answer relayed; 409
// when that node cannot be found or reached.
func (s *Server) gxRAR(w http.ResponseWriter, r *http.Request) {
	if s.GxRAR == nil {
		httpError(w, http.StatusNotFound, "diameter is not enabled on this node")
		return
	}
	var req GxRARRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.SessionID == "" {
		httpError(w, http.StatusBadRequest, `want {"sessionId": "...", "install": [...], "remove": [...]}`)
		return
	}
	code, err := s.GxRAR(r.Context(), req.SessionID, req.Install, req.Remove)
	var held holder
	switch {
	case errors.Is(err, session.ErrNotFound):
		httpError(w, http.StatusNotFound, "no active Gx session "+req.SessionID)
	case errors.Is(err, context.DeadlineExceeded):
		httpError(w, http.StatusGatewayTimeout, err.Error())
	case errors.As(err, &held):
		s.forwardRAR(w, r, &req, held.Holder())
	case err != nil:
		httpError(w, http.StatusConflict, err.Error())
	default:
		writeJSON(w, map[string]uint32{"resultCode": code})
	}
}

// forwardRAR sends the request to the admin API of node host with the caller's credential
// (the nodes of a cluster share the admin token) and relays its answer.
func (s *Server) forwardRAR(w http.ResponseWriter, r *http.Request, req *GxRARRequest, host string) {
	if by := r.Header.Get(forwardedHeader); by != "" {
		httpError(w, http.StatusConflict, fmt.Sprintf("forwarded by %s, but node %s holds the PCEF's connection", by, host))
		return
	}
	if s.GxNodes == nil {
		httpError(w, http.StatusConflict, "node "+host+" holds the PCEF's connection; this store cannot find it")
		return
	}
	bound := s.GxRARTimeout
	if bound <= 0 {
		bound = config.Default().Diameter.RARTimeout.D()
	}
	ctx, cancel := context.WithTimeout(r.Context(), bound+forwardSlack)
	defer cancel()
	base, err := s.GxNodes(ctx, host)
	if err != nil {
		s.Metrics.rarsForwarded.WithLabelValues("unregistered").Inc()
		httpError(w, http.StatusConflict, fmt.Sprintf("node %s holds the PCEF's connection and is not registered (stopped?): %v", host, err))
		return
	}
	body, _ := json.Marshal(req)
	fr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/api/v1/gx/rar", bytes.NewReader(body))
	if err != nil {
		s.Metrics.rarsForwarded.WithLabelValues("unreachable").Inc()
		httpError(w, http.StatusConflict, fmt.Sprintf("node %s: bad admin URL %q", host, base))
		return
	}
	fr.Header.Set("Content-Type", "application/json")
	fr.Header.Set("Authorization", r.Header.Get("Authorization"))
	fr.Header.Set(forwardedHeader, s.NodeName)
	resp, err := forwardClient.Do(fr)
	if err != nil {
		s.Metrics.rarsForwarded.WithLabelValues("unreachable").Inc()
		s.Log.Warn("gx: RAR not forwarded", "node", host, "url", base, "err", err.Error())
		httpError(w, http.StatusConflict, fmt.Sprintf("node %s holds the PCEF's connection and cannot be reached at %s", host, base))
		return
	}
	defer resp.Body.Close()
	s.Metrics.rarsForwarded.WithLabelValues("ok").Inc()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(forwardedHeader+"-To", host)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 64<<10))
}

// forwardClient never follows redirects: the credential goes to the registered node only.
var forwardClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
