package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// CoAReply is the answer of POST /api/v1/disconnect and POST /api/v1/coa.
type CoAReply struct {
	Results []coa.Result `json:"results"`
	ACKed   int          `json:"acked"`
	NAKed   int          `json:"naked"`
	Failed  int          `json:"failed"`
}

// selector reads ?user=, ?ip= (or its older name ?framedIp=) or ?nas=&id= (docs/coa.md).
func selector(w http.ResponseWriter, r *http.Request) (coa.Selector, bool) {
	q := r.URL.Query()
	var sel coa.Selector
	switch {
	case q.Get("user") != "":
		sel.User = q.Get("user")
	case q.Get("ip") != "" || q.Get("framedIp") != "":
		p, ok := ipQuery(w, q)
		if !ok {
			return sel, false
		}
		sel.IP = p
	case q.Get("nas") != "" && q.Get("id") != "":
		sel.NAS, sel.ID = q.Get("nas"), q.Get("id")
	default:
		httpError(w, http.StatusBadRequest, "give one of user, ip, or nas and id")
		return sel, false
	}
	return sel, true
}

// disconnect sends a Disconnect-Request to the NAS of every matching active session.
// 200 with one result per session (ack, nak with its Error-Cause, timeout, ...);
// 404 when no active session matches.
func (s *Server) disconnect(w http.ResponseWriter, r *http.Request) {
	s.coaAction(w, r, func(ctx context.Context, x *session.Session) coa.Result {
		return s.CoA.Disconnect(ctx, x, coa.TriggerAPI)
	})
}

// coaRequest sends a CoA-Request carrying the attributes of the JSON body
// {"attributes": {"Session-Timeout": "600", "Filter-Id": "gold"}} (dictionary names).
func (s *Server) coaRequest(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Attributes map[string]string `json:"attributes"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body); err != nil || len(body.Attributes) == 0 {
		httpError(w, http.StatusBadRequest, `want {"attributes": {"Name": "value", ...}}`)
		return
	}
	names := make([]string, 0, len(body.Attributes))
	for n := range body.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	d := s.Dict
	if d == nil {
		d = dict.Builtin
	}
	var attrs radius.Attributes
	for _, n := range names {
		a, ok := d.Lookup(n)
		if !ok {
			httpError(w, http.StatusBadRequest, "attributes: no attribute "+n+" in the dictionary")
			return
		}
		enc, err := a.Encode(body.Attributes[n])
		if err != nil {
			httpError(w, http.StatusBadRequest, "attributes."+n+": "+err.Error())
			return
		}
		attrs.Add(enc.Type, enc.Value)
	}
	s.coaAction(w, r, func(ctx context.Context, x *session.Session) coa.Result {
		return s.CoA.CoA(ctx, x, attrs, coa.TriggerAPI)
	})
}

func (s *Server) coaAction(w http.ResponseWriter, r *http.Request, fn func(context.Context, *session.Session) coa.Result) {
	if s.CoA == nil {
		httpError(w, http.StatusServiceUnavailable, "CoA is not configured")
		return
	}
	sel, ok := selector(w, r)
	if !ok {
		return
	}
	bound := s.CoATimeout
	if bound <= 0 {
		bound = config.Default().CoA.APITimeout.D()
	}
	ctx, cancel := context.WithTimeout(r.Context(), bound)
	defer cancel()
	sessions, err := s.CoA.Find(ctx, sel)
	if err != nil {
		s.storeError(w, err)
		return
	}
	if len(sessions) == 0 {
		s.CoA.CountNoSession(r.URL.Path)
		httpError(w, http.StatusNotFound, "no such active session")
		return
	}
	out := CoAReply{Results: s.CoA.All(ctx, sessions, fn)}
	for _, x := range out.Results {
		switch x.Result {
		case coa.ResultACK:
			out.ACKed++
		case coa.ResultNAK:
			out.NAKed++
		default:
			out.Failed++
		}
	}
	writeJSON(w, out)
}
