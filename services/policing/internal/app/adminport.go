package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/admin"
)

// adminPort is the admin HTTP port (/metrics, /healthz, /readyz, /api/v1). It opens before
// the store, so that a node waiting for its store is seen alive and not ready, with the
// reason (startup.go); the full admin handler takes over once the node serves.
type adminPort struct {
	d      *deps
	token  *admin.Token
	sw     *adminSwitch
	server *http.Server // nil when admin.address is empty
}

func newAdminPort(d *deps) *adminPort { return &adminPort{d: d} }

func (a *adminPort) Start(context.Context) error {
	tok, err := loadAdminToken(a.d)
	if err != nil {
		return err
	}
	a.token, a.sw = tok, newAdminSwitch(a.d.metrics)
	if a.d.cfg.Admin.Address == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.d.cfg.Admin.Address)
	if err != nil {
		return fmt.Errorf("admin.address: %w", err)
	}
	a.d.listening("admin.address", ln.Addr())
	a.server = &http.Server{Handler: a.sw, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := a.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.d.log.Error("admin server failed", "err", err)
		}
	}()
	return nil
}

// Stop closes the port last but for the files' parts: probes are answered while the node
// drains. It has its own short deadline: the drain may have used all of ctx.
func (a *adminPort) Stop(ctx context.Context) error {
	if a.server == nil {
		return nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return a.server.Shutdown(actx)
}

// adminAPI puts the full admin handler on the admin port once the node serves: the API on
// the store, CoA, Gx RARs, the log level, the dictionaries.
type adminAPI struct {
	d        *deps
	port     *adminPort
	store    *storePart
	coa      *coaPart
	pol      *policyPart
	diameter *diameterPart
}

func newAdminAPI(d *deps, port *adminPort, st *storePart, co *coaPart, pol *policyPart, dm *diameterPart) *adminAPI {
	return &adminAPI{d: d, port: port, store: st, coa: co, pol: pol, diameter: dm}
}

func (a *adminAPI) Start(context.Context) error {
	if a.port.server == nil {
		return nil
	}
	s := &admin.Server{Store: a.store.store, LogLevel: a.d.level, Log: a.d.log, Ready: a.d.ready, CoA: a.coa.sender,
		CoATimeout: a.d.cfg.CoA.APITimeout.D(), Pprof: a.d.cfg.Admin.Pprof, Token: a.port.token, Dict: a.pol.dict,
		MetricsHandler: a.d.metrics, Metrics: a.d.m.admin}
	if dm := a.diameter; dm.gx != nil {
		s.GxRAR, s.GxRARTimeout = dm.gx.RAR, a.d.cfg.Diameter.RARTimeout.D()
		s.GxNodes, s.NodeName = dm.lookupNode, diameterNodeName(a.d.cfg.Diameter)
	}
	a.port.sw.serve(s.Handler())
	return nil
}

// Stop leaves the port to adminPort, which stops last.
func (a *adminAPI) Stop(context.Context) error { return nil }
