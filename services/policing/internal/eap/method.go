package eap

import (
	"context"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// method is one EAP method's server side (FreeRADIUS's rlm_eap_<type> behind one interface):
// it produces the type-data of the Requests and consumes that of the Responses.
type method interface {
	// start returns the type-data of the method's first Request; a refusal is a reasonError.
	start(ctx context.Context) ([]byte, error)
	// step consumes a Response's type-data (id: its Identifier) and says what comes next.
	step(ctx context.Context, id byte, data []byte) outcome
	// close releases what the method holds (a TLS engine's goroutine); idempotent.
	close()
}

// outcome of a step: the next Request's type-data, or the end (ok with the subscriber and
// the MSK, or a reject reason).
type outcome struct {
	next   []byte
	done   bool
	sub    *subscriber.Subscriber
	msk    []byte
	reason Reason
}

func fail(r Reason) outcome { return outcome{done: true, reason: r} }

// reasonError is a method's refusal to start (e.g. an unknown subscriber): its reason, not
// an internal error.
type reasonError Reason

func (e reasonError) Error() string { return string(e) }

// Reason says why a conversation ended in EAP-Failure: logged, and the label of
// openaaa_eap_rejects_total (never sent to the peer).
type Reason string

const (
	ReasonDisabled      Reason = "eap_disabled"
	ReasonMalformed     Reason = "malformed"
	ReasonUnknownState  Reason = "unknown_state"
	ReasonNoState       Reason = "no_state"
	ReasonBadIdentifier Reason = "unexpected_identifier"
	ReasonUnexpected    Reason = "unexpected_method"
	ReasonNoMethod      Reason = "no_common_method"
	ReasonFull          Reason = "too_many_conversations"
	ReasonUnknownUser   Reason = "unknown_user"
	ReasonBadPassword   Reason = "wrong_password"
	ReasonNoClearText   Reason = "no_clear_text_password"
	ReasonUnavailable   Reason = "subscriber_source_unavailable"
	ReasonBadFragment   Reason = "bad_fragment"
	ReasonTLS           Reason = "tls_failed"
	ReasonTimeout       Reason = "tls_timeout"
	ReasonCertificate   Reason = "certificate_identity"
	ReasonRevoked       Reason = "certificate_revoked" // listed by its issuer's CRL (eap.crlFile)
	ReasonNoCRL         Reason = "crl_unavailable"     // the issuer has no CRL in force in eap.crlFile
	ReasonInternal      Reason = "internal_error"
	ReasonStateStore    Reason = "state_store_unavailable" // a shared conversation could not be read
	ReasonPolicy        Reason = "policy_refused"          // the subscriber authenticated, the policy said no
	ReasonOwnerGone     Reason = "owner_unreachable"       // the round's owner node is not registered, or did not answer
	// EAP-AKA and AKA'.
	ReasonNoAKA       Reason = "no_aka_credentials"      // the subscriber has no (usable) Ki and OPc
	ReasonSQNStore    Reason = "sqn_store_unavailable"   // the session store gave no SQN
	ReasonBadResponse Reason = "wrong_response"          // AT_RES or AT_MAC is not what the vector says
	ReasonAKAReject   Reason = "authentication_rejected" // the card refused AUTN (another Ki, or a forged network)
	ReasonResync      Reason = "resync_failed"           // AUTS did not verify, or a second resynchronisation
	ReasonClientError Reason = "client_error"            // the peer's AKA-Client-Error
)
