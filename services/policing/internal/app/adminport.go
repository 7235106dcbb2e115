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
	addr   net.Addr
}

func newAdminPort(d *deps) *adminPort { return &adminPort{d: d} }

func (a *adminPort) Start(context.Context) error {
	tok, err := loadAdminToken(a.d)
	if err != nil {
		return err
	}
	a.token, a.sw = tok, newAdminSwitch()
	if a.d.cfg.Admin.Address == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.d.cfg.Admin.Address)
	if err != nil {
		return fmt.Errorf("admin.address: %w", err)
	}
	a.addr = ln.Addr()
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
