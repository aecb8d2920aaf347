package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// citedTest is a test, benchmark or fuzz target's name as the docs and
// comments cite one (a subtest's path stops at its slash).
var citedTest = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

// TestCitedTestsExist fails on every test name the Markdown files
// (CHANGELOG.md and docs/ included), the YAML files, and the comments of
// the shell scripts and Go files of the repository cite that no _test.go file defines: a test renamed or never added leaves
// a claim ("... failed before") that nothing holds.
func TestCitedTestsExist(t *testing.T) {
	defined := map[string]bool{}
	type cite struct{ where, name string }
	var cites []cite
	fset := token.NewFileSet()
	must(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		where := strings.TrimPrefix(path, "../")
		switch {
		case strings.HasSuffix(path, ".md"), strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".yaml"), strings.HasSuffix(path, ".sh"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if strings.HasSuffix(path, ".sh") && !strings.HasPrefix(strings.TrimSpace(line), "#") {
					continue // a command's -run is a pattern, not a citation
				}
				for _, n := range citedTest.FindAllString(line, -1) {
					cites = append(cites, cite{where + ":" + strconv.Itoa(i+1), n})
				}
			}
		case strings.HasSuffix(path, ".go"):
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			if strings.HasSuffix(path, "_test.go") {
				for _, decl := range f.Decls {
					if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
						defined[fn.Name.Name] = true
					}
				}
			}
			for _, g := range f.Comments {
				for _, c := range g.List {
					for _, n := range citedTest.FindAllString(c.Text, -1) {
						cites = append(cites, cite{where + ":" + strconv.Itoa(fset.Position(c.Pos()).Line), n})
					}
				}
			}
		}
		return nil
	}))
	if len(defined) < 500 || len(cites) < 500 {
		t.Fatalf("found %d test functions and %d citations: is the walk reading the repository?", len(defined), len(cites))
	}
	var missing []string
	for _, c := range cites {
		if !defined[c.name] {
			missing = append(missing, c.where+": "+c.name)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("cites %s, which no _test.go file defines", m)
	}
}
