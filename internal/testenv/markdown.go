package testenv

import (
	"fmt"
	"os"
	"strings"
)

// DocBlock is a fenced code block of a markdown file that a test runs: the block right after
// a `<!-- test: TAG -->` comment line.
type DocBlock struct {
	File string // as given to DocBlocks
	Line int    // 1-based line of the opening fence
	Tag  string // the marker's tag
	Lang string // the fence's info string (sh, bash, ...)
	Body string // the lines between the fences, each ending in "\n"
}

// Name is FILE:LINE, for test names and messages.
func (b DocBlock) Name() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// markerPrefix starts the comment that marks the next fenced block for tests.
const markerPrefix = "<!-- test:"

// ParseDocBlocks returns the blocks of markdown text marked `<!-- test: TAG -->`, in order.
// The marker must stand alone on its line and be followed by the opening fence (blank lines
// in between are allowed, nothing else). A marker without a fenced block after it, or a block
// that is never closed, is an error: a marked block that silently stops being tested is the
// rot the marker is there to prevent.
func ParseDocBlocks(file, text, tag string) ([]DocBlock, error) {
	lines := strings.Split(text, "\n")
	var out []DocBlock
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, markerPrefix) || !strings.HasSuffix(l, "-->") {
			continue
		}
		got := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, markerPrefix), "-->"))
		if got != tag {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
			return nil, fmt.Errorf("%s:%d: marker %q is not followed by a fenced code block", file, i+1, l)
		}
		fence := strings.TrimSpace(lines[j])
		ticks := fence[:len(fence)-len(strings.TrimLeft(fence, "`"))]
		b := DocBlock{File: file, Line: j + 1, Tag: tag, Lang: strings.TrimSpace(strings.TrimPrefix(fence, ticks))}
		var body strings.Builder
		k := j + 1
		for ; k < len(lines); k++ {
			if strings.TrimSpace(lines[k]) == ticks {
				break
			}
			body.WriteString(lines[k])
			body.WriteString("\n")
		}
		if k == len(lines) {
			return nil, fmt.Errorf("%s:%d: the fenced block is never closed", file, j+1)
		}
		b.Body = body.String()
		out = append(out, b)
		i = k
	}
	return out, nil
}

// DocBlocks reads path and returns its blocks marked `<!-- test: TAG -->` (ParseDocBlocks);
// name is what the blocks are called in messages (e.g. the path relative to the repository).
func DocBlocks(path, name, tag string) ([]DocBlock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseDocBlocks(name, string(b), tag)
}

// MakeTargets returns the make targets a shell block runs: the words after `make` at the
// start of a command (a line, or after `;`, `&&`, `||`), up to the first one that is not a
// target (an option, a VAR=value, a comment, a shell operator).
func MakeTargets(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, sep := range []string{"&&", "||", ";"} {
			line = strings.ReplaceAll(line, sep, "\n")
		}
		for _, cmd := range strings.Split(line, "\n") {
			f := strings.Fields(cmd)
			if len(f) == 0 || f[0] != "make" {
				continue
			}
			for _, w := range f[1:] {
				if strings.HasPrefix(w, "-") || strings.Contains(w, "=") || strings.ContainsAny(w, "|&<>()$`'\"") {
					break
				}
				out = append(out, w)
			}
		}
	}
	return out
}
