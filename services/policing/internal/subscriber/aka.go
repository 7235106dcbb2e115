package subscriber

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// AKA is a subscriber's USIM secrets decoded (Subscriber.AKA): Ki, OPc or OP (then OPc is
// derived from it), AMF, and SQN, the last sequence number the card accepted.
type AKA struct {
	Ki, OPc, OP []byte
	AMF         [2]byte
	SQN         uint64
}

// ErrNoAKA: the subscriber has no Ki.
var ErrNoAKA = errors.New("no AKA credentials (ki)")

// AKA decodes the subscriber's USIM secrets (checked when the file was read). Errors name
// the field, never its value.
func (s *Subscriber) AKA() (AKA, error) {
	var a AKA
	if s.Ki == "" {
		return a, ErrNoAKA
	}
	var err error
	if a.Ki, err = hex16("ki", s.Ki); err != nil {
		return a, err
	}
	switch {
	case s.OPc != "" && s.OP != "":
		return a, errors.New("opc, op: one of them, not both")
	case s.OPc != "":
		a.OPc, err = hex16("opc", s.OPc)
	case s.OP != "":
		a.OP, err = hex16("op", s.OP)
	default:
		err = errors.New("opc: required with ki (or op)")
	}
	if err != nil {
		return a, err
	}
	a.AMF = [2]byte{0x80, 0x00} // the separation bit of E-UTRAN/EAP-AKA' (TS 33.401 Annex H)
	if s.AMF != "" {
		b, err := hex.DecodeString(s.AMF)
		if err != nil || len(b) != 2 {
			return a, errors.New("amf: want 4 hex digits")
		}
		a.AMF = [2]byte(b)
	}
	if s.SQN != "" {
		v, err := strconv.ParseUint(s.SQN, 16, 48)
		if err != nil || len(s.SQN) > 12 {
			return a, errors.New("sqn: want at most 12 hex digits (48 bits)")
		}
		a.SQN = v
	}
	return a, nil
}

func hex16(field, v string) ([]byte, error) {
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 16 {
		return nil, fmt.Errorf("%s: want 32 hex digits", field)
	}
	return b, nil
}

// checkAKA vets the AKA fields of a subscriber that has any.
func (s *Subscriber) checkAKA() error {
	if s.Ki == "" {
		if s.OPc != "" || s.OP != "" || s.AMF != "" || s.SQN != "" {
			return errors.New("ki: required with opc, op, amf or sqn")
		}
		return nil
	}
	_, err := s.AKA()
	return err
}
