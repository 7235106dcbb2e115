package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// GxRAR sends a Re-Auth-Request to the PCEF of a Gx session and returns the RAA's
// Result-Code (gx.Handler.RAR).
type GxRAR func(ctx context.Context, sessionID string, install, remove []string) (uint32, error)

// GxRARRequest is the body of POST /api/v1/gx/rar (docs/diameter-gx.md).
type GxRARRequest struct {
	SessionID string   `json:"sessionId"`
	Install   []string `json:"install,omitempty"`
	Remove    []string `json:"remove,omitempty"`
}

// gxRAR pushes rule changes to a Gx session's PCEF: 200 with the RAA's Result-Code, 404
// for no such active session, 409 when another node holds the PCEF's connection or none
// does, 504 when the PCEF does not answer.
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
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	code, err := s.GxRAR(ctx, req.SessionID, req.Install, req.Remove)
	switch {
	case errors.Is(err, session.ErrNotFound):
		httpError(w, http.StatusNotFound, "no active Gx session "+req.SessionID)
	case errors.Is(err, context.DeadlineExceeded):
		httpError(w, http.StatusGatewayTimeout, err.Error())
	case err != nil:
		httpError(w, http.StatusConflict, err.Error())
	default:
		writeJSON(w, map[string]uint32{"resultCode": code})
	}
}
