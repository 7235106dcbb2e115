// Package gx is the Gx policy server (3GPP TS 29.212, PCRF role): it decodes a PCEF's CCR,
// decides the rules, QoS and usage grants from the subscriber's data policy, keeps the Gx
// session in the session store and builds the CCA. Decoding and building are pure functions;
// Handler is the thin step that joins them to the subscriber source and the store.
package gx

import (
	"bytes"
	_ "embed"
	"sync"

	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
)

//go:embed dictionary.xml
var dictionaryXML []byte

var loadOnce sync.Once
var loadErr error

// LoadDictionary adds our Gx AVPs to go-diameter's default dictionary, once, so that CCRs
// carrying them (Charging-Rule-Report…) decode as the grouped and enumerated AVPs they are.
func LoadDictionary() error {
	loadOnce.Do(func() {
		loadErr = dict.Default.Load(bytes.NewReader(dictionaryXML))
		diameter.DictionaryChanged() // AVPs looked up before are known now
	})
	return loadErr
}
