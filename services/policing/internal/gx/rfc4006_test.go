package gx

import (
	"context"
	"fmt"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Codes as RFC 6733 §7.1, RFC 4006 §3 and §8 and TS 29.212 §5.6 number them, from their text.
const (
	codeAuthApplicationID = 258
	codeCCRequestType     = 416
	codeCCRequestNumber   = 415
	codeSessionIDAVP      = 263
	codeOriginRealm       = 296
	codeDestinationRealm  = 283
	codeFailedAVPAVP      = 279
	gxApplicationID       = 16777238
	rfcMissingAVP         = 5005
	rfcUnknownSessionID   = 5002 // RFC 4006 §9.1
	rfcUserUnknown        = 5030 // RFC 4006 §9.1
	rfcInvalidAVPValue    = 5004
)

// RFC 4006 §3.2 and TS 29.212 §5.6.3: every CCA, an error's too, carries Session-Id,
// Auth-Application-Id and the CCR's CC-Request-Type and CC-Request-Number.
func TestErrorCCAsCarryTheirIdentifiers(t *testing.T) {
	r := newRig(t)
	noNumber := ccr("pgw.test;err;3", Initial, 0, initialAVPs()...)
	noNumber.DeleteAVP(avp.CCRequestNumber, 0)
	for _, tc := range []struct {
		name    string
		req     *diam.Message
		code    uint32
		typ     uint32 // 0: none (a value outside the enumeration is not echoed)
		num     int64  // -1: the CCR had none
		sid     string
		failure uint32
	}{
		{"5030", ccr("pgw.test;err;1", Initial, 0, imsi("999")), rfcUserUnknown, Initial, 0, "pgw.test;err;1", 0},
		{"5002", ccr("pgw.test;err;2", Update, 7, usedOctets(1)), rfcUnknownSessionID, Update, 7, "pgw.test;err;2", 0},
		{"5005", noNumber, rfcMissingAVP, Initial, -1, "pgw.test;err;3", codeCCRequestNumber},
		{"5004", ccr("pgw.test;err;4", 9, 3, initialAVPs()...), rfcInvalidAVPValue, 0, 3, "pgw.test;err;4", codeCCRequestType},
	} {
		a := r.send(tc.req)
		if code := r.code(a); code != tc.code {
			t.Errorf("%s: answer %d", tc.name, code)
			continue
		}
		if s := path(a, codeSessionIDAVP); len(s) != 1 || string(s[0].Data.(datatype.UTF8String)) != tc.sid {
			t.Errorf("%s: Session-Id %v, want %q", tc.name, s, tc.sid)
		}
		if app := path(a, codeAuthApplicationID); len(app) != 1 || uint32(app[0].Data.(datatype.Unsigned32)) != gxApplicationID {
			t.Errorf("%s: Auth-Application-Id %v, want %d", tc.name, app, gxApplicationID)
		}
		typ := path(a, codeCCRequestType)
		switch {
		case tc.typ == 0 && len(typ) != 0:
			t.Errorf("%s: CC-Request-Type %v echoed", tc.name, typ)
		case tc.typ != 0 && (len(typ) != 1 || uint32(typ[0].Data.(datatype.Enumerated)) != tc.typ):
			t.Errorf("%s: CC-Request-Type %v, want %d", tc.name, typ, tc.typ)
		}
		num := path(a, codeCCRequestNumber)
		switch {
		case tc.num < 0 && len(num) != 0:
			t.Errorf("%s: CC-Request-Number %v invented", tc.name, num)
		case tc.num >= 0 && (len(num) != 1 || int64(num[0].Data.(datatype.Unsigned32)) != tc.num):
			t.Errorf("%s: CC-Request-Number %v, want %d", tc.name, num, tc.num)
		}
		if tc.failure != 0 {
			if f := path(a, codeFailedAVPAVP, tc.failure); len(f) != 1 {
				t.Errorf("%s: Failed-AVP does not name AVP %d: %s", tc.name, tc.failure, a)
			}
		}
	}
}

// RFC 4006 §3.1: a CCR lacking Origin-Realm or Destination-Realm is 5005 naming it, and opens
// no session.
func TestCCRWithoutRealms(t *testing.T) {
	r := newRig(t)
	for _, code := range []uint32{codeOriginRealm, codeDestinationRealm} {
		sid := fmt.Sprintf("pgw.test;realm;%d", code)
		m := ccr(sid, Initial, 0, initialAVPs()...)
		if n := m.DeleteAVP(code, 0); n != 1 {
			t.Fatalf("AVP %d deleted %d times", code, n)
		}
		a := r.send(m)
		if got := r.code(a); got != rfcMissingAVP {
			t.Errorf("CCR-I without AVP %d: %d, want 5005", code, got)
		}
		if f := path(a, codeFailedAVPAVP, code); len(f) != 1 {
			t.Errorf("CCR-I without AVP %d: Failed-AVP does not name it: %s", code, a)
		}
		if _, err := r.store.Get(context.Background(), session.Key{NAS: NAS, ID: sid}); err != session.ErrNotFound {
			t.Errorf("CCR-I without AVP %d opened a session: %v", code, err)
		}
	}
}
