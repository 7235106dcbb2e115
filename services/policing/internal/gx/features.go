package gx

import (
	"github.com/fiorix/go-diameter/v4/diam/avp"
)

// Feature negotiation on Gx (TS 29.212 §5.4.1, the AVPs of TS 29.229 §6.3.29–31): a PCEF
// announces in its CCR-I the features it supports beyond Rel-7 Gx, and the PCRF answers in its
// CCA-I those it supports too. A PCEF that announces none is a Rel-7 one: it gets none.

// featureListGx is Gx's Feature-List-ID 1 (TS 29.212 Table 5.4.1.1), the only list we answer.
const featureListGx = 1

// Bits of Feature-List-ID 1 (TS 29.212 Table 5.4.1.1).
const (
	featureRel8 = 1 << 0 // base Rel-8 Gx, Rel-7's within: PCC rules, event triggers, EPS bearer QoS
	featureRel9 = 1 << 1 // base Rel-9 Gx: usage monitoring control (§4.5.17), which every grant is
)

// supportedFeatures are the features of list 1 this PCRF implements: none of the later ones
// (ProvAFsignalFlow, Rel10, SponsoredConnectivity, ADC…) has a procedure here.
const supportedFeatures = featureRel8 | featureRel9

// The M bit of a PCEF's Supported-Features (CCR.FeaturesRequired): TS 29.229 §7.2.1 has it
// mark the features the sender requires of the receiver, and Cx answers a request requiring one
// it lacks with DIAMETER_ERROR_FEATURE_UNSUPPORTED (5011). TS 29.212 §5.4.1, which Gx's
// negotiation follows, gives the PCRF no such answer to a CCR-I, and PCEFs set the M bit on
// every CCR-I's Supported-Features as a matter of course (their lists name Rel10, ADC… beside
// Rel8): refusing them would refuse the PCEF. So the bit is read and kept, not acted on: the
// CCA-I announces the features in common (TestSupportedFeatures, "more than we support, M
// set"), and the PCEF, which learns from it what we lack, decides.

// unsupportedRequired are the features of list 1 the CCR requires that we lack.
func unsupportedRequired(r *CCR) uint32 { return r.FeaturesRequired &^ supportedFeatures }

// commonFeatures is the Feature-List to answer to the Feature-List-ID 1 of 3GPP a PCEF
// announced (CCR.Features), 0 for none.
func commonFeatures(announced uint32) uint32 { return announced & supportedFeatures }

// supportedFeatures adds to a CCA-I the Supported-Features of the features in common with
// those the CCR-I announced, none when it announced none or there are none in common (a
// Feature-List of 0 tells the PCEF nothing the AVP's absence does not).
func (c *ccaWriter) supportedFeatures(r *CCR) {
	common := commonFeatures(r.Features)
	if common == 0 {
		return
	}
	c.begin(avp.SupportedFeatures)
	c.num(avp.VendorID, Vendor3GPP)
	c.num(avp.FeatureListID, featureListGx)
	c.num(avp.FeatureList, uint64(common))
	c.end()
}

// features is the Feature-List of a Supported-Features AVP when it is 3GPP's Gx list 1, else 0.
func features(a *field) uint32 {
	var vendor, id, list uint32
	var c field
	for l := a.children(); l.next(&c); {
		switch c.code() {
		case avp.VendorID:
			vendor = c.u32()
		case avp.FeatureListID:
			id = c.u32()
		case avp.FeatureList:
			list = c.u32()
		}
	}
	if vendor != Vendor3GPP || id != featureListGx {
		return 0
	}
	return list
}
