package gx

import (
	"slices"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
)

// supportedFeaturesAVP is a PCEF's Supported-Features (TS 29.229 §6.3.29), M bit as given.
func supportedFeaturesAVP(flags uint8, vendor, listID, list uint32) *diam.AVP {
	return diam.NewAVP(avp.SupportedFeatures, flags|avp.Vbit, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(vendor)),
		diam.NewAVP(avp.FeatureListID, avp.Vbit, Vendor3GPP, datatype.Unsigned32(listID)),
		diam.NewAVP(avp.FeatureList, avp.Vbit, Vendor3GPP, datatype.Unsigned32(list)),
	}})
}

// featureLists are the [Vendor-Id, Feature-List-ID, Feature-List] of an answer's
// Supported-Features AVPs.
func featureLists(t *testing.T, a *diam.Message) [][3]uint32 {
	t.Helper()
	var out [][3]uint32
	for _, sf := range a.AVP {
		if sf.Code != avp.SupportedFeatures {
			continue
		}
		if sf.VendorID != Vendor3GPP || sf.Flags&avp.Mbit != 0 {
			t.Errorf("Supported-Features with vendor %d flags %08b, want 10415 and the M bit clear", sf.VendorID, sf.Flags)
		}
		var l [3]uint32
		parent, c := field{tree: sf}, field{}
		for cs := parent.children(); cs.next(&c); {
			switch c.code() {
			case avp.VendorID:
				l[0] = c.u32()
			case avp.FeatureListID:
				l[1] = c.u32()
			case avp.FeatureList:
				l[2] = c.u32()
			}
		}
		out = append(out, l)
	}
	return out
}

// TS 29.212 §5.4.1: the PCRF answers, in the first answer of the session, the features of the
// PCEF's Supported-Features that it supports too (Feature-List-ID 1 of Gx: Rel8 and Rel9 here,
// Table 5.4.1.1 bits 0 and 1), with the M bit clear (TS 29.229 Table 6.3.1); other lists and
// other vendors' lists have nothing in common with ours. A PCEF that announced none (Rel-7
// behaviour) gets none, and no CCA-U or CCA-T carries it.
func TestSupportedFeatures(t *testing.T) {
	const (
		rel8, rel9, provAF, rel10, adc = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 6
	)
	for _, tc := range []struct {
		name      string
		announced []*diam.AVP
		want      [][3]uint32
	}{
		{"none (Rel-7)", nil, nil},
		{"Rel8 and Rel9", []*diam.AVP{supportedFeaturesAVP(0, Vendor3GPP, 1, rel8|rel9)}, [][3]uint32{{Vendor3GPP, 1, rel8 | rel9}}},
		{"more than we support, M set", []*diam.AVP{supportedFeaturesAVP(avp.Mbit, Vendor3GPP, 1, rel8|rel9|provAF|rel10|adc)},
			[][3]uint32{{Vendor3GPP, 1, rel8 | rel9}}},
		{"Rel8 only", []*diam.AVP{supportedFeaturesAVP(0, Vendor3GPP, 1, rel8)}, [][3]uint32{{Vendor3GPP, 1, rel8}}},
		{"nothing in common", []*diam.AVP{supportedFeaturesAVP(0, Vendor3GPP, 1, rel10|adc)}, nil},
		{"list 2 and another vendor's list 1 beside list 1", []*diam.AVP{
			supportedFeaturesAVP(0, Vendor3GPP, 2, 0xff), supportedFeaturesAVP(0, 9, 1, rel8|rel9),
			supportedFeaturesAVP(0, Vendor3GPP, 1, rel9|rel10)}, [][3]uint32{{Vendor3GPP, 1, rel9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			sid := "pgw.test;features;" + tc.name
			a := r.send(ccr(sid, Initial, 0, append(initialAVPs(), tc.announced...)...))
			if code := r.code(a); code != diam.Success {
				t.Fatalf("CCA-I %d: %s", code, a)
			}
			checkAVPs(t, "CCA-I", a)
			if got := featureLists(t, a); !slices.Equal(got, tc.want) {
				t.Errorf("CCA-I Supported-Features %v, want %v", got, tc.want)
			}
			a = r.send(ccr(sid, Update, 1, append([]*diam.AVP{usedOctets(10)}, tc.announced...)...))
			if got := featureLists(t, a); r.code(a) != diam.Success || len(got) != 0 {
				t.Errorf("CCA-U %d with Supported-Features %v, want 2001 and none", r.code(a), got)
			}
			a = r.send(ccr(sid, Termination, 2))
			if got := featureLists(t, a); r.code(a) != diam.Success || len(got) != 0 {
				t.Errorf("CCA-T %d with Supported-Features %v, want 2001 and none", r.code(a), got)
			}
		})
	}
}

// The M bit of a Supported-Features is read (CCR.FeaturesRequired), from the decoded message as
// from the bytes (FuzzDecodeLean), and what we lack of it named (unsupportedRequired).
func TestFeaturesRequired(t *testing.T) {
	const rel8, rel9, rel10 = 1 << 0, 1 << 1, 1 << 3
	r := DecodeCCR(ccr("pgw.test;required", Initial, 0, supportedFeaturesAVP(avp.Mbit, Vendor3GPP, 1, rel8|rel10),
		supportedFeaturesAVP(0, Vendor3GPP, 1, rel9), supportedFeaturesAVP(avp.Mbit, Vendor3GPP, 2, 0xff)))
	if r.Features != rel8|rel9|rel10 || r.FeaturesRequired != rel8|rel10 || unsupportedRequired(&r) != rel10 {
		t.Errorf("Features %b, FeaturesRequired %b, unsupported %b; want 1011, 1001, 1000", r.Features, r.FeaturesRequired, unsupportedRequired(&r))
	}
}
