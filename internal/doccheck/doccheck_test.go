// Package doccheck_test keeps the README files true to the tree: the
// layout map in README.md names every package of the module and only paths
// that exist, README.md stays a front page, every relative link in a
// README points at a file that exists, and every file and function the
// architecture note names exists. It is a package of tests only, apart
// from the code it checks, because it reads the whole module (the root
// package's tests belong to the commands).
package doccheck_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module's root, from this package's directory.
const root = "../.."

// architectureNote is the one-page note on the processes, packages and
// paths, relative to root.
const architectureNote = "internal/cli/ARCHITECTURE.md"

// maxFrontPageLines bounds README.md: a front page, the manuals beside
// their code.
const maxFrontPageLines = 270

// maxMarkdownBytes bounds all the Markdown of the repository: manuals say
// how things work, dated figures go to internal/bench/RESULTS.md, history
// to git.
const maxMarkdownBytes = 150_000

// TestLayoutMap checks the Layout block of README.md against `go list
// ./...`: every package directory is listed, every listed path exists.
// The root package is listed as main.go.
func TestLayoutMap(t *testing.T) {
	listed := layoutPaths(t, readFile(t, filepath.Join(root, "README.md")))
	for _, p := range listed {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("README.md's layout map lists %s, which does not exist", p)
		}
	}
	for _, dir := range packageDirs(t) {
		want := dir
		if dir == "." {
			want = "main.go"
		}
		if !slices.Contains(listed, want) {
			t.Errorf("README.md's layout map does not list the package %s: add a line for it", want)
		}
	}
}

// TestFrontPageIsShort proves README.md has at most maxFrontPageLines
// lines.
func TestFrontPageIsShort(t *testing.T) {
	n := bytes.Count(readFile(t, filepath.Join(root, "README.md")), []byte("\n"))
	if n > maxFrontPageLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail to a README beside its code", n, maxFrontPageLines)
	}
}

// TestMarkdownBudget proves the repository's Markdown files, all of them
// outside .git, hold at most maxMarkdownBytes together.
func TestMarkdownBudget(t *testing.T) {
	total, files := 0, 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			total += len(readFile(t, path))
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 || total > maxMarkdownBytes {
		t.Errorf("%d Markdown files hold %d bytes, want at most %d: cut repetition and history, move dated figures to internal/bench/RESULTS.md", files, total, maxMarkdownBytes)
	}
}

// TestRelativeLinks checks every relative link of every README.md in the
// module: its file exists and, for a #fragment into a Markdown file, so
// does the heading.
func TestRelativeLinks(t *testing.T) {
	readmes := readmeFiles(t)
	if len(readmes) < 2 {
		t.Fatalf("found %d README.md files under %s, want the front page and its manuals", len(readmes), root)
	}
	for _, md := range readmes {
		for _, l := range links(readFile(t, md)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(l.target, "#")
			file := md
			if path != "" {
				file = filepath.Join(filepath.Dir(md), filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s:%d: link %q points at %s, which does not exist", rel(md), l.line, l.target, rel(file))
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !slices.Contains(anchors(readFile(t, file)), frag) {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", rel(md), l.line, l.target, rel(file), frag)
			}
		}
	}
}

// TestArchitectureNames proves every name in backquotes in the
// architecture note that looks like a path (`dir/file.go`, `bots/slack`)
// exists in the tree, and every one that looks like Go (`pkg.Func`,
// `pkg.Type`, `(*pkg.Type).Method`) is declared in a package of the module
// of that name, as go/parser reads its non-test files.
func TestArchitectureNames(t *testing.T) {
	decls := declarations(t)
	paths, names := 0, 0
	for _, m := range quotedRE.FindAllStringSubmatch(string(readFile(t, filepath.Join(root, architectureNote))), -1) {
		q := m[1]
		switch {
		case pathRE.MatchString(q):
			paths++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(q))); err != nil {
				t.Errorf("%s names %s, which does not exist", architectureNote, q)
			}
		case goNameRE.MatchString(q):
			names++
			g := goNameRE.FindStringSubmatch(q)
			pkg, name := g[2], g[3]
			if g[4] != "" {
				name += "." + g[4]
			}
			byName, ok := decls[pkg]
			switch {
			case !ok:
				t.Errorf("%s names %s: the module has no package %s", architectureNote, q, pkg)
			case !byName[name]:
				t.Errorf("%s names %s: package %s declares no %s", architectureNote, q, pkg, name)
			}
		}
	}
	if paths < 5 || names < 15 {
		t.Errorf("%s: checked %d paths and %d Go names, want at least 5 and 15: is the note still written with backquotes?", architectureNote, paths, names)
	}
}

var (
	quotedRE = regexp.MustCompile("`([^`\n]+)`")
	// pathRE is a relative path with a slash or a file extension.
	pathRE = regexp.MustCompile(`^[\w.-]+(/[\w.-]+)*(\.(go|py|md)|/[\w-]+)$`)
	// goNameRE is pkg.Name, or (*pkg.Type).Method, (pkg.Type).Method.
	goNameRE = regexp.MustCompile(`^(\(\*?)?([a-z][a-z0-9]*)\.([A-Za-z_]\w*)(?:\)\.([A-Za-z_]\w*))?$`)
)

// declarations returns, per package name, the top-level functions and
// types ("Name") and methods ("Type.Method") of the module's non-test Go
// files.
func declarations(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range packageDirs(t) {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			names := out[f.Name.Name]
			if names == nil {
				names = map[string]bool{}
				out[f.Name.Name] = names
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						names[d.Name.Name] = true
					} else if recv := receiverType(d.Recv.List[0].Type); recv != "" {
						names[recv+"."+d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, sp := range d.Specs {
						if ts, ok := sp.(*ast.TypeSpec); ok {
							names[ts.Name.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

// receiverType is the name of a method's receiver type, without its
// pointer or type parameters.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// layoutPaths returns the first field of each entry of the fenced block
// after README.md's "## Layout" heading; continuation lines are indented.
func layoutPaths(t *testing.T, readme []byte) []string {
	t.Helper()
	_, after, ok := bytes.Cut(readme, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	_, block, ok := bytes.Cut(after, []byte("\n```\n"))
	if !ok {
		t.Fatal("README.md's Layout section has no fenced block")
	}
	block, _, ok = bytes.Cut(block, []byte("\n```"))
	if !ok {
		t.Fatal("README.md's Layout block is not closed")
	}
	var paths []string
	for line := range strings.Lines(string(block)) {
		if line == "" || line[0] == ' ' || line[0] == '\n' {
			continue
		}
		paths = append(paths, strings.Fields(line)[0])
	}
	if len(paths) == 0 {
		t.Fatal("README.md's Layout block lists nothing")
	}
	return paths
}

// packageDirs returns the module's package directories, relative to root
// and slash-separated, as `go list ./...` finds them.
func packageDirs(t *testing.T) []string {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = abs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	var dirs []string
	for dir := range strings.Lines(string(out)) {
		r, err := filepath.Rel(abs, strings.TrimSpace(dir))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.ToSlash(r))
	}
	if len(dirs) < 2 {
		t.Fatalf("go list ./... found %d packages: %q", len(dirs), out)
	}
	return dirs
}

// readmeFiles returns every README.md of the module, its .ci directory
// included, but not under testdata or another module's tree.
func readmeFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "README.md" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type link struct {
	target string
	line   int
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links returns the targets of the inline links of a Markdown file outside
// its fenced code blocks.
func links(md []byte) []link {
	var out []link
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: n})
		}
	}
	return out
}

// anchors returns the fragment GitHub gives each heading of a Markdown
// file: lower case, punctuation dropped, spaces to hyphens.
func anchors(md []byte) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(string(md)) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f:
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}
