//go:build ignore

// Command exports counts the exported identifiers of each package in the
// directories given (top-level names and the methods of exported types),
// and fails when one exports more than -max (or its -except limit). CI
// runs it over every package of the module.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

func main() {
	max := flag.Int("max", 60, "the most exported identifiers a package may have")
	var except exceptions = map[string]int{}
	flag.Var(except, "except", "dir=n: a package allowed n instead, for a reason the caller states")
	flag.Parse()
	fail := false
	for _, dir := range flag.Args() {
		n, err := count(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		mark, limit := "", *max
		if l, ok := except[dir]; ok {
			limit, mark = l, fmt.Sprintf("  (allowed %d)", l)
		}
		if n > limit {
			mark, fail = "  over the limit", true
		}
		fmt.Printf("%4d %s%s\n", n, dir, mark)
	}
	if fail {
		fmt.Fprintf(os.Stderr, "a package exports more than %d identifiers\n", *max)
		os.Exit(1)
	}
}

// exceptions maps a directory to its own limit.
type exceptions map[string]int

func (e exceptions) String() string { return fmt.Sprint(map[string]int(e)) }

func (e exceptions) Set(s string) error {
	dir, n, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want dir=n, have %q", s)
	}
	var limit int
	if _, err := fmt.Sscan(n, &limit); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	e[dir] = limit
	return nil
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
	return len(names), nil
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
