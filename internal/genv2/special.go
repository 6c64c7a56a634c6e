package main

import (
	"go/ast"
	"go/types"
)

// The driver's calls whose v2 form differs in more than names.

// call rewrites call c, whose ancestors are stack (c last).
func (f *file) call(c *ast.CallExpr, parent ast.Node, stack []ast.Node) {
	if f.info == nil {
		return
	}
	f.optionCall(c)
	if !f.done[c] {
		if name, ok := optionStruct(f.typeOf(c)); ok {
			if _, isChain := f.chainOf(c); isChain {
				f.optionExpr(c, v2Option(name, ""), false)
			}
		}
	}
	fn := f.callee(c)
	if fn == nil {
		return
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		switch {
		case fn.Name() == "MarshalBSONValue" && sig.Results().Len() == 3 && isBSONType(sig.Results().At(0).Type()):
			f.use(compat, "compat")
			f.wrap(c, "compat.Value(", ")")
		case fn.Name() == "UnmarshalBSONValue" && sig.Params().Len() == 2 && isBSONType(sig.Params().At(0).Type()):
			f.wrap(c.Args[0], "byte(", ")")
		}
	}
	if fn.Pkg() != nil && fn.Pkg().Path() == driverV1+"/x/bsonx/bsoncore" {
		sig := fn.Type().(*types.Signature)
		for i, a := range c.Args {
			if i < sig.Params().Len() && isBSONType(sig.Params().At(i).Type()) {
				f.wrap(a, "bsoncore.Type(", ")")
			}
		}
	}
	switch fn.FullName() {
	case driverV1 + "/bson/bsoncodec.NewRegistry":
		// v1's is empty; v2's NewRegistry has the default codecs.
		sel := c.Fun.(*ast.SelectorExpr)
		f.done[sel] = true
		f.drop(sel.X.(*ast.Ident))
		f.use(bsonV2, "bson")
		f.replace(c, "new(bson.Registry)")
	case "(" + driverV1 + "/x/bsonx/bsoncore.Value).Decimal128":
		f.use(bsonV2, "bson")
		f.wrap(c, "bson.NewDecimal128(", ")")
	case "(" + driverV1 + "/bson.RawValue).Array":
		f.use(bsonV2, "bson")
		f.wrap(c, "bson.Raw(", ")")
	case driverV1 + "/mongo.Connect":
		if len(c.Args) > 0 {
			end := c.Rparen
			if len(c.Args) > 1 {
				end = c.Args[1].Pos()
			}
			f.replaceRange(c.Args[0].Pos(), end, "")
		}
	case "(*" + driverV1 + "/mongo.Collection).Distinct":
		f.use(compat, "compat")
		f.wrap(c, "compat.Distinct(", ")")
	case "(" + driverV1 + "/mongo.IndexView).DropOne", "(" + driverV1 + "/mongo.IndexView).DropAll":
		f.use(compat, "compat")
		f.wrap(c, "compat.Dropped(", ")")
	case "(*" + driverV1 + "/mongo.Collection).Clone",
		driverV1 + "/bson.NewEncoder", driverV1 + "/bson.NewDecoder":
		f.use(compat, "compat")
		f.wrap(c, "compat.Ok(", ")")
	case driverV1 + "/bson/bsonrw.NewBSONDocumentReader":
		sel := c.Fun.(*ast.SelectorExpr)
		f.replace(sel.Sel, "NewDocumentReader")
		f.use("bytes", "bytes")
		f.wrap(c.Args[0], "bytes.NewReader(", ")")
	case driverV1 + "/bson/bsonrw.NewBSONValueWriter":
		sel := c.Fun.(*ast.SelectorExpr)
		f.replace(sel.Sel, "NewDocumentWriter")
		f.use(compat, "compat")
		f.wrap(c, "compat.Ok(", ")")
	}
}

// noResultCalls are v1 methods returning an error that return nothing in v2.
var noResultCalls = map[string]bool{
	"(*" + driverV1 + "/bson.Encoder).SetRegistry": true,
	"(*" + driverV1 + "/bson.Decoder).SetRegistry": true,
	"(*" + driverV1 + "/bson.Encoder).Reset":       true,
	"(*" + driverV1 + "/bson.Decoder).Reset":       true,
}

// noResult rewrites `x = call()` for a call that returns nothing in v2
// into `call(); x = nil` (v1's never fails for a non-nil argument).
func (f *file) noResult(a *ast.AssignStmt) {
	if f.info == nil || len(a.Rhs) != 1 || len(a.Lhs) != 1 {
		return
	}
	c, ok := a.Rhs[0].(*ast.CallExpr)
	if !ok {
		return
	}
	fn := f.callee(c)
	if fn == nil || !noResultCalls[fn.FullName()] {
		return
	}
	f.replaceRange(a.Pos(), c.Pos(), "")
	if id, ok := a.Lhs[0].(*ast.Ident); !ok || id.Name != "_" {
		f.insert(a.End(), "; "+f.text(a.Lhs[0])+" = nil")
	}
}

// marshalers rewrites the methods of bson's ValueMarshaler and
// ValueUnmarshaler, whose type is a byte in v2.
func (f *file) marshalers(d *ast.FuncDecl) {
	if f.info == nil || d.Recv == nil || d.Body == nil {
		return
	}
	isType := func(e ast.Expr) bool { return f.qualified(e, driverV1+"/bson/bsontype", "Type") }
	switch d.Name.Name {
	case "MarshalBSONValue":
		r := d.Type.Results
		if r == nil || len(r.List) == 0 || !isType(r.List[0].Type) {
			return
		}
		f.replace(r.List[0].Type, "byte")
		f.done[r.List[0].Type] = true
		f.drop(r.List[0].Type.(*ast.SelectorExpr).X.(*ast.Ident))
		ast.Inspect(d.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				switch len(n.Results) {
				case 3:
					f.wrap(n.Results[0], "byte(", ")")
				case 1:
					f.use(compat, "compat")
					f.wrap(n.Results[0], "compat.Byte(", ")")
				}
			}
			return true
		})
	case "UnmarshalBSONValue":
		p := d.Type.Params
		if p == nil || len(p.List) == 0 || !isType(p.List[0].Type) {
			return
		}
		f.replace(p.List[0].Type, "byte")
		f.done[p.List[0].Type] = true
		f.drop(p.List[0].Type.(*ast.SelectorExpr).X.(*ast.Ident))
		if len(p.List[0].Names) == 1 && p.List[0].Names[0].Name != "_" {
			name := p.List[0].Names[0].Name
			f.replace(p.List[0].Names[0], name+"Byte")
			f.insert(d.Body.Lbrace+1, "\n"+name+" := bson.Type("+name+"Byte)\n")
			f.use(bsonV2, "bson")
		}
	}
}

// indexModel rewrites a mongo.IndexModel literal's Options, a builder in
// v2, when it is given a struct.
func (f *file) indexModel(l *ast.CompositeLit) {
	if n, ok := types.Unalias(f.typeOf(l)).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == driverV1+"/x/bsonx/bsoncore" {
		for _, e := range l.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Type" {
					f.wrap(kv.Value, "bsoncore.Type(", ")")
				}
			}
		}
		return
	}
	if !f.isIndexModel(f.typeOf(l)) {
		return
	}
	for _, e := range l.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Options" {
			if _, ok := f.chainOf(kv.Value); ok {
				f.optionExpr(kv.Value, "IndexOptions", true)
				continue
			}
			f.done[kv.Value] = true
			f.use(compat, "compat")
			f.wrap(kv.Value, "compat.IndexOptions(", ")")
		}
	}
}

func (f *file) isIndexModel(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == driverV1+"/mongo" && n.Obj().Name() == "IndexModel"
}

// indexModelRead rewrites a read of an IndexModel's Options, a builder in
// v2, into the struct v1 code reads.
func (f *file) indexModelRead(s *ast.SelectorExpr, parent ast.Node) {
	if f.info == nil || s.Sel.Name != "Options" || !f.isIndexModel(f.typeOf(s.X)) {
		return
	}
	if a, ok := parent.(*ast.AssignStmt); ok {
		for _, l := range a.Lhs {
			if l == s {
				f.errorf(s, "assignment to IndexModel.Options")
				return
			}
		}
	}
	f.use(compat, "compat")
	f.wrap(s, "compat.StructOrNil(", ")")
}

// bsoncoreType converts a read of bsoncore's Type fields, a type of its
// own in v2, to bson.Type.
func (f *file) bsoncoreType(s *ast.SelectorExpr, parent ast.Node) {
	if f.info == nil || s.Sel.Name != "Type" {
		return
	}
	sel := f.info.Selections[s]
	if sel == nil || sel.Kind() != types.FieldVal {
		return
	}
	v := sel.Obj()
	if v.Pkg() == nil || v.Pkg().Path() != driverV1+"/x/bsonx/bsoncore" {
		return
	}
	if a, ok := parent.(*ast.AssignStmt); ok {
		for _, l := range a.Lhs {
			if l == s {
				return
			}
		}
	}
	f.use(bsonV2, "bson")
	f.wrap(s, "bson.Type(", ")")
}

// isBSONType reports whether t is v1's bsontype.Type.
func isBSONType(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == driverV1+"/bson/bsontype" && n.Obj().Name() == "Type"
}
