package docgen

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documentation and the deployment files name paths of the
// repository, Markdown files' headings and each other's sections; these
// tests fail when one they name does not exist (issue 27: a Kubernetes
// README pointed at a folder and a README section that did not exist).

// createdPaths are paths the documentation names that the repository
// does not hold on purpose: the reader makes them.
var createdPaths = map[string]bool{
	"deploy/.env": true, // copied from deploy/.env.example (git-ignored)
}

// notPaths are words of the documentation that read like paths of the
// repository but are not.
var notPaths = map[string]bool{
	"links/s": true, // a rate: links per second
}

// selfFile is this file: its examples name paths and sections on purpose.
const selfFile = "internal/docgen/refs_test.go"

// refFile is a file whose references are checked, and how.
type refFile struct {
	path string // from the repository's root, slash-separated
	// paths: every repository path it names is checked; otherwise only
	// the Markdown files it names (a Go file's "docs/operations.md").
	paths bool
}

// refFiles lists the files checked: README.md, docs/, deploy/ and the
// other files an operator reads (Makefile, Dockerfile, the manifest, the
// release and CI configuration) in full; every Go and SQL file of the
// repository for the documents and sections it names.
func refFiles(t *testing.T) []refFile {
	t.Helper()
	full := []string{"README.md", "Makefile", "Dockerfile", "manifest.yaml", ".goreleaser.yaml", ".ci/run"}
	var files []refFile
	for _, f := range full {
		files = append(files, refFile{path: f, paths: true})
	}
	ignored := gitIgnoredRoots(t)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || ignored[rel] || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasPrefix(rel, "docs/") && strings.HasSuffix(rel, ".md"), strings.HasPrefix(rel, "deploy/") && !strings.HasSuffix(rel, ".go"):
			files = append(files, refFile{path: rel, paths: true})
		case rel == selfFile:
		case strings.HasSuffix(rel, ".go"), strings.HasSuffix(rel, ".sql"):
			files = append(files, refFile{path: rel})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// gitIgnoredRoots are the top-level names .gitignore ignores ("/bin/"):
// build output, never the repository's.
func gitIgnoredRoots(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "/"); ok && !strings.ContainsAny(name, "*?[") {
			out[strings.TrimSuffix(name, "/")] = true
		}
	}
	return out
}

// repoRoots are the names at the top of the repository: a path the
// documentation names is the repository's when it starts with one.
func repoRoots(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ignored := gitIgnoredRoots(t)
	out := map[string]bool{}
	for _, e := range entries {
		if e.Name() != ".git" && !ignored[e.Name()] {
			out[e.Name()] = true
		}
	}
	return out
}

var (
	// pathRun is a maximal run of the characters of a path.
	pathRun = regexp.MustCompile(`[A-Za-z0-9_./-]+`)
	// repoURL is a link to a file of this repository on GitHub.
	repoURL = regexp.MustCompile(`https://github\.com/verdictbot/verdictbot/(?:blob|tree)/main/([A-Za-z0-9_./-]+)`)
	// mdLink is a Markdown inline link: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// sectionRef names a section of a Markdown file in prose or a comment:
	// docs/operations.md, "Sizing"; the README's "Settings" table;
	// README.md beside this file, "Apply"; (in a Go string) \"…\".
	sectionRef = regexp.MustCompile(`((?:\.\./)*(?:[A-Za-z0-9_-]+/)*(?:README(?:\.md)?|[A-Za-z0-9_-]+\.md))('s| beside this file,|,| section) \\?"([^"\\]+)\\?"`)
)

// TestDocumentedPathsExist: every repository path that README.md, docs/,
// deploy/ and the other operator files name exists (and every Markdown
// file a Go or SQL comment names).
func TestDocumentedPathsExist(t *testing.T) {
	t.Parallel()
	roots := repoRoots(t)
	ignored := gitIgnoredRoots(t)
	for _, f := range refFiles(t) {
		raw, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range repoURL.FindAllStringSubmatch(text, -1) {
			checkPath(t, f.path, strings.TrimRight(m[1], "."), m[1])
		}
		for _, loc := range pathRun.FindAllStringIndex(text, -1) {
			run := text[loc[0]:loc[1]]
			// Part of a URL, a template, a glob or a placeholder: not a path.
			if loc[0] > 0 && strings.ContainsRune(":@$<{*~%+=", rune(text[loc[0]-1])) {
				continue
			}
			if loc[1] < len(text) && strings.ContainsAny(text[loc[1]:loc[1]+1], "@*<{$%") || strings.HasPrefix(text[loc[1]:], "…") {
				continue
			}
			run = strings.TrimRight(run, ".")
			if strings.HasPrefix(run, "/") || !strings.Contains(run, "/") {
				continue
			}
			if !f.paths && !strings.HasSuffix(run, ".md") {
				continue
			}
			if notPaths[run] {
				continue
			}
			first, _, _ := strings.Cut(strings.TrimPrefix(run, "./"), "/")
			switch {
			case ignored[first]:
				// Build output or a run's data (./data): made, not kept.
			case strings.HasPrefix(run, "../"):
				checkPath(t, f.path, path.Join(path.Dir(f.path), run), run)
			case strings.HasPrefix(run, "./"):
				// A command's argument (go test ./scan/) is from the
				// repository's root; a file's link, from its directory.
				if !exists(path.Join(path.Dir(f.path), run)) {
					checkPath(t, f.path, run, run)
				}
			case roots[first]:
				checkPath(t, f.path, run, run)
			}
			// Anything else is not a path of the repository (a package
			// path, "fp/fn").
		}
	}
}

// exists reports whether target (from the repository's root) exists.
func exists(target string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(path.Clean(target))))
	return err == nil
}

// checkPath fails t unless target (from the repository's root) exists.
func checkPath(t *testing.T, file, target, written string) {
	t.Helper()
	target = path.Clean(target)
	if createdPaths[target] {
		return
	}
	if strings.HasPrefix(target, "../") {
		t.Errorf("%s names %s, outside the repository", file, written)
		return
	}
	if !exists(target) {
		t.Errorf("%s names %s, which does not exist", file, written)
	}
}

// TestMarkdownLinksResolve: every relative link of the Markdown files of
// README.md, docs/ and deploy/ leads to a file that exists and, with an
// #anchor, to a heading of it (GitHub's anchors).
func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	anchors := anchorCache{}
	for _, f := range refFiles(t) {
		if !f.paths || !strings.HasSuffix(f.path, ".md") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range proseLines(string(raw)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(link, "#")
				target := f.path
				if file != "" {
					target = path.Clean(path.Join(path.Dir(f.path), file))
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
						t.Errorf("%s links to %s, which does not exist", f.path, link)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(target, ".md") {
					continue
				}
				if !slices.Contains(anchors.of(t, target), anchor) {
					t.Errorf("%s links to %s: %s has no heading with the anchor #%s", f.path, link, target, anchor)
				}
			}
		}
	}
}

// TestNamedSectionsExist: every section named in prose or a comment
// (docs/operations.md, "Sizing"; the README's "Settings" table) is a
// heading of that file: the whole heading, or its part before a colon or
// a parenthesis ("Stopping" for "Stopping (SIGTERM)").
func TestNamedSectionsExist(t *testing.T) {
	t.Parallel()
	roots := repoRoots(t)
	headings := headingCache{}
	found := 0
	for _, f := range refFiles(t) {
		raw, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sectionRef.FindAllStringSubmatch(flatten(string(raw)), -1) {
			found++
			name, how, section := m[1], m[2], m[3]
			var target string
			first, _, _ := strings.Cut(name, "/")
			switch {
			case how == " beside this file,":
				target = path.Join(path.Dir(f.path), "README.md")
			case name == "README" || name == "README.md":
				target = "README.md"
			case strings.HasPrefix(name, "../"):
				target = path.Clean(path.Join(path.Dir(f.path), name))
			case roots[first] && strings.Contains(name, "/"):
				target = name
			default:
				target = path.Join(path.Dir(f.path), name)
			}
			if !strings.HasSuffix(target, ".md") {
				target += ".md"
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s names the section %q of %s, which does not exist", f.path, section, target)
				continue
			}
			hs := headings.of(t, target)
			if !slices.ContainsFunc(hs, func(h string) bool {
				return h == section || strings.HasPrefix(h, section+":") || strings.HasPrefix(h, section+" (")
			}) {
				t.Errorf("%s names the section %q of %s, which has no such heading", f.path, section, target)
			}
		}
	}
	if found < 10 {
		t.Errorf("only %d section names found: the pattern no longer matches how the files name them", found)
	}
}

// flatten joins a file's lines into one, without their comment markers
// and indentation, so that a section name broken over two comment lines
// reads whole (a line that ends in a hyphen joins the next without a
// space: "Poll-to-" and "verdict latency").
func flatten(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "//"):
			line = strings.TrimLeft(line, "/")
		case strings.HasPrefix(line, "--"):
			line = strings.TrimLeft(line, "-")
		case strings.HasPrefix(line, "#"):
			line = strings.TrimLeft(line, "#")
		}
		line = strings.TrimSpace(line)
		b.WriteString(line)
		if !strings.HasSuffix(line, "-") || strings.HasSuffix(line, " -") || line == "-" {
			b.WriteByte(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// TestCodeFencesClose: every fenced code block of the Markdown files is
// closed. One left open swallows the rest of the file, headings and all
// (docs/PERFORMANCE.md had one whose "```sh" was taken for its end).
func TestCodeFencesClose(t *testing.T) {
	t.Parallel()
	for _, f := range refFiles(t) {
		if !f.paths || !strings.HasSuffix(f.path, ".md") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range fenceProblems(string(raw)) {
			t.Errorf("%s: %s", f.path, p)
		}
	}
}

// proseLines returns the lines of a Markdown document outside its fenced
// code blocks.
func proseLines(doc string) []string {
	lines, _ := scanFences(doc)
	return lines
}

// fenceProblems returns what is wrong with a document's code fences: a
// block never closed, or an opening fence ("```sh") inside a block, which
// was meant to close the one before.
func fenceProblems(doc string) []string {
	_, problems := scanFences(doc)
	return problems
}

// scanFences returns the lines of a Markdown document outside its fenced
// code blocks, and fenceProblems'.
func scanFences(doc string) ([]string, []string) {
	var out, problems []string
	fence, opened, n := "", 0, 0
	for line := range strings.Lines(doc) {
		n++
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			// A closing fence is the fence alone (CommonMark): "```sh"
			// opens a block, it does not close one.
			switch {
			case strings.Trim(trimmed, fence[:1]) == "" && len(trimmed) >= len(fence):
				fence = ""
			case strings.HasPrefix(trimmed, fence):
				problems = append(problems, fmt.Sprintf("line %d opens a code block inside the one opened on line %d (close that one first)", n, opened))
			}
			continue
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
			opened = n
			continue
		}
		out = append(out, strings.TrimRight(line, "\n"))
	}
	if fence != "" {
		problems = append(problems, fmt.Sprintf("the code block opened on line %d is never closed", opened))
	}
	return out, problems
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// headings returns the text of a Markdown document's headings, with
// their inline markup (code spans, emphasis, links) read as text.
func headings(doc string) []string {
	var out []string
	for _, line := range proseLines(doc) {
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			h := inlineLink.ReplaceAllString(m[1], "$1")
			h = strings.NewReplacer("`", "", "**", "", "*", "").Replace(h)
			out = append(out, h)
		}
	}
	return out
}

// anchors returns the anchors GitHub gives a document's headings:
// lower-case, punctuation but hyphens and underscores dropped, spaces
// made hyphens, "-1", "-2"… after a repeated one.
func anchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	for _, h := range headings(doc) {
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

type (
	anchorCache  map[string][]string
	headingCache map[string][]string
)

func (c anchorCache) of(t *testing.T, file string) []string {
	t.Helper()
	if a, ok := c[file]; ok {
		return a
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	c[file] = anchors(string(raw))
	return c[file]
}

func (c headingCache) of(t *testing.T, file string) []string {
	t.Helper()
	if h, ok := c[file]; ok {
		return h
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	c[file] = headings(string(raw))
	return c[file]
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	doc := "# verdictbot\n## Network: outbound hosts and proxies\n```\n# not a heading\n```sh\n# still code\n```\n" +
		"### URL reputation service (`/api/<key>/…`)\n## Stopping (SIGTERM)\n## Checking a channel's history\n## Notes\n## Notes\n" +
		"## [Linked](x.md) **bold**\n"
	want := []string{"verdictbot", "network-outbound-hosts-and-proxies", "url-reputation-service-apikey", "stopping-sigterm",
		"checking-a-channels-history", "notes", "notes-1", "linked-bold"}
	if got := anchors(doc); !slices.Equal(got, want) {
		t.Errorf("anchors = %q\nwant %q", got, want)
	}
}

func TestSectionRef(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		`(docs/operations.md, "Several replicas").`:                              {"docs/operations.md", ",", "Several replicas"},
		`the top-level README's "Settings" table`:                                {"README", "'s", "Settings"},
		`README.md beside this file, "Several replicas: the PostgreSQL overlay"`: {"README.md", " beside this file,", "Several replicas: the PostgreSQL overlay"},
		`"see (docs/grid.md, \"Installing on Enterprise Grid\")"`:                {"docs/grid.md", ",", "Installing on Enterprise Grid"},
		`../kubernetes/README.md, "Apply"`:                                       {"../kubernetes/README.md", ",", "Apply"},
	} {
		m := sectionRef.FindStringSubmatch(in)
		if m == nil || !slices.Equal(m[1:], want) {
			t.Errorf("%s: %q, want %q", in, m, want)
		}
	}
	if got := flatten("  # docs/operations.md, \"Several\n  # replicas\".\n// a\n-- b\n# \"Poll-to-\n# verdict\"\n"); got != `docs/operations.md, "Several replicas". a b "Poll-to-verdict"` {
		t.Errorf("flatten = %q", got)
	}
}
