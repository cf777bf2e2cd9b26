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
