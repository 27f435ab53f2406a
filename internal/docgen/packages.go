package docgen

import (
	"bufio"
	"cmp"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Package is one package of the module, as the package list shows it.
type Package struct {
	// Dir is its directory from the repository's root ("." for the root).
	Dir string
	// Name is its package clause's name.
	Name string
	// Synopsis is the first sentence of its doc comment.
	Synopsis string
	// Imports are the directories of the module's packages it imports
	// (its non-test files', under any build constraint).
	Imports []string
	// Height is the length of its longest chain of imports within the
	// module: 0 for a package that imports none of the module's.
	Height int
}

// ModulePackages reads every package of the module rooted at root: each
// directory with non-test Go files, but testdata, directories whose
// name starts with "." or "_", and nested modules (a directory with its
// own go.mod). They are ordered so that each package imports only
// packages after it: by Height, highest first, then by directory.
func ModulePackages(root string) ([]Package, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	byDir := map[string]*Package{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
		}
		pkg, err := readPackage(root, p, module)
		if err != nil || pkg == nil {
			return err
		}
		byDir[pkg.Dir] = pkg
		return nil
	})
	if err != nil {
		return nil, err
	}
	var height func(p *Package, seen map[string]bool) int
	height = func(p *Package, seen map[string]bool) int {
		if p.Height >= 0 {
			return p.Height
		}
		if seen[p.Dir] {
			return 0 // an import cycle: go build refuses it anyway
		}
		seen[p.Dir] = true
		h := 0
		for _, imp := range p.Imports {
			if q, ok := byDir[imp]; ok {
				h = max(h, height(q, seen)+1)
			}
		}
		p.Height = h
		return h
	}
	var out []Package
	for _, p := range byDir {
		height(p, map[string]bool{})
	}
	for _, p := range byDir {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Package) int {
		return cmp.Or(cmp.Compare(b.Height, a.Height), cmp.Compare(a.Dir, b.Dir))
	})
	return out, nil
}

// readPackage reads the package in dir (nil when it has no non-test Go
// file).
func readPackage(root, dir, module string) (*Package, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	pkg := &Package{Dir: filepath.ToSlash(rel), Height: -1}
	fset := token.NewFileSet()
	found := false
	var docText, docFile string
	imports := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		found = true
		pkg.Name = f.Name.Name
		// The package comment: doc.go's, else the first file's with one.
		if f.Doc != nil && (docFile == "" || n == "doc.go") && docFile != "doc.go" {
			docText, docFile = f.Doc.Text(), n
		}
		for _, s := range f.Imports {
			ip, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return nil, err
			}
			switch {
			case ip == module:
				imports["."] = true
			case strings.HasPrefix(ip, module+"/"):
				imports[strings.TrimPrefix(ip, module+"/")] = true
			}
		}
	}
	if !found {
		return nil, nil
	}
	if docText == "" {
		return nil, fmt.Errorf("package %s has no doc comment: the package list of docs/development.md is made from it", pkg.Dir)
	}
	pkg.Synopsis = new(doc.Package).Synopsis(docText)
	pkg.Imports = slices.Sorted(func(yield func(string) bool) {
		for ip := range imports {
			if !yield(ip) {
				return
			}
		}
	})
	return pkg, nil
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}

// Packages is the package list of docs/development.md: each package of
// the module rooted at root with the first sentence of its doc comment,
// each above the packages it imports.
func Packages(root string) (string, error) {
	pkgs, err := ModulePackages(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| package | what it is |\n|---|---|\n")
	for _, p := range pkgs {
		name := "`" + p.Dir + "`"
		if p.Dir == "." {
			name = "`.` (the module's root)"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", name, proseCell(job(p)))
	}
	return b.String(), nil
}

// job is a package's synopsis without its "Package name " (or "Command
// name ") opening: "Package bot owns …" is "owns …".
func job(p Package) string {
	for _, opening := range []string{"Package " + p.Name + " ", "Command " + path.Base(p.Dir) + " "} {
		if rest, ok := strings.CutPrefix(p.Synopsis, opening); ok {
			return rest
		}
	}
	return p.Synopsis
}

// proseCell makes plain text (a doc comment's) safe in a Markdown table
// cell: outside code spans, characters Markdown would read as markup are
// escaped; everywhere, a pipe.
func proseCell(s string) string {
	var b strings.Builder
	inCode := false
	for _, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case r == '|':
			b.WriteString(`\|`)
		case inCode:
			b.WriteRune(r)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '*' || r == '[' || r == ']':
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
