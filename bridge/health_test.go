package bridge

// Rules of the package's own code, read from its source: they hold only
// as long as a test holds them.

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
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

// concerns are the package's parts, by file: a file reads and writes the
// fields of its own part's types, and reaches the others' through their
// methods (docs/architecture.md, "Inside bridge").
var concerns = map[string][]string{
	// The core: children, routing, their lifecycle, the seam (party.go),
	// and the 2025 sessions and streams, which are its own parties.
	"core": {"upstream.go", "route.go", "supervise.go", "shared.go", "party.go", "child.go", "budget.go", "exits.go",
		"session.go", "stream.go", "reader.go", "startbreaker.go", "start.go"},
	// The 2026-07-28 era, on the core's seam.
	"era": {"modern.go", "backend.go", "box.go", "mrtr.go", "listen.go", "modernpool.go", "sealed.go", "translate.go", "era.go", "params.go"},
	// Messages: reading, checking and rewriting JSON-RPC.
	"messages": {"message.go", "jsonrpc.go", "keys.go", "inspect.go"},
	// The Bridge as a whole: its settings, life, and what it reports.
	"bridge": {"bridge.go", "lifecycle.go", "snapshot.go", "busy.go", "ready.go", "restarted.go", "errors.go", "redact.go"},
}

// vocabulary are the types every part reads the fields of: settings,
// counters, errors, what a transport hands in and gets back, what a
// snapshot reports, and what the core's seam passes (a call, a party's
// state, a message of a child's, a message's places).
var vocabulary = map[string]bool{
	"Config": true, "Stats": true, "Error": true, "Owner": true, "InitRequest": true,
	"ModernRequest": true, "ModernHeaders": true, "Envelope": true, "Reply": true, "Event": true, "ServeOptions": true,
	"Snapshot": true, "SessionSnapshot": true, "ChildSnapshot": true, "ModernSnapshot": true, "ModernCounts": true, "ServerSnapshot": true,
	"call": true, "partyState": true, "childMsg": true, "fields": true, "span": true,
}

// bridgeContext are the Bridge's fields every part reads: its settings,
// counters, logger, lock, way to start a child and shutdown channel.
var bridgeContext = map[string]bool{"cfg": true, "stats": true, "log": true, "mu": true, "start": true, "shutdown": true}

// TestConcerns: no file reaches into the unexported fields of another
// part's types (the 2026-07-28 layer into the core's, the core into the
// era's), but for the vocabulary they share: each part is used through
// its methods, so that it can change without the others.
func TestConcerns(t *testing.T) {
	part := map[string]string{}
	for c, files := range concerns {
		for _, f := range files {
			part[f] = c
		}
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if part[name] == "" {
			t.Errorf("%s is in no part of the package: add it to concerns", name)
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("bridge", fset, files, info); err != nil {
		t.Fatal(err)
	}
	for sel, s := range info.Selections {
		if s.Kind() != types.FieldVal {
			continue
		}
		here := filepath.Base(fset.Position(sel.Pos()).Filename)
		field := s.Obj()
		there := filepath.Base(fset.Position(field.Pos()).Filename)
		owner := receiverName(s.Recv())
		if part[here] == part[there] || field.Exported() || vocabulary[owner] || (owner == "Bridge" && bridgeContext[field.Name()]) || promotedOwn(s) {
			continue
		}
		t.Errorf("%s: %s (%s) reaches into %s.%s, a field of %s (%s)", fset.Position(sel.Pos()), here, part[here], owner, field.Name(), there, part[there])
	}
}

// receiverName is the name of the struct type a field is selected from.
func receiverName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// promotedOwn reports a field promoted from an embedded vocabulary type
// (a box's partyState): the selecting type's own.
func promotedOwn(s *types.Selection) bool {
	return len(s.Index()) > 1
}
