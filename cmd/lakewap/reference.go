package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/internal/reference"
)

const referenceUsage = `Usage:
  lakewap reference [-dir docs/reference] [-root .] [-check]

Writes the reference pages (config.md, checks.md, events.md, cli.md) from
the code: the config keys, the check kinds, the events and this command
line. -check writes nothing and exits 1 naming each page that differs.
`

// referenceCommands are the commands cli.md documents, in the order of the
// main usage.
func referenceCommands() []string {
	var names []string
	for _, l := range strings.Split(usage, "\n") {
		if rest, ok := strings.CutPrefix(l, "  lakewap "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// cliPage is the main usage and every command's -h, as they print.
func cliPage(ctx context.Context) []byte {
	var b bytes.Buffer
	b.WriteString(reference.PageHeader)
	b.WriteString("# Command-line reference\n\n```\n" + usage + "```\n")
	for _, name := range referenceCommands() {
		var out, errOut bytes.Buffer
		run([]string{name, "-h"}, &out, &errOut)
		help := out.String() + errOut.String()
		fmt.Fprintf(&b, "\n## lakewap %s\n\n```\n%s\n```\n", name, strings.TrimRight(help, "\n"))
	}
	return b.Bytes()
}

// referencePages are the generated pages by file name.
func referencePages(ctx context.Context, root string) (map[string][]byte, error) {
	pages, err := reference.Pages(root)
	if err != nil {
		return nil, err
	}
	pages["cli.md"] = cliPage(ctx)
	return pages, nil
}

func cmdReference(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("reference")
	fs.Usage = func() { fmt.Fprint(fs.Output(), referenceUsage+"\nFlags:\n"); fs.PrintDefaults() }
	dir := fs.String("dir", filepath.Join("docs", "reference"), "directory of the pages")
	root := fs.String("root", ".", "the repository's root (doc comments are read from its sources)")
	check := fs.Bool("check", false, "compare with the pages in -dir instead of writing them")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	pages, err := referencePages(ctx, *root)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap reference: %v\n", err)
		return 2
	}
	stale := 0
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		path := filepath.Join(*dir, name)
		if *check {
			old, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(old, pages[name]) {
				fmt.Fprintf(stderr, "%s is stale: run go run ./cmd/lakewap reference\n", path)
				stale++
			}
			continue
		}
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "lakewap reference: %v\n", err)
			return 2
		}
		if err := os.WriteFile(path, pages[name], 0o644); err != nil {
			fmt.Fprintf(stderr, "lakewap reference: %v\n", err)
			return 2
		}
		fmt.Fprintln(stdout, path)
	}
	if stale > 0 {
		return 1
	}
	return 0
}
