package aaa

import (
	"context"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// A subscriber line has one session at a time: when its NAS starts a new one, an older
// session of the line whose Stop never arrived is over (what Radiator and FreeRADIUS's
// radutmp do). Closing it at once frees its framed IP in the lookups and its memory in the
// store instead of leaving it active until expiry (~21 min by default).
//
// The line is found by the framed IP, and only a session of the same NAS and the same
// User-Name that started earlier counts as stale: with VRFs or overlapping pools two NAS may
// hand out one address at the same time, and a NAS that reuses an address for another
// subscriber has not ended anything of the first one's.

// maxSuperseded bounds the stale sessions one Start closes. Usually there is one; there can
// be a few when several sessions of the line lost their Stop and their Start too (an Interim
// created them).
const maxSuperseded = 4

// supersede closes the sessions the Start or Interim u makes stale, once u is stored: the
// same step, in the same place, whatever the store (acct.go). Its failures are counted and
// logged, never the update's: u is stored and acknowledged all the same.
func (h *Acct) supersede(ctx context.Context, u *session.Update) {
	closed, err := Supersede(ctx, h.Store, u)
	h.Metrics.shared.SessionsSuperseded.Add(float64(len(closed)))
	for _, k := range closed {
		h.Log.Debug("stale session superseded", "nas", k.NAS, "acctSessionId", k.ID, "by", u.Session.ID,
			"user", u.Session.UserName, "framedIp", u.Session.FramedIP)
	}
	if err != nil {
		h.Metrics.shared.SessionsSupersedeErrors.Inc()
		h.Log.Warn("closing the stale session a new one replaces failed", "nas", u.Session.NAS, "acctSessionId", u.Session.ID, "err", err)
	}
}

// Supersede closes, through st, the active sessions that the Accounting-Start u, stored
// already, replaces and returns their keys. Only a Start or an Interim-Update with a framed IP
// and a User-Name can replace one. An Interim counts because, under loss, it is often the
// first message of a session whose Start was lost (the store creates the session from it).
//
// The stale sessions are found among the user's (ByUser), or among the address's claimants by
// a store that matches in place (session.FramedIPMatcher: no copy); u's own session is never
// one of them. Not through ByFramedIP: once u is stored, that lookup names u's session.
//
// The close is a Stop at the new session's start time without Acct-Terminate-Cause: the NAS
// never said why the old session ended, so no cause is invented (Lost-Service is what expiry
// records, Port-Preempted would claim the NAS preempted it); if the real Stop turns up later
// it is recorded as the late Stop of a closed session.
func Supersede(ctx context.Context, st session.Store, u *session.Update) ([]session.Key, error) {
	in := &u.Session
	if u.Kind == session.KindStop || !in.FramedIP.IsValid() || in.UserName == "" {
		return nil, nil
	}
	started := in.StartTime
	if u.Kind == session.KindInterim {
		// Its session's start is its time less Acct-Session-Time. Without that attribute it is
		// unknown: the Interim could be a late one of the very session a newer one replaced,
		// and would close the newer one.
		if in.SessionTime == 0 {
			return nil, nil
		}
		started = in.LastSeen.Add(-time.Duration(in.SessionTime) * time.Second)
	}
	stale, err := staleSessions(ctx, st, in, started)
	var closed []session.Key
	for _, k := range stale {
		if err := closeStale(ctx, st, k, started); err != nil {
			return closed, err
		}
		closed = append(closed, k)
	}
	return closed, err
}

// staleSessions are the keys of the sessions that in, started at started, replaces (at most
// maxSuperseded).
func staleSessions(ctx context.Context, st session.Store, in *session.Session, started time.Time) ([]session.Key, error) {
	if m := matcherOf(st); m != nil {
		return m.MatchFramedIP(in.FramedIP, maxSuperseded, func(old *session.Session) bool { return replaces(in, started, old) }), nil
	}
	sessions, err := st.ByUser(ctx, in.UserName)
	if err != nil {
		return nil, err
	}
	var stale []session.Key
	for _, old := range sessions {
		if len(stale) < maxSuperseded && old.FramedIP == in.FramedIP && replaces(in, started, old) {
			stale = append(stale, old.Key)
		}
	}
	return stale, nil
}

func closeStale(ctx context.Context, st session.Store, k session.Key, at time.Time) error {
	_, err := st.Apply(ctx, &session.Update{Kind: session.KindStop, Session: session.Session{Key: k, LastSeen: at}}, session.WriteOptions{})
	return err
}

// matcherOf returns the store's FramedIPMatcher, or nil.
func matcherOf(st session.Store) session.FramedIPMatcher {
	m, _ := st.(session.FramedIPMatcher)
	return m
}

// replaces reports whether the new session in, started at started, ends old: another
// session of the same NAS and user that started earlier — and not another link of the same
// multilink bundle (same Acct-Multi-Session-Id), which shares the bundle's address.
func replaces(in *session.Session, started time.Time, old *session.Session) bool {
	bundle := in.AcctMultiSessionID != "" && in.AcctMultiSessionID == old.AcctMultiSessionID
	return old.State == session.Active && old.Key != in.Key && old.NAS == in.NAS &&
		old.UserName == in.UserName && old.StartTime.Before(started) && !bundle
}
