package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// An edit replaces src[pos:end] with text; an insertion has pos == end.
type edit struct {
	pos, end int
	text     string
	class    int // 0 closes a wrap, 1 opens one, 2 replaces
	seq      int
}

// edits collects the changes to one file's source.
type edits struct {
	fset *token.FileSet
	src  []byte
	list []edit
	seq  int
}

func (e *edits) off(p token.Pos) int { return e.fset.File(p).Offset(p) }

// text returns the source of n as written.
func (e *edits) text(n ast.Node) string { return string(e.src[e.off(n.Pos()):e.off(n.End())]) }

func (e *edits) add(pos, end int, text string, class int) {
	e.seq++
	e.list = append(e.list, edit{pos: pos, end: end, text: text, class: class, seq: e.seq})
}

// replace replaces node n.
func (e *edits) replace(n ast.Node, text string) { e.add(e.off(n.Pos()), e.off(n.End()), text, 2) }

// replaceRange replaces the source from pos to end.
func (e *edits) replaceRange(pos, end token.Pos, text string) { e.add(e.off(pos), e.off(end), text, 2) }

// insert inserts text at pos, after any wrap closing there.
func (e *edits) insert(pos token.Pos, text string) { e.add(e.off(pos), e.off(pos), text, 1) }

// wrap surrounds n with pre and post. Wraps registered first are outside.
func (e *edits) wrap(n ast.Node, pre, post string) {
	e.add(e.off(n.Pos()), e.off(n.Pos()), pre, 1)
	e.add(e.off(n.End()), e.off(n.End()), post, 0)
}

// apply returns the source with every edit made; overlapping replacements
// are an error.
func (e *edits) apply(name string) ([]byte, error) {
	l := e.list
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		if a.class != b.class {
			return a.class < b.class
		}
		if a.class == 0 {
			return a.seq > b.seq
		}
		return a.seq < b.seq
	})
	var out strings.Builder
	cur := 0
	for _, d := range l {
		if d.pos < cur {
			return nil, fmt.Errorf("%s: overlapping edits at offset %d (%q)", name, d.pos, d.text)
		}
		out.Write(e.src[cur:d.pos])
		out.WriteString(d.text)
		cur = d.end
	}
	out.Write(e.src[cur:])
	return []byte(out.String()), nil
}
