package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	yamlv3 "gopkg.in/yaml.v3"
)

// The file check walks the YAML node tree (gopkg.in/yaml.v3, which keeps each node's line
// and column) against the configuration type before the document is decoded, and collects
// every problem it finds — unknown keys with the nearest known key, a mapping where a list
// belongs, a word where a number belongs — in file order, each with file:line:column and the
// key's path. It also records where each key is, so that Validate's errors, which name a
// key, can be given that key's line (issue 33).

// Problem is one configuration error or warning: where (File, Line, Column; Line 0 when the
// value came from --set or the environment), which key, what.
type Problem struct {
	File   string
	Line   int
	Column int
	// Source is where a value not from the file came from: "--set", "POLICING_RADIUS_WORKERS".
	Source string
	Key    string
	Msg    string
}

func (p Problem) Error() string {
	var b strings.Builder
	switch {
	case p.Line > 0 && p.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", p.File, p.Line, p.Column)
	case p.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", p.File, p.Line)
	case p.Source != "":
		fmt.Fprintf(&b, "%s: ", p.Source)
	case p.File != "":
		fmt.Fprintf(&b, "%s: ", p.File)
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Errors is every error of a configuration, in file order; it prints one per line.
type Errors []error

func (e Errors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "\n")
}

func (e Errors) Unwrap() []error { return e }

type position struct{ line, col int }

// fileCheck is what the node walk found in one file.
type fileCheck struct {
	file     string
	pos      map[string]position // key path -> where its key (or list item) is
	problems []Problem
	warnings []Problem
	dropped  []string // paths removed from the document before decoding (their errors are reported)
}

// syntaxLine matches yaml.v3's syntax errors: "yaml: line 3: mapping values are not allowed
// in this context".
var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseNodes parses raw YAML into its node tree; a syntax error is returned as a Problem
// with its line and column in plain words.
func parseNodes(file string, raw []byte) (*yamlv3.Node, error) {
	var root yamlv3.Node
	err := yamlv3.Unmarshal(raw, &root)
	if err == nil {
		return &root, nil
	}
	p := Problem{File: file, Msg: "YAML syntax error: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	m := syntaxLine.FindStringSubmatch(err.Error())
	if m == nil {
		m = []string{"", "0", strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	what := m[2]
	p.Msg = "YAML syntax error: " + what
	// yaml.v3 gives the line where the enclosing block began, and no column: the line is
	// the first whose prefix of the file fails with the same error.
	lines := strings.Split(string(raw), "\n")
	p.Line, _ = strconv.Atoi(m[1])
	for k := 1; k <= len(lines); k++ {
		var n yamlv3.Node
		e := yamlv3.Unmarshal([]byte(strings.Join(lines[:k], "\n")+"\n"), &n)
		if e != nil && strings.HasSuffix(e.Error(), what) {
			p.Line = k
			break
		}
	}
	if p.Line >= 1 && p.Line <= len(lines) {
		text := lines[p.Line-1]
		p.Column = len(text) - len(strings.TrimLeft(text, " ")) + 1
		switch {
		case strings.Contains(what, "cannot start any token"):
			if i := strings.IndexAny(text, "\t@`"); i >= 0 {
				p.Column = i + 1
				if text[i] == '\t' {
					p.Msg += " (a tab: indent with spaces)"
				} else {
					p.Msg += fmt.Sprintf(" (%c: quote the value)", text[i])
				}
			}
		case strings.Contains(what, "mapping values are not allowed"):
			if i := strings.Index(text, ": "); i >= 0 {
				if j := strings.Index(text[i+2:], ": "); j >= 0 {
					p.Column = i + 2 + j + 1
					p.Msg += " (a second \": \" on the line: quote the value)"
				} else {
					p.Msg += " (check this line's indentation)"
				}
			}
		case strings.Contains(what, "unexpected end of stream"):
			p.Msg += " (a quote or bracket opened here is not closed)"
		case strings.Contains(what, "did not find expected key"), strings.Contains(what, "expected '-' indicator"):
			p.Msg += " (check this line's indentation)"
		}
	}
	return nil, p
}

// check walks node (a document's root) against t.
func (f *fileCheck) check(node *yamlv3.Node, t reflect.Type, path string) {
	if node.Kind == yamlv3.DocumentNode {
		if len(node.Content) == 0 {
			return
		}
		node = node.Content[0]
	}
	f.walk(node, t, path, path)
}

func (f *fileCheck) bad(n *yamlv3.Node, key, drop, format string, a ...any) {
	f.problems = append(f.problems, Problem{File: f.file, Line: n.Line, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, a...)})
	if drop != "" {
		f.dropped = append(f.dropped, drop)
	}
}

var durationType = reflect.TypeOf(Duration(0))

// walk checks one node. drop is the path to remove from the document when the node is
// wrong: the node's own for a mapping's value, the whole list's for a list item (removing
// an item would renumber the others).
func (f *fileCheck) walk(n *yamlv3.Node, t reflect.Type, path, drop string) {
	if n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yamlv3.ScalarNode && n.Tag == "!!null" {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		if n.Kind != yamlv3.ScalarNode {
			f.bad(n, path, drop, "%s where a duration belongs (\"5s\", \"10m\" or seconds)", kindWords(n))
			return
		}
		if n.Tag == "!!int" || n.Tag == "!!float" {
			return
		}
		if d, err := time.ParseDuration(n.Value); err != nil || d == math.MinInt64 {
			f.bad(n, path, drop, "%q is not a duration (\"5s\", \"10m\" or seconds)", n.Value)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yamlv3.MappingNode {
			f.bad(n, path, drop, "%s where a mapping (%s) belongs", kindWords(n), fieldList(t))
			return
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = t.Field(i).Type
				names = append(names, name)
			}
		}
		f.entries(n, t, path, drop, func(k, v *yamlv3.Node, kp string) {
			ft, ok := fields[k.Value]
			if !ok {
				if why, gone := removedKeys[kp]; gone {
					f.bad(k, kp, kp, "this key was removed: %s", why)
					return
				}
				msg := "unknown key"
				if k.Kind != yamlv3.ScalarNode {
					msg = fmt.Sprintf("%s as a key: keys are words (%s)", kindWords(k), fieldList(t))
				} else if s := nearest(k.Value, names); s != "" {
					msg += "; did you mean " + s + "?"
				}
				f.bad(k, kp, kp, "%s", msg)
				return
			}
			f.walk(v, ft, kp, kp)
		})
	case reflect.Map:
		if n.Kind != yamlv3.MappingNode {
			f.bad(n, path, drop, "%s where a mapping belongs", kindWords(n))
			return
		}
		f.entries(n, t, path, drop, func(_, v *yamlv3.Node, kp string) { f.walk(v, t.Elem(), kp, kp) })
	case reflect.Slice:
		if n.Kind != yamlv3.SequenceNode {
			what := "list"
			if t.Elem().Kind() == reflect.Struct {
				what = "list of mappings, each item starting with \"- \""
			}
			f.bad(n, path, drop, "%s where a %s belongs", kindWords(n), what)
			return
		}
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			f.pos[ip] = position{item.Line, item.Column}
			f.walk(item, t.Elem(), ip, drop)
		}
	case reflect.String:
		if n.Kind != yamlv3.ScalarNode {
			f.bad(n, path, drop, "%s where a string belongs", kindWords(n))
		} else if n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool" {
			f.bad(n, path, drop, "%s is a %s where a string belongs: quote it (\"%s\")", n.Value, tagWords(n.Tag), n.Value)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yamlv3.ScalarNode {
			f.bad(n, path, drop, "%s where a whole number belongs", kindWords(n))
			return
		}
		if n.Tag == "!!int" {
			return
		}
		if v, err := strconv.ParseFloat(n.Value, 64); n.Tag == "!!float" && err == nil && v == math.Trunc(v) {
			return
		}
		f.bad(n, path, drop, "%q is not a whole number", n.Value)
	case reflect.Float32, reflect.Float64:
		if n.Kind != yamlv3.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			f.bad(n, path, drop, "%s where a number belongs", kindWords(n))
		}
	case reflect.Bool:
		if n.Kind != yamlv3.ScalarNode {
			f.bad(n, path, drop, "%s where true or false belongs", kindWords(n))
			return
		}
		if n.Tag == "!!bool" || yaml11Bool[strings.ToLower(n.Value)] {
			return
		}
		f.bad(n, path, drop, "%q is not true or false", n.Value)
	}
}

// entries calls each for every key of mapping n but a merge key (<<, merged by merge), with
// the key's path, once its position is noted and a key written twice warned about.
func (f *fileCheck) entries(n *yamlv3.Node, t reflect.Type, path, drop string, each func(k, v *yamlv3.Node, kp string)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if f.merge(k, v, t, path, drop) {
			continue
		}
		kp := joinKey(path, k.Value)
		f.twice(seen, k, kp)
		f.pos[kp] = position{k.Line, k.Column}
		each(k, v, kp)
	}
}

// merge walks a merge key's mappings (<<: *base) as part of the mapping they are merged
// into; it reports whether k was one.
func (f *fileCheck) merge(k, v *yamlv3.Node, t reflect.Type, path, drop string) bool {
	if k.Tag != "!!merge" {
		return false
	}
	if v.Kind == yamlv3.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind == yamlv3.SequenceNode {
		for _, m := range v.Content {
			f.walk(m, t, path, drop)
		}
		return true
	}
	f.walk(v, t, path, drop)
	return true
}

// twice warns of a key written twice in one mapping: the last one counts, silently.
func (f *fileCheck) twice(seen map[string]int, k *yamlv3.Node, kp string) {
	if line, dup := seen[k.Value]; dup {
		f.warnings = append(f.warnings, Problem{File: f.file, Line: k.Line, Column: k.Column, Key: kp,
			Msg: fmt.Sprintf("written twice (also on line %d): this one counts", line)})
	}
	seen[k.Value] = k.Line
}

// yaml11Bool are the words sigs.k8s.io/yaml (YAML 1.1) also reads as booleans.
var yaml11Bool = map[string]bool{"yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}

// kindWords says what a node is, in words.
func kindWords(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping (key: value lines)"
	case yamlv3.SequenceNode:
		return "a list"
	}
	if w := tagWords(n.Tag); w != "value" {
		return fmt.Sprintf("the %s %s", w, n.Value)
	}
	return fmt.Sprintf("the value %q", n.Value)
}

func tagWords(tag string) string {
	switch tag {
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return "value"
}

// fieldList names a few keys of a struct for a message.
func fieldList(t reflect.Type) string {
	var names []string
	for i := 0; i < t.NumField() && len(names) < 3; i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	if len(names) < t.NumField() {
		names = append(names, "...")
	}
	return strings.Join(names, ", ")
}

// nearest returns the candidate closest to s (a misspelling: edit distance at most a third
// of the word, at least 2; or the same word in another case), "" if none is close.
func nearest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions, deletions,
// substitutions and transpositions of neighbours (adress, addrses) count one each.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// dropPath removes a key path (a.b[2].c) from a decoded document, so that the decoder does
// not report again what the walk reported.
func dropPath(doc any, path string) {
	parts := splitPath(path)
	cur := doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch n := cur.(type) {
		case map[string]any:
			if last {
				delete(n, p)
				return
			}
			cur = n[p]
		case []any:
			idx, err := strconv.Atoi(strings.Trim(p, "[]"))
			if err != nil || idx < 0 || idx >= len(n) {
				return
			}
			if last {
				n[idx] = nil
				return
			}
			cur = n[idx]
		default:
			return
		}
	}
}

// splitPath splits a.b[2].c into a, b, 2, c.
func splitPath(path string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(path, "[", ".["), func(r rune) bool { return r == '.' }) // "[2]" kept, brackets and all
}

// keyOf returns the key path a validation message begins with ("clients[0].address: ..."),
// "" if it does not look like one.
func keyOf(msg string) (key, rest string) {
	k, r, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(k, " \"") {
		return "", msg
	}
	return k, r
}

// under tells whether key is path or below it.
func under(key, path string) bool {
	return key == path || strings.HasPrefix(key, path+".") || strings.HasPrefix(key, path+"[")
}

// clientRef finds the client entries a message names ("also the name of clients[0]").
var clientRef = regexp.MustCompile(`clients\[\d+\]`)

// place turns validation errors into Problems with the line of their key: the key's own, else
// its nearest parent's in the file; a key set by an override is named by the override.
// Errors below a dropped path are left out (the walk reported the cause). The result is
// in file order, errors without a line last.
func (f *fileCheck) place(errs []error, overrides map[string]string) []Problem {
	var out []Problem
	for _, err := range flatten(errs) {
		key, rest := keyOf(err.Error())
		p := Problem{File: f.file, Key: key, Msg: rest}
		if key == "" {
			p.Msg = err.Error()
			out = append(out, p)
			continue
		}
		skip := false
		for _, d := range f.dropped {
			if under(key, d) {
				skip = true
			}
		}
		if skip {
			continue
		}
		for o, src := range overrides {
			if under(key, o) {
				p.Source = src
			}
		}
		if p.Source == "" {
			for k := key; k != ""; k = parentKey(k) {
				if at, ok := f.pos[k]; ok {
					p.Line, p.Column = at.line, at.col
					break
				}
			}
		}
		p.Msg = clientRef.ReplaceAllStringFunc(p.Msg, func(ref string) string {
			if at, ok := f.pos[ref]; ok && ref != key && !strings.HasPrefix(key, ref+".") {
				return fmt.Sprintf("%s (line %d)", ref, at.line)
			}
			return ref
		})
		out = append(out, p)
	}
	sortProblems(out)
	return out
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// parentKey strips the last segment: clients[0].address -> clients[0] -> clients -> "".
func parentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i < 0 {
		return ""
	}
	return k[:i]
}

func flatten(errs []error) []error {
	var out []error
	for _, e := range errs {
		if m, ok := e.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(m.Unwrap())...)
			continue
		}
		out = append(out, e)
	}
	return out
}

func problemsErr(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	errs := make(Errors, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}
