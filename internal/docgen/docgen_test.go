package docgen

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of README.md and docs/*.md (make docs)")

// root is the repository's root, seen from this package's directory.
const root = "../.."

// maxREADMELines is how long README.md may be: what it is, the two
// commands, the first 10 minutes, the install, the settings and links fit
// on a screen or two; the rest is in docs/ (issue 27).
const maxREADMELines = 300

// TestGeneratedDocs holds every generated part of the documentation to
// the code, and rewrites the stale ones with -update (make docs).
func TestGeneratedDocs(t *testing.T) {
	byFile := map[string][]Region{}
	for _, r := range Regions() {
		byFile[r.File] = append(byFile[r.File], r)
	}
	for file, regions := range byFile {
		path := filepath.Join(root, file)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		for _, r := range regions {
			content, err := r.Render(root)
			if err != nil {
				t.Fatalf("%s, region %s: %v", file, r.Name, err)
			}
			next, err := Replace(doc, r.Name, content)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if next != doc && !*update {
				t.Errorf("%s: the generated part %q is not what the code says: run make docs\n%s", file, r.Name, firstDifference(doc, next))
			}
			doc = next
		}
		if *update && doc != string(raw) {
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", file)
		}
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  file: " + gl + "\n  code: " + wl
		}
	}
	return ""
}

// TestEveryMarkerIsKnown: every generated part the documentation marks
// is one that make docs writes, in that file; a marker with a typo would
// otherwise leave a hand-written table that nothing checks.
func TestEveryMarkerIsKnown(t *testing.T) {
	t.Parallel()
	known := map[string][]string{}
	for _, r := range Regions() {
		known[r.File] = append(known[r.File], r.Name)
	}
	for file, names := range ExternalRegions {
		known[file] = append(known[file], names...)
	}
	for _, file := range docFiles(t) {
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		markers := Markers(string(raw))
		for _, m := range markers {
			if !slices.Contains(known[file], m) {
				t.Errorf("%s marks a generated part %q that make docs does not write (there: %q)", file, m, known[file])
			}
		}
		for _, want := range known[file] {
			if !slices.Contains(markers, want) {
				t.Errorf("%s lacks the generated part %q (its markers %s … %s)", file, want, BeginMarker(want), EndMarker(want))
			}
		}
	}
}

// docFiles lists README.md and the Markdown files under docs/, from the
// repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestREADMEFitsOnAScreen: README.md stays short; what does not fit goes
// to docs/.
func TestREADMEFitsOnAScreen(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", n, maxREADMELines)
	}
}

func TestReplace(t *testing.T) {
	t.Parallel()
	doc := "a\n" + BeginMarker("x") + "\nold\n" + EndMarker("x") + "\nb\n"
	got, err := Replace(doc, "x", "new 1\nnew 2")
	if want := "a\n" + BeginMarker("x") + "\nnew 1\nnew 2\n" + EndMarker("x") + "\nb\n"; err != nil || got != want {
		t.Errorf("Replace = %q, %v; want %q", got, err, want)
	}
	if got, err := Replace(doc, "x", ""); err != nil || got != "a\n"+BeginMarker("x")+"\n"+EndMarker("x")+"\nb\n" {
		t.Errorf("Replace with nothing = %q, %v", got, err)
	}
	for _, bad := range []string{
		"a\nb\n",
		doc + doc,
		EndMarker("x") + "\n" + BeginMarker("x") + "\n",
	} {
		if _, err := Replace(bad, "x", "new"); err == nil {
			t.Errorf("Replace(%q) did not fail", bad)
		}
	}
	if _, err := Replace("a\n", "x", ""); !errors.Is(err, ErrNoMarkers) {
		t.Errorf("no markers: %v", err)
	}
	if got := Markers(doc + BeginMarker("y") + "\n"); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("Markers = %q", got)
	}
}

// TestPackagesOrder: each package of the list comes before every package
// it imports, and the list has every package of the module.
func TestPackagesOrder(t *testing.T) {
	t.Parallel()
	pkgs, err := ModulePackages(root)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, p := range pkgs {
		at[p.Dir] = i
	}
	for i, p := range pkgs {
		for _, imp := range p.Imports {
			if j, ok := at[imp]; !ok || j <= i {
				t.Errorf("%s imports %s, which is not listed after it", p.Dir, imp)
			}
		}
	}
	for _, want := range []string{".", "cmd/verdictbot", "config", "internal/docgen", "store/pg/pgtest", "deploy"} {
		if _, ok := at[want]; !ok {
			t.Errorf("the list lacks %s", want)
		}
	}
	for _, not := range []string{"tools/releasecheck", "internal/manifest/testdata"} {
		if _, ok := at[not]; ok {
			t.Errorf("the list has %s", not)
		}
	}
	if j := job(pkgs[at["cmd/verdictbot"]]); strings.HasPrefix(j, "Command") {
		t.Errorf("cmd/verdictbot's job keeps its opening: %q", j)
	}
}

func TestProseCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"under /api/<key>/":              "under /api/&lt;key&gt;/",
		"`verdictbot events list|retry`": "`verdictbot events list\\|retry`",
		"a *Downloader":                  "a \\*Downloader",
		"`<kept>` and <gone>":            "`<kept>` and &lt;gone&gt;",
	} {
		if got := proseCell(in); got != want {
			t.Errorf("proseCell(%q) = %q, want %q", in, got, want)
		}
	}
}
