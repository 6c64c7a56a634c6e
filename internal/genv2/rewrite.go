package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"strconv"
	"strings"
)

// file is one v1 source file being rewritten into its v2 form.
type file struct {
	edits
	rel  string
	f    *ast.File
	info *types.Info // nil for a file the build did not load (other build tags)
	// uses counts, per import spec's local name, the uses left after the
	// rewrites; removed lists those rewritten away.
	uses map[string]int
	// imports maps each local import name to its v1 path.
	imports map[string]string
	// need are the imports the rewrites add: path to name.
	need map[string]string
	// renamed maps the variadic option parameters read through a prologue
	// to the name of the structs the prologue makes.
	renamed map[types.Object]string
	// passThrough are the variadic option parameters only passed on, as
	// Listers, to a callee of the same option type.
	passThrough map[types.Object]bool
	// done are the expressions a rule has already rewritten whole.
	done map[ast.Node]bool
	errs []string
}

func (f *file) errorf(n ast.Node, format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf("%s: %s", f.fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
}

// pkgOf returns the v1 import path of the package ident id names, if any.
func (f *file) pkgOf(id *ast.Ident) (string, bool) {
	if f.info == nil {
		p, ok := f.imports[id.Name]
		return p, ok && id.Obj == nil
	}
	if pn, ok := f.info.Uses[id].(*types.PkgName); ok {
		return pn.Imported().Path(), true
	}
	return "", false
}

// qualified reports whether e is pkg.name.
func (f *file) qualified(e ast.Expr, pkg, name string) bool {
	s, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	if !ok {
		return false
	}
	p, ok := f.pkgOf(id)
	return ok && p == pkg && (name == "" || s.Sel.Name == name)
}

// drop records that the qualified identifier id no longer uses its import.
func (f *file) drop(id *ast.Ident) { f.uses[id.Name]-- }

// use records that the rewritten file refers to package path as name.
func (f *file) use(path, name string) { f.need[path] = name }

// callee returns the function or method call c calls, or nil.
func (f *file) callee(c *ast.CallExpr) *types.Func {
	if f.info == nil {
		return nil
	}
	var id *ast.Ident
	switch fn := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	case *ast.IndexExpr:
		if s, ok := fn.X.(*ast.SelectorExpr); ok {
			id = s.Sel
		} else if i, ok := fn.X.(*ast.Ident); ok {
			id = i
		}
	case *ast.IndexListExpr:
		if s, ok := fn.X.(*ast.SelectorExpr); ok {
			id = s.Sel
		} else if i, ok := fn.X.(*ast.Ident); ok {
			id = i
		}
	}
	if id == nil {
		return nil
	}
	fn, _ := f.info.Uses[id].(*types.Func)
	return fn
}

// optionStruct returns the name of v1 options struct type t points to
// when v2 takes it as a Lister.
func optionStruct(t types.Type) (string, bool) {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return "", false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != optsV1 {
		return "", false
	}
	name := n.Obj().Name()
	return name, !notListers[name]
}

// variadicOption returns the options struct of sig's variadic parameter,
// when it is ...*options.X for a Lister X.
func variadicOption(sig *types.Signature) (string, bool) {
	if sig == nil || !sig.Variadic() {
		return "", false
	}
	last := sig.Params().At(sig.Params().Len() - 1)
	sl, ok := last.Type().Underlying().(*types.Slice)
	if !ok {
		return "", false
	}
	return optionStruct(sl.Elem())
}

func (f *file) typeOf(e ast.Expr) types.Type {
	if f.info == nil {
		return nil
	}
	return f.info.TypeOf(e)
}

// qualifier names packages in rendered types as the v2 file does.
func (f *file) qualifier(p *types.Package) string {
	if p == f.pkgTypes() {
		return ""
	}
	if mergedIntoBSON[p.Path()] {
		f.use(bsonV2, "bson")
		return "bson"
	}
	for name, path := range f.imports {
		if path == p.Path() {
			f.uses[name]++
			return name
		}
	}
	np, _ := importPath(p.Path())
	f.use(np, p.Name())
	return p.Name()
}

var currentPkg *types.Package

func (f *file) pkgTypes() *types.Package { return currentPkg }

// zero returns an expression of t's zero value in the v2 file.
func (f *file) zero(t types.Type) string {
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return "*new(" + types.TypeString(t, f.qualifier) + ")"
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Signature, *types.Interface:
		return "nil"
	case *types.Basic:
		switch {
		case u.Info()&types.IsNumeric != 0:
			return "0"
		case u.Info()&types.IsString != 0:
			return `""`
		case u.Info()&types.IsBoolean != 0:
			return "false"
		}
	}
	return "*new(" + types.TypeString(t, f.qualifier) + ")"
}

// rewrite makes every change of the file but its imports.
func (f *file) rewrite() {
	var stack []ast.Node
	ast.Inspect(f.f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if _, ok := n.(*ast.ImportSpec); ok {
			return false
		}
		if d, ok := n.(*ast.FuncDecl); ok && omitted(d) {
			f.omit(d)
			return false
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncDecl:
			f.marshalers(n)
			if n.Body != nil {
				f.optionParams(n.Name.Name, n.Type, n.Body)
			}
		case *ast.FuncLit:
			f.optionParams(enclosing(stack), n.Type, n.Body)
		case *ast.FuncType:
			switch p := parent.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
			case *ast.Field:
				name := ""
				if len(p.Names) == 1 {
					name = p.Names[0].Name
				}
				f.optionParams(name, n, nil)
			default:
				f.optionParams("", n, nil)
			}
		case *ast.SelectorExpr:
			f.selector(n, parent)
		case *ast.Ident:
			if name, ok := f.renamed[f.objOf(n)]; ok && f.info.Uses[n] != nil {
				f.replace(n, name)
			}
		case *ast.CallExpr:
			f.call(n, parent, stack)
		case *ast.AssignStmt:
			f.noResult(n)
		case *ast.CompositeLit:
			f.indexModel(n)
		case *ast.BasicLit:
			f.literal(n)
		}
		return true
	})
}

func (f *file) objOf(id *ast.Ident) types.Object {
	if f.info == nil {
		return nil
	}
	return f.info.Uses[id]
}

// enclosing returns the name of the function declaration in stack.
func enclosing(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if d, ok := stack[i].(*ast.FuncDecl); ok {
			return d.Name.Name
		}
	}
	return ""
}

// selector rewrites a qualified identifier whose package moved.
func (f *file) selector(s *ast.SelectorExpr, parent ast.Node) {
	if f.done[s] {
		return
	}
	id, ok := s.X.(*ast.Ident)
	path := ""
	if ok {
		path, ok = f.pkgOf(id)
	}
	if !ok {
		f.indexModelRead(s, parent)
		f.bsoncoreType(s, parent)
		return
	}
	switch {
	case mergedIntoBSON[path]:
		if id.Name != "bson" {
			f.replace(id, "bson")
			f.drop(id)
			f.use(bsonV2, "bson")
		}
		if m := movedName(path, s.Sel.Name); m != s.Sel.Name {
			f.replace(s.Sel, m)
		}
	case path == driverV1+"/mongo" && s.Sel.Name == "SessionContext":
		f.replace(s, "context.Context")
		f.drop(id)
		f.use("context", "context")
	case path == driverV1+"/mongo" && s.Sel.Name == "Session":
		if _, ok := parent.(*ast.StarExpr); !ok {
			f.insert(s.Pos(), "*")
		}
	case path == optsV1 && (s.Sel.Name == "UpdateOptions" || s.Sel.Name == "DeleteOptions"):
		if !f.done[s] {
			f.replace(s.Sel, v2Option(s.Sel.Name, ""))
		}
	}
}

// literal rewrites the module's import paths in string literals (the
// embedded server's package, say).
func (f *file) literal(l *ast.BasicLit) {
	if l.Kind != token.STRING {
		return
	}
	s, err := strconv.Unquote(l.Value)
	if err == nil && rootFile.MatchString(s) {
		// A file of the repository the v2 line does not copy (the
		// guides): the v2 line's tests read the v1 line's, a level up.
		f.replace(l, strconv.Quote("../"+s))
		return
	}
	if err == nil && movedType.MatchString(s) {
		// The name of a type v2 moved into bson, in an expected message.
		f.replace(l, strconv.Quote(movedType.ReplaceAllString(s, "bson.$2")))
		return
	}
	if err != nil || !strings.Contains(s, module) || strings.Contains(s, moduleV2) {
		return
	}
	ns := strings.ReplaceAll(s, module, moduleV2)
	if strings.HasPrefix(l.Value, "`") {
		f.replace(l, "`"+ns+"`")
	} else {
		f.replace(l, strconv.Quote(ns))
	}
}

// omitDirective, in a function's doc comment, leaves the function out of
// the v2 line, with the reason after it: for a test of what driver v2
// cannot express.
const omitDirective = "//genv2:omit "

func omitted(d *ast.FuncDecl) bool {
	if d.Doc == nil {
		return false
	}
	for _, c := range d.Doc.List {
		if strings.HasPrefix(c.Text, omitDirective) {
			return true
		}
	}
	return false
}

// omit removes d and the import uses in it.
func (f *file) omit(d *ast.FuncDecl) {
	ast.Inspect(d, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && f.info != nil {
			if _, ok := f.info.Uses[id].(*types.PkgName); ok {
				f.drop(id)
			}
		}
		return true
	})
	f.replaceRange(d.Doc.Pos(), d.End(), "")
}

// rootFile matches a relative path to a file of the repository's root the
// v2 line does not copy.
var rootFile = regexp.MustCompile(`^(\.\./)+(docs|README\.md|CHANGELOG\.md|SECURITY\.md|LICENSE)(/|$)`)

// movedType matches a qualified name of a package v2 merged into bson.
var movedType = regexp.MustCompile(`\b(primitive|bsoncodec|bsonrw)\.([A-Z]\w*)`)
