package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// MarshalSet writes the keys of c that are set, every field that is not its zero value, as
// policing's YAML: every other key keeps its default (Default) when the file is loaded. A
// program that writes policing's configuration (the operator) fills a zero Config with what it
// means and writes this. keep are pointers to fields of *c to write even at their zero value,
// where the default is not zero and a false or a 0 is a choice.
func MarshalSet(c *Config, keep ...any) ([]byte, error) {
	kept := map[fieldRef]bool{}
	for _, p := range keep {
		v := reflect.ValueOf(p)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return nil, fmt.Errorf("config: keep: %T is not a pointer to a field", p)
		}
		kept[fieldRef{v.Pointer(), v.Type().Elem()}] = false
	}
	doc, _ := setValue(reflect.ValueOf(c).Elem(), kept)
	for ref, found := range kept {
		if !found {
			return nil, fmt.Errorf("config: keep: a %s that is not a field of the configuration", ref.typ)
		}
	}
	return yaml.Marshal(doc)
}

// fieldRef names a field by address and type (a struct and its first field share the address).
type fieldRef struct {
	addr uintptr
	typ  reflect.Type
}

// setValue is v as a value of the YAML document, and whether it is set.
func setValue(v reflect.Value, kept map[fieldRef]bool) (any, bool) {
	if v.Type() == durationType {
		d := time.Duration(v.Int())
		return formatDuration(d), d != 0
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			fv := v.Field(i)
			val, set := setValue(fv, kept)
			if fv.CanAddr() {
				ref := fieldRef{fv.Addr().Pointer(), fv.Type()}
				if _, ok := kept[ref]; ok {
					kept[ref], set = true, true
				}
			}
			if set {
				m[name] = val
			}
		}
		return m, len(m) > 0
	case reflect.Pointer:
		if v.IsNil() {
			return nil, false
		}
		val, _ := setValue(v.Elem(), kept)
		return val, true // a pointer that is set is a choice, zero or not
	case reflect.Slice:
		if v.Len() == 0 {
			return nil, false
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i], _ = setValue(v.Index(i), kept)
		}
		return out, true
	case reflect.Map:
		if v.Len() == 0 {
			return nil, false
		}
		out := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())], _ = setValue(it.Value(), kept)
		}
		return out, true
	}
	return v.Interface(), !v.IsZero()
}

// formatDuration writes whole seconds under an hour in seconds ("110s", not "1m50s": the
// operator counts its drain budgets in seconds), others as time.Duration prints them ("20ms",
// "1h0m0s"). The operator's rendered text is hashed to roll the pods: this keeps it as the
// operator wrote it before it used these types.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 && d > 0 && d < time.Hour {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
