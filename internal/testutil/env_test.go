package testutil_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/internal/testutil"
)

// envReaders are the functions of package os that read the process's
// environment (a call, or a reference handed on as a value).
var envReaders = []string{"Getenv", "LookupEnv", "Environ", "ExpandEnv"}

// envWriters change the process's environment, which no test may do:
// tests run side by side (t.Parallel) and take their settings as values.
var envWriters = []string{"Setenv", "Unsetenv", "Clearenv"}

// mayHandOnEnviron are the files that may pass the whole environment on:
// main, which reads the world, and ChildEnv, which strips it.
var mayHandOnEnviron = []string{"cmd/verdictbot/main.go", "internal/testutil/env.go"}

// TestTestsReadOnlyTheirOwnVariables reads every Go file of the module
// (production code, tests and their helpers) and checks that the process's
// environment is read only by main (cmd/verdictbot/main.go) or for a
// variable that testutil.TestVariables lists, named by a literal or a
// constant; that nothing sets a variable (os.Setenv, t.Setenv); and that
// every listed variable is still read somewhere.
func TestTestsReadOnlyTheirOwnVariables(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	type file struct {
		rel     string
		dir     string
		ast     *ast.File
		osNames []string // what package os is called in the file
	}
	var files []file
	consts := map[string]map[string]string{} // dir → constant → string value
	exported := map[string][]string{}        // exported constant → its values, module-wide
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "vendor" || name == "bin" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fl := file{rel: filepath.ToSlash(rel), dir: filepath.Dir(path), ast: f}
		for _, imp := range f.Imports {
			if imp.Path.Value != `"os"` {
				continue
			}
			name := "os"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			fl.osNames = append(fl.osNames, name)
		}
		files = append(files, fl)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						continue
					}
					if consts[fl.dir] == nil {
						consts[fl.dir] = map[string]string{}
					}
					consts[fl.dir][n.Name] = v
					if n.IsExported() {
						exported[n.Name] = append(exported[n.Name], v)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("read %d Go files under %s: not the module?", len(files), root)
	}

	read := map[string]bool{}
	for _, fl := range files {
		calls := map[*ast.SelectorExpr]*ast.CallExpr{}
		ast.Inspect(fl.ast, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					calls[sel] = c
				}
			}
			return true
		})
		ast.Inspect(fl.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			at := fl.rel + ":" + strconv.Itoa(fset.Position(sel.Pos()).Line)
			isOS := slices.Contains(fl.osNames, x.Name)
			switch {
			case slices.Contains(envWriters, sel.Sel.Name) && (isOS || sel.Sel.Name == "Setenv"):
				t.Errorf("%s: %s.%s changes the process's environment: pass the setting as a value", at, x.Name, sel.Sel.Name)
			case !isOS || !slices.Contains(envReaders, sel.Sel.Name):
			case fl.rel == "cmd/verdictbot/main.go":
				// main reads the world.
			case sel.Sel.Name == "Environ" || sel.Sel.Name == "ExpandEnv":
				if !slices.Contains(mayHandOnEnviron, fl.rel) || sel.Sel.Name == "ExpandEnv" {
					t.Errorf("%s: os.%s hands on the whole environment: use testutil.ChildEnv for a helper process, or a list of the test's own", at, sel.Sel.Name)
				}
			default:
				call := calls[sel]
				if call == nil || len(call.Args) != 1 {
					t.Errorf("%s: os.%s handed on as a value: only main reads the environment for settings", at, sel.Sel.Name)
					return true
				}
				name, ok := envName(call.Args[0], consts[fl.dir], exported)
				if !ok {
					t.Errorf("%s: os.%s of an expression: name the variable with a literal or a constant, listed in testutil.TestVariables", at, sel.Sel.Name)
					return true
				}
				read[name] = true
				if _, listed := testutil.TestVariables[name]; !listed {
					t.Errorf("%s: reads %s, which testutil.TestVariables does not list: a test takes the bot's settings as a value; a variable of the test suite's own goes in the list", at, name)
				}
			}
			return true
		})
	}
	for name := range testutil.TestVariables {
		if !read[name] {
			t.Errorf("testutil.TestVariables lists %s, which nothing reads", name)
		}
	}
}

// envName is the variable an argument of os.Getenv names: a string
// literal, a constant of the package, or an exported constant of another
// (one value module-wide).
func envName(arg ast.Expr, local map[string]string, exported map[string][]string) (string, bool) {
	switch a := arg.(type) {
	case *ast.BasicLit:
		if a.Kind == token.STRING {
			v, err := strconv.Unquote(a.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := local[a.Name]
		return v, ok
	case *ast.SelectorExpr:
		if vs := exported[a.Sel.Name]; len(vs) == 1 {
			return vs[0], true
		}
	}
	return "", false
}

// moduleRoot is the directory of go.mod above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// TestCleanEnvDropsTheBotsSettings: a helper process gets none of the
// bot's or the services' variables of the test process, and what the test
// sets.
func TestCleanEnvDropsTheBotsSettings(t *testing.T) {
	t.Parallel()
	env := testutil.CleanEnv([]string{"PATH=/usr/bin", "VERDICTBOT_CHANNEL_MODE=verbose", "SLACK_BOT_TOKEN=xoxb-x",
		"SANDBOX_URL=http://127.0.0.1:1", "REPUTATION_API_KEY=k", "VERDICTBOT_TEST_DATABASE_URL=postgres://x/y",
		"VERDICTBOT_FOO=1", "HOME=/home/dev", "MY_SLACK_NOTE=kept"}, "VERDICTBOT_HELPER=dir")
	want := []string{"PATH=/usr/bin", "HOME=/home/dev", "MY_SLACK_NOTE=kept", "VERDICTBOT_HELPER=dir"}
	if !slices.Equal(env, want) {
		t.Fatalf("got  %q\nwant %q", env, want)
	}
	if env := testutil.ChildEnv(); !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) && os.Getenv("PATH") != "" {
		t.Errorf("PATH missing from %q", env)
	}
}
