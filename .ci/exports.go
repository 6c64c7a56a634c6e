//go:build ignore

// Command exports counts the exported identifiers of each package in the
// directories given (top-level names and the methods of exported types),
// and fails when one exports more than -max. CI runs it as
// `go run .ci/exports.go -max 60 $(go list -f '{{.Dir}}' ./...)`.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	max := flag.Int("max", 60, "the most exported identifiers a package may have")
	flag.Parse()
	fail := false
	for _, dir := range flag.Args() {
		n, err := count(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		mark := ""
		if n > *max {
			mark, fail = "  over the limit", true
		}
		fmt.Printf("%4d %s%s\n", n, dir, mark)
	}
	if fail {
		fmt.Fprintf(os.Stderr, "a package exports more than %d identifiers\n", *max)
		os.Exit(1)
	}
}

func count(dir string) (int, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return 0, err
	}
	names := map[string]bool{}
	for _, p := range pkgs {
		if p.Name == "main" {
			continue
		}
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						names[d.Name.Name] = true
					} else if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
						names[recv+"."+d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								names[s.Name.Name] = true
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names[n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	_ = filepath.Base
	return len(list), nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
