// Package admin serves the admin HTTP port: /metrics, /healthz, /readyz without a
// credential (scrapers and probes), and behind a bearer token (auth.go) the session lookup
// API under /api/v1, CoA and Disconnect, the runtime log level and /debug/pprof.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/coa"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Server is the admin HTTP handler.
type Server struct {
	Store    session.Store
	LogLevel *slog.LevelVar
	Log      *slog.Logger
	// Ready is checked by /readyz besides the store (e.g. listeners up, not draining).
	Ready func() error
	// Pprof adds /debug/pprof/.
	Pprof bool
	// CoA sends CoA and Disconnect requests (admin/coa.go); nil: not configured.
	CoA *coa.Sender
	// CoATimeout bounds one CoA or Disconnect call (coa.apiTimeout): the lookup and the
	// requests to every session found. 0 takes the configuration's default.
	CoATimeout time.Duration
	// Dict names the attributes of a CoA request (the node's dictionaries); nil: the
	// built-in one.
	Dict *dict.Dict
	// GxRAR pushes a RAR to the PCEF of a Gx session (admin/gx.go); nil: Diameter is off.
	GxRAR GxRAR
	// GxRARTimeout is diameter.rarTimeout, the holding node's own bound on a RAR: a forwarded
	// RAR waits that long and forwardSlack more. 0 takes the configuration's default.
	GxRARTimeout time.Duration
	// GxNodes finds the node a RAR must leave from when this one does not hold the PCEF's
	// connection; NodeName is this node's name (diameter.nodeName) for the forwarded mark.
	GxNodes  GxNodes
	NodeName string
	// Token guards everything but /metrics, /healthz and /readyz; nil or unset: the API
	// refuses every request.
	Token *Token
	// MetricsHandler serves /metrics (the node's registry); nil: no /metrics.
	MetricsHandler http.Handler
	// Metrics are the node's (NewMetrics); required.
	Metrics *Metrics
	mux     *http.ServeMux
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	if s.mux != nil {
		return s.mux
	}
	m := http.NewServeMux()
	if s.MetricsHandler != nil {
		m.Handle("GET /metrics", s.MetricsHandler)
	}
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	m.HandleFunc("GET /readyz", s.readyz)
	// Everything else shows or changes state: token only (auth.go).
	api := http.NewServeMux()
	api.HandleFunc("GET /api/v1/sessions", s.sessions)
	api.HandleFunc("GET /api/v1/sessions/{nas}/{id}", s.session)
	api.HandleFunc("GET /api/v1/history", s.history)
	api.HandleFunc("POST /api/v1/disconnect", s.disconnect)
	api.HandleFunc("POST /api/v1/coa", s.coaRequest)
	api.HandleFunc("POST /api/v1/gx/rar", s.gxRAR)
	api.HandleFunc("GET /api/v1/loglevel", s.getLevel)
	api.HandleFunc("PUT /api/v1/loglevel", s.setLevel)
	if s.Pprof {
		api.HandleFunc("/debug/pprof/", pprof.Index)
		api.HandleFunc("/debug/pprof/profile", pprof.Profile)
		api.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		api.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	m.Handle("/", s.requireToken(api))
	s.mux = m
	return m
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	err := s.Store.Ready(r.Context())
	if err == nil && s.Ready != nil {
		err = s.Ready()
	}
	if err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// sessions answers ?user=, ?callingStationId= (msisdn= is its name for mobile), ?ip=
// (framedIp= is its older name) or ?nas= with the matching active sessions, narrowed by
// ?calledStationId= (apn=) when given.
func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ctx := r.Context()
	var (
		out []*session.Session
		err error
	)
	switch {
	case q.Has("user"):
		out, err = s.Store.ByUser(ctx, q.Get("user"))
	case q.Has("callingStationId") || q.Has("msisdn"):
		out, err = s.Store.ByCallingStation(ctx, either(q, "callingStationId", "msisdn"))
	case q.Has("nas"):
		out, err = s.Store.ByNAS(ctx, q.Get("nas"))
	case q.Has("ip") || q.Has("framedIp"):
		p, ok := ipQuery(w, q)
		if !ok {
			return
		}
		var one *session.Session
		one, err = session.ByIP(ctx, s.Store, p)
		if one != nil {
			out = []*session.Session{one}
		}
		if errors.Is(err, session.ErrNotFound) {
			err = nil
		}
	default:
		httpError(w, http.StatusBadRequest, "give one of user, callingStationId (msisdn), ip, nas")
		return
	}
	if err != nil {
		s.storeError(w, err)
		return
	}
	if q.Has("calledStationId") || q.Has("apn") {
		called := either(q, "calledStationId", "apn")
		out = slices.DeleteFunc(out, func(x *session.Session) bool { return x.CalledStationID != called })
	}
	writeJSON(w, map[string]any{"sessions": nonNil(out)})
}

// either is the value of parameter a, else of its other name b.
func either(q url.Values, a, b string) string {
	if q.Has(a) {
		return q.Get(a)
	}
	return q.Get(b)
}

// ipQuery reads ?ip= (or ?framedIp=): an IPv4 address, an IPv6 address or an IPv6 prefix
// (session.ParseIPQuery); a bad one is answered 400 naming the parameter.
func ipQuery(w http.ResponseWriter, q url.Values) (netip.Prefix, bool) {
	name := "ip"
	if !q.Has(name) {
		name = "framedIp"
	}
	p, err := session.ParseIPQuery(q.Get(name))
	if err != nil {
		httpError(w, http.StatusBadRequest, name+": "+err.Error())
		return netip.Prefix{}, false
	}
	return p, true
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	x, err := s.Store.Get(r.Context(), session.Key{NAS: r.PathValue("nas"), ID: r.PathValue("id")})
	if errors.Is(err, session.ErrNotFound) {
		httpError(w, http.StatusNotFound, "no such active session")
		return
	}
	if err != nil {
		s.storeError(w, err)
		return
	}
	writeJSON(w, x)
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "limit: want a positive number")
			return
		}
		limit = n
	}
	out, err := s.Store.History(r.Context(), r.URL.Query().Get("user"), limit)
	if err != nil {
		s.storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"sessions": nonNil(out)})
}

func (s *Server) getLevel(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]string{"level": levelName(s.LogLevel.Level())})
}

// setLevel takes {"level":"debug"}: the log level changes at once, without restart.
func (s *Server) setLevel(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Level string `json:"level"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, "want {\"level\": \"debug|info|warn|error\"}")
		return
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(body.Level)); err != nil {
		httpError(w, http.StatusBadRequest, "level: "+err.Error())
		return
	}
	s.LogLevel.Set(l)
	s.Log.Info("log level changed", "level", levelName(l))
	writeJSON(w, map[string]string{"level": levelName(l)})
}

func levelName(l slog.Level) string {
	switch l {
	case slog.LevelDebug:
		return "debug"
	case slog.LevelWarn:
		return "warn"
	case slog.LevelError:
		return "error"
	}
	return "info"
}

func (s *Server) storeError(w http.ResponseWriter, err error) {
	s.Log.Warn("admin API: store lookup failed", "err", err)
	httpError(w, http.StatusServiceUnavailable, "session store unavailable")
}

func nonNil(s []*session.Session) []*session.Session {
	if s == nil {
		return []*session.Session{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// Serve runs the admin server until ctx ends.
func Serve(ctx context.Context, srv *http.Server) error {
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
