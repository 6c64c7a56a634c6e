package main

import (
	"go/ast"
	"go/types"
	"strings"
)

// Driver v2 takes options as Listers (builders) where v1 took structs. The
// v2 line keeps v1's bodies, which read option structs: a function whose
// variadic parameter is ...*options.X takes ...options.Lister[options.X]
// and reads the Listers once into structs (compat.Structs); a struct
// passed on to the driver goes as a Lister again (compat.Of, compat.All);
// a builder chain the body keeps becomes a struct (compat.Struct). A
// Lister's error is returned wrapped in the package's ErrInvalidArgument,
// when it has one, after the function's name.

// optionParams rewrites the variadic option parameter of a function.
func (f *file) optionParams(fn string, ft *ast.FuncType, sig *types.Signature, body *ast.BlockStmt) {
	if f.info == nil || ft.Params == nil || len(ft.Params.List) == 0 {
		return
	}
	last := ft.Params.List[len(ft.Params.List)-1]
	ell, ok := last.Type.(*ast.Ellipsis)
	if !ok {
		return
	}
	name, ok := optionStruct(f.typeOf(ell.Elt))
	if !ok {
		return
	}
	star := ell.Elt.(*ast.StarExpr)
	sel := star.X.(*ast.SelectorExpr)
	f.done[sel] = true
	f.replace(star, "options.Lister[options."+v2Option(name, fn)+"]")
	if body == nil || len(last.Names) != 1 || last.Names[0].Name == "_" {
		return
	}
	obj := f.info.Defs[last.Names[0]]
	uses, through := 0, 0
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if ok && c.Ellipsis.IsValid() {
			if id, ok := c.Args[len(c.Args)-1].(*ast.Ident); ok && f.info.Uses[id] == obj {
				if callee, ok := variadicOption(f.signature(c)); ok && v2Option(callee, f.calleeName(c)) == v2Option(name, fn) {
					through++
				}
			}
		}
		if id, ok := n.(*ast.Ident); ok && f.info.Uses[id] == obj {
			uses++
		}
		return true
	})
	switch {
	case uses == 0:
		return
	case uses == through:
		f.passThrough[obj] = true
		return
	}
	p := last.Names[0].Name
	structs, perr := p+"S", p+"Err"
	f.renamed[obj] = structs
	f.use(compat, "compat")
	f.use(driverV2+"/mongo/options", "options")
	fail := perr
	if inv := obj.Pkg().Scope().Lookup("ErrInvalidArgument"); inv != nil && fn != "" {
		// The package's own sentinel, which callers can match, and the
		// function's name, as its other argument errors have them.
		f.use("fmt", "fmt")
		fail = `fmt.Errorf("%w: ` + fn + `: %w", ErrInvalidArgument, ` + perr + ")"
	}
	pro := "\n" + structs + ", " + perr + " := compat.Structs[options." + v2Option(name, "") + "](" + p + ")\nif " + perr + " != nil {\n" + f.failReturn(ft, sig, fail) + "\n}\n"
	f.insert(body.Lbrace+1, pro)
}

// failReturn returns the statement that returns err from a function of
// type ft before its body runs.
func (f *file) failReturn(ft *ast.FuncType, sig *types.Signature, err string) string {
	if sig == nil {
		f.errorf(ft, "no signature for a function that reads option Listers")
		return "panic(" + err + ")"
	}
	res := sig.Results()
	if res.Len() == 0 {
		f.errorf(ft, "a function without results reads option Listers; give it an error result or a hand-written v2 form")
		return "panic(" + err + ")"
	}
	lastT := res.At(res.Len() - 1).Type()
	if types.Identical(lastT, types.Universe.Lookup("error").Type()) {
		var zs []string
		for i := 0; i < res.Len()-1; i++ {
			zs = append(zs, f.zero(res.At(i).Type()))
		}
		return "return " + strings.Join(append(zs, err), ", ")
	}
	if n, ok := types.Unalias(lastT).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "iter" && n.Obj().Name() == "Seq2" && res.Len() == 1 {
		args := n.TypeArgs()
		k := types.TypeString(args.At(0), f.qualifier)
		return "return func(yield func(" + k + ", error) bool) { yield(" + f.zero(args.At(0)) + ", " + err + ") }"
	}
	f.errorf(ft, "a function without an error result reads option Listers")
	return "panic(" + err + ")"
}

// signature returns the v1 signature of the function c calls.
func (f *file) signature(c *ast.CallExpr) *types.Signature {
	if id, ok := ast.Unparen(c.Fun).(*ast.Ident); ok {
		if _, ok := f.info.Uses[id].(*types.Builtin); ok {
			return nil
		}
	}
	t := f.typeOf(c.Fun)
	if t == nil {
		return nil
	}
	s, _ := t.Underlying().(*types.Signature)
	return s
}

// calleeName returns the name of the function c calls.
func (f *file) calleeName(c *ast.CallExpr) string {
	switch fn := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	case *ast.IndexExpr:
		return f.calleeName(&ast.CallExpr{Fun: fn.X})
	case *ast.IndexListExpr:
		return f.calleeName(&ast.CallExpr{Fun: fn.X})
	}
	return ""
}

// chain describes an expression that builds options: a constructor
// (options.Find()) or a setter call on options, and what it starts from.
type chain struct {
	root   ast.Expr      // the constructor call, or the struct the setters start from
	ctor   *ast.CallExpr // the constructor call, when root is one
	name   string        // the v1 option struct
	setter *ast.CallExpr // the outermost call
}

// chainOf returns the chain e is, if it is one.
func (f *file) chainOf(e ast.Expr) (chain, bool) {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return chain{}, false
	}
	name, ok := optionStruct(f.typeOf(c))
	if !ok {
		return chain{}, false
	}
	fn := f.callee(c)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != optsV1 {
		return chain{}, false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil {
		return chain{root: c, ctor: c, name: name, setter: c}, true
	}
	sel := ast.Unparen(c.Fun).(*ast.SelectorExpr)
	if inner, ok := f.chainOf(sel.X); ok {
		inner.setter = c
		return inner, true
	}
	return chain{root: sel.X, name: name, setter: c}, true
}

// optionExpr rewrites e, an expression of a v1 options struct pointer, to
// be a Lister of v2 option target in the v2 file (lister), or a struct
// pointer (!lister).
func (f *file) optionExpr(e ast.Expr, target string, lister bool) {
	if f.done[e] {
		return
	}
	f.done[e] = true
	f.use(driverV2+"/mongo/options", "options")
	ch, ok := f.chainOf(e)
	if !ok {
		if lister {
			f.use(compat, "compat")
			f.wrap(e, "compat.Of[options."+target+"](", ")")
		}
		return
	}
	f.markChain(ch)
	if ch.ctor == nil {
		// Setters on a struct: v2's structs have none.
		structName := v2Option(ch.name, "")
		f.use(compat, "compat")
		if lister {
			f.wrap(e, "compat.Of[options."+target+"](", ")")
		}
		f.wrap(e, "compat.Set("+f.text(ch.root)+", ", ")")
		f.use(driverV2+"/mongo/options", "options")
		f.replace(ch.root, "options."+constructor(structName)+"()")
		return
	}
	// A constructor chain: a builder in v2.
	if ctorName := constructor(target); ctorName != constructor(ch.name) {
		sel := ast.Unparen(ch.ctor.Fun).(*ast.SelectorExpr)
		f.replace(sel.Sel, ctorName)
	}
	if !lister {
		f.use(compat, "compat")
		f.wrap(e, "compat.Struct[options."+target+"](", ")")
	}
}

// markChain marks the calls of a chain as rewritten.
func (f *file) markChain(ch chain) {
	for e := ast.Expr(ch.setter); e != nil; {
		c, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return
		}
		f.done[c] = true
		sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
		if !ok || c == ch.ctor {
			return
		}
		e = sel.X
	}
}

// optionCall rewrites the option arguments of a call whose callee takes
// ...*options.X.
func (f *file) optionCall(c *ast.CallExpr) {
	name, ok := variadicOption(f.signature(c))
	if !ok {
		return
	}
	target := v2Option(name, f.calleeName(c))
	sig := f.signature(c)
	first := sig.Params().Len() - 1
	if c.Ellipsis.IsValid() {
		last := c.Args[len(c.Args)-1]
		if id, ok := last.(*ast.Ident); ok && f.passThrough[f.info.Uses[id]] {
			return
		}
		f.use(compat, "compat")
		f.wrap(last, "compat.All[options."+target+"](", ")")
		return
	}
	for _, a := range c.Args[first:] {
		if id, ok := a.(*ast.Ident); ok && id.Name == "nil" {
			continue
		}
		f.optionExpr(a, target, true)
	}
}
