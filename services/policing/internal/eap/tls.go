package eap

import "github.com/openaaa/openaaa/internal/eaptls"

// engine is crypto/tls driven round by round (internal/eaptls, shared with aaa-loadgen's
// EAP peer): the handshake in its own goroutine, each round bounded by eap.roundTimeout.
type engine = eaptls.Engine

var (
	newEngine       = eaptls.NewServer
	errRoundTimeout = eaptls.ErrRoundTimeout
)
