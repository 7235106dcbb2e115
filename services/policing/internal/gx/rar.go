package gx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Peers sends a request to a PCEF whose connection this node holds (diameter.Server).
type Peers interface {
	Request(ctx context.Context, originHost string, req *diam.Message) (*diam.Message, error)
}

// ErrElsewhere is returned by RAR when another node holds the PCEF's connection: the RAR
// must leave from that node (HeldElsewhere names it; admin/gx.go forwards the request there).
var ErrElsewhere = errors.New("the PCEF's connection is held by another node")

// HeldElsewhere is the error of a RAR that another node must send.
type HeldElsewhere struct {
	// Node names the node holding the PCEF's connection (Handler.Node).
	Node string
}

func (e *HeldElsewhere) Error() string { return fmt.Sprintf("%v: %s", ErrElsewhere, e.Node) }

// Holder names the node holding the PCEF's connection.
func (e *HeldElsewhere) Holder() string { return e.Node }

// Is makes errors.Is(err, ErrElsewhere) hold.
func (e *HeldElsewhere) Is(target error) bool { return target == ErrElsewhere }

// RAR pushes a policy change to the PCEF of an active Gx session (a Re-Auth-Request with
// Charging-Rule-Install/Remove) and returns the RAA's Result-Code; it gives up at
// RARTimeout (context.DeadlineExceeded).
func (h *Handler) RAR(ctx context.Context, sessionID string, install, remove []string) (uint32, error) {
	ctx, cancel := h.rarContext(ctx)
	defer cancel()
	return h.rarRules(ctx, sessionID, install, remove, nil)
}

// rarContext is ctx bounded by RARTimeout.
func (h *Handler) rarContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := h.RARTimeout
	if d <= 0 {
		d = config.Default().Diameter.RARTimeout.D()
	}
	return context.WithTimeout(ctx, d)
}

// rarRules is RAR that also removes rule bases (Charging-Rule-Base-Name).
func (h *Handler) rarRules(ctx context.Context, sessionID string, install, remove, removeBases []string) (uint32, error) {
	s, err := h.Store.Get(ctx, session.Key{NAS: NAS, ID: sessionID})
	if err != nil {
		return 0, err
	}
	if s.ClientName != h.node() {
		return 0, &HeldElsewhere{Node: s.ClientName}
	}
	if h.Peers == nil {
		return 0, fmt.Errorf("%s: %w", s.NASIdentifier, diameter.ErrNoPeer)
	}
	a, err := h.Peers.Request(ctx, s.NASIdentifier, rar(h.Identity, s, install, remove, removeBases))
	if err != nil {
		return 0, err
	}
	rc, err := a.FindAVP(avp.ResultCode, 0)
	if err != nil {
		return 0, fmt.Errorf("RAA without Result-Code")
	}
	return uint32(rc.Data.(datatype.Unsigned32)), nil
}

// rar builds the Re-Auth-Request (TS 29.212 §5.6.4), pure. The PCEF's realm is not
// stored: Destination-Realm is ours, Destination-Host names the PCEF.
func rar(id diameter.Identity, s *session.Session, install, remove, removeBases []string) *diam.Message {
	m := diam.NewRequest(diam.ReAuth, diameter.GxApplicationID, dict.Default)
	m.Header.CommandFlags |= diam.ProxiableFlag
	m.AddAVP(avpOf(avp.SessionID, datatype.UTF8String(s.ID)))
	m.AddAVP(avpOf(avp.AuthApplicationID, datatype.Unsigned32(diameter.GxApplicationID)))
	m.AddAVP(avpOf(avp.OriginHost, datatype.DiameterIdentity(id.Host)))
	m.AddAVP(avpOf(avp.OriginRealm, datatype.DiameterIdentity(id.Realm)))
	m.AddAVP(avpOf(avp.DestinationRealm, datatype.DiameterIdentity(id.Realm)))
	m.AddAVP(avpOf(avp.DestinationHost, datatype.DiameterIdentity(s.NASIdentifier)))
	m.AddAVP(avpOf(avp.ReAuthRequestType, datatype.Enumerated(0))) // AUTHORIZE_ONLY
	// The rules' AVPs as a CCA's decision writes them.
	AddDecision(m, Decision{Install: install, Remove: remove, RemoveBases: removeBases}, time.Time{})
	return m
}
