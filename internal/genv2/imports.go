package main

import (
	"go/ast"
	"sort"
	"strconv"
)

// fixImports rewrites the file's import specs: new paths, the packages v2
// merged into bson imported once, specs no longer used dropped, and the
// imports the rewrites need added.
func (f *file) fixImports() {
	have := map[string]bool{} // v2 paths imported
	var lastSpec *ast.ImportSpec
	var group *ast.GenDecl
	for _, d := range f.f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok.String() != "import" {
			continue
		}
		if group == nil && g.Lparen.IsValid() {
			group = g
		}
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			lastSpec = is
			old, _ := strconv.Unquote(is.Path.Value)
			name := localName(is, old)
			np, _ := importPath(old)
			if name == "_" || name == "." {
				f.replace(is.Path, strconv.Quote(np))
				have[np] = true
				continue
			}
			unused := f.uses[name] <= 0 && !f.untyped()
			if unused || have[np] {
				f.deleteSpec(g, is)
				continue
			}
			have[np] = true
			text := strconv.Quote(np)
			if is.Name != nil && !(mergedIntoBSON[old] && is.Name.Name == "bson") && !mergedIntoBSON[old] {
				text = is.Name.Name + " " + text
			}
			f.replace(is, text)
		}
	}
	var add []string
	for p := range f.need {
		if !have[p] {
			add = append(add, p)
		}
	}
	sort.Strings(add)
	for _, p := range add {
		switch {
		case group != nil:
			f.insert(group.Rparen, "\t"+strconv.Quote(p)+"\n")
		case lastSpec != nil:
			f.insert(lastSpec.End(), "\nimport "+strconv.Quote(p))
		default:
			f.insert(f.f.Name.End(), "\n\nimport "+strconv.Quote(p))
		}
	}
}

func (f *file) untyped() bool { return f.info == nil }

// deleteSpec removes import spec is of declaration g, with its line when
// g is a group.
func (f *file) deleteSpec(g *ast.GenDecl, is *ast.ImportSpec) {
	if !g.Lparen.IsValid() {
		f.replace(g, "")
		return
	}
	start, end := f.off(is.Pos()), f.off(is.End())
	if is.Doc != nil {
		start = f.off(is.Doc.Pos())
	}
	if is.Comment != nil {
		end = f.off(is.Comment.End())
	}
	for start > 0 && (f.src[start-1] == '\t' || f.src[start-1] == ' ') {
		start--
	}
	if end < len(f.src) && f.src[end] == '\n' {
		end++
	}
	f.add(start, end, "", 2)
}

// localName returns the name file code uses for import spec is of path.
func localName(is *ast.ImportSpec, path string) string {
	if is.Name != nil {
		return is.Name.Name
	}
	return pkgNames[path]
}

// pkgNames are the package names of the imports, filled while loading.
var pkgNames = map[string]string{}
