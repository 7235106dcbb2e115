package gx

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
)

// checkAVPs checks every AVP of m, through grouped AVPs, against the specifications' table
// (avps.go): known, the vendor and V bit of its row, the flags its row says must be set set
// and those it says must not be set clear, its data type, and an enumerated value within
// the specification's enumeration.
func checkAVPs(t *testing.T, what string, m *diam.Message) {
	t.Helper()
	for _, err := range avpErrors(m.AVP, what) {
		t.Error(err)
	}
}

func avpErrors(avps []*diam.AVP, at string) []error {
	var errs []error
	for _, a := range avps {
		s, ok := Specs[avpKey{a.Code, a.VendorID}]
		where := fmt.Sprintf("%s/%d(vendor %d)", at, a.Code, a.VendorID)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: an AVP the table does not have", where))
			continue
		}
		where = at + "/" + s.Name
		if (a.Flags&avp.Vbit != 0) != (s.Vendor != 0) {
			errs = append(errs, fmt.Errorf("%s: V bit %v with vendor %d", where, a.Flags&avp.Vbit != 0, s.Vendor))
		}
		if a.Flags&s.Must != s.Must {
			errs = append(errs, fmt.Errorf("%s: flags %08b lack %08b (%s: must)", where, a.Flags, s.Must, s.Ref))
		}
		if a.Flags&s.MustNot != 0 {
			errs = append(errs, fmt.Errorf("%s: flags %08b have %08b (%s: must not)", where, a.Flags, a.Flags&s.MustNot, s.Ref))
		}
		typ := a.Data.Type()
		if _, ok := a.Data.(*diam.GroupedAVP); ok {
			typ = datatype.GroupedType // go-diameter's decoded groups say GroupedAVPType
		}
		if typ != s.Type {
			errs = append(errs, fmt.Errorf("%s: type %d, want %d", where, typ, s.Type))
		}
		if s.Enum != nil {
			if v, ok := a.Data.(datatype.Enumerated); !ok || s.Enum[uint32(v)] == "" {
				errs = append(errs, fmt.Errorf("%s: value %v not in the enumeration of %s", where, a.Data, s.Ref))
			}
		}
		if g, ok := a.Data.(*diam.GroupedAVP); ok {
			errs = append(errs, avpErrors(g.AVP, where)...)
		}
	}
	return errs
}

// enumNames are the specification's names of the values of an enumerated AVP in avps.
func enumNames(avps []*diam.AVP, code, vendor uint32) []string {
	var out []string
	for _, a := range avps {
		if a.Code == code && a.VendorID == vendor {
			out = append(out, Specs[avpKey{code, vendor}].Enum[uint32(a.Data.(datatype.Enumerated))])
		}
	}
	return out
}

// What a PCEF sees of a whole session, checked against the specifications rather than our
// constants: every AVP of the CCA-I (rules, rule bases, a dynamic rule with flows and QoS,
// default bearer QoS, AMBR, grants, Revalidation-Time), of the throttling CCA-U and of the
// CCA-T obeys TS 29.212 Table 5.3.1 and the tables it borrows from; the CCA-I arms the
// triggers named USAGE_REPORT and REVALIDATION_TIMEOUT (TS 29.212 §5.3.7; issue 34: it armed
// 26, TAI_CHANGE); the throttle removes the rule base by Charging-Rule-Base-Name (§5.3.3).
func TestAnswersFollowTheSpecTables(t *testing.T) {
	r := newRig(t)
	sid := "pgw.test;spec;1"
	a := r.send(ccr(sid, Initial, 0, initialAVPs()...))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-I %d", code)
	}
	checkAVPs(t, "CCA-I", a)
	if got := enumNames(a.AVP, avp.EventTrigger, Vendor3GPP); !slices.Equal(got, []string{"USAGE_REPORT", "REVALIDATION_TIMEOUT"}) {
		t.Errorf("CCA-I arms Event-Triggers %v, want [USAGE_REPORT REVALIDATION_TIMEOUT] (TS 29.212 §5.3.7)", got)
	}
	if got := path(a, avp.ChargingRuleInstall, avp.ChargingRuleBaseName); len(got) != 1 || string(got[0].Data.(datatype.UTF8String)) != "base-web" {
		t.Errorf("CCA-I installs rule bases %v, want [base-web]", got)
	}

	a = r.send(ccr(sid, Update, 1, usedOctets(1000)))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-U %d", code)
	}
	checkAVPs(t, "CCA-U", a)
	if got := path(a, avp.ChargingRuleRemove, avp.ChargingRuleBaseName); len(got) != 1 || string(got[0].Data.(datatype.UTF8String)) != "base-web" {
		t.Errorf("the throttle removes rule bases %v by Charging-Rule-Base-Name, want [base-web] (TS 29.212 §5.3.3): %s", got, a)
	}
	if got := ruleNames(t, a, avp.ChargingRuleRemove); slices.Contains(got, "base-web") {
		t.Errorf("the throttle removes the rule base base-web as a Charging-Rule-Name: %v", got)
	}

	a = r.send(ccr(sid, Termination, 2))
	if code := r.code(a); code != diam.Success {
		t.Fatalf("CCA-T %d", code)
	}
	checkAVPs(t, "CCA-T", a)
}

// Every Enumerated row of the table has its enumeration, every row a name and a source, and
// each of the M and V bits in exactly one of its must, may and must not.
func TestSpecTableComplete(t *testing.T) {
	for k, s := range Specs {
		if s.Name == "" || s.Ref == "" || s.Code != k.code || s.Vendor != k.vendor {
			t.Errorf("row %+v", s)
		}
		if (s.Type == datatype.EnumeratedType) != (s.Enum != nil) {
			t.Errorf("%s: type %d with enumeration %v", s.Name, s.Type, s.Enum != nil)
		}
		for _, f := range []uint8{avp.Mbit, avp.Vbit} { // each row decides M and V, once
			if n := bits.OnesCount8(s.Must&f) + bits.OnesCount8(s.May&f) + bits.OnesCount8(s.MustNot&f); n != 1 {
				t.Errorf("%s: flag %08b in %d of must, may and must not, want 1", s.Name, f, n)
			}
		}
	}
}
