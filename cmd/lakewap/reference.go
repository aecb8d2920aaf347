package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/reference"
)

// cliPage is the main usage and every command's -h, as they print, in
// the order of the main usage.
func cliPage() []byte {
	var b bytes.Buffer
	b.WriteString(reference.PageHeader)
	b.WriteString("# Command-line reference\n\n```\n" + usage() + "```\n")
	for _, c := range newRoot().Commands() {
		name := c.Name()
		if !c.IsAvailableCommand() || name == "help" {
			continue
		}
		var out, errOut bytes.Buffer
		run([]string{name, "-h"}, &out, &errOut)
		help := out.String() + errOut.String()
		fmt.Fprintf(&b, "\n## lakewap %s\n\n```\n%s\n```\n", name, strings.TrimRight(help, "\n"))
	}
	return b.Bytes()
}

// referencePages are the generated pages by file name.
func referencePages(root string) (map[string][]byte, error) {
	pages, err := reference.Pages(root)
	if err != nil {
		return nil, err
	}
	pages["cli.md"] = cliPage()
	return pages, nil
}

func referenceCommand() *cobra.Command {
	var dir, root string
	var check bool
	c := &cobra.Command{
		Use:   "reference [-dir docs/reference] [-root .] [-check]",
		Short: "write the reference pages (docs/reference/) from the code",
		Long: `Writes the reference pages (config.md, checks.md, events.md, cli.md) from
the code: the config keys, the check kinds, the events and this command
line. -check writes nothing and exits 1 naming each page that differs.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			pages, err := referencePages(root)
			if err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "lakewap reference: %v\n", err)
				return exit(2)
			}
			return exit(reference.Write(dir, pages, check, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	c.Flags().StringVar(&dir, "dir", filepath.Join("docs", "reference"), "directory of the pages")
	c.Flags().StringVar(&root, "root", ".", "the repository's root (doc comments are read from its sources)")
	c.Flags().BoolVar(&check, "check", false, "compare with the pages in -dir instead of writing them")
	return c
}
