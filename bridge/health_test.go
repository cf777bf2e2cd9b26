package bridge

// Rules of the package's own code, read from its source: they hold only
// as long as a test holds them.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// packageFuncs parses the package's non-test files and calls fn with
// every function declared in them.
func packageFuncs(t *testing.T, fn func(fset *token.FileSet, fd *ast.FuncDecl)) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				fn(fset, fd)
			}
		}
	}
}

// funcName is fd's name as gocyclo prints it: "(*T).m" or "f".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		typ, star = s.X, "*"
	}
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestNoBareGo: every goroutine of the package starts through
// Bridge.spawn, which counts it for Close and refuses once the bridge is
// closed (docs/architecture.md, "Who owns each goroutine"). A go
// statement anywhere else is a goroutine Close does not wait for.
func TestNoBareGo(t *testing.T) {
	packageFuncs(t, func(fset *token.FileSet, fd *ast.FuncDecl) {
		if funcName(fd) == "(*Bridge).spawn" {
			return
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement in %s; start goroutines with Bridge.spawn", fset.Position(g.Pos()), funcName(fd))
			}
			return true
		})
	})
}

// maxComplexity is the most cyclomatic complexity a function of the
// package may have.
const maxComplexity = 20

// TestComplexity: no function of the package is over maxComplexity,
// counted as gocyclo counts (github.com/fzipp/gocyclo): one, and one more
// for each if, for, range, non-default case or select clause, && and ||.
// A function over it does several things that want names of their own.
func TestComplexity(t *testing.T) {
	packageFuncs(t, func(fset *token.FileSet, fd *ast.FuncDecl) {
		if c := complexity(fd); c > maxComplexity {
			t.Errorf("%s: %s has cyclomatic complexity %d, over %d", fset.Position(fd.Pos()), funcName(fd), c, maxComplexity)
		}
	})
}

// complexity is gocyclo's count for fd.
func complexity(fd *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fd, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
