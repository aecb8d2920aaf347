package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxJSONDepth bounds how deep the arrays and objects of a JSON lines
// file's line nest. Spark's reader (Jackson) refuses more than 1,000
// levels and pandas' read_json more than 1,024; DuckDB has no bound of its
// own, and binding its read of a line nested 100,000 deep overflowed its
// stack and killed the process (TestLimits64DeeplyNestedJSONLineIsRefused).
const maxJSONDepth = 1000

// jsonDepths refuses a JSON lines file of files (local paths; objPath
// names them) with a line nesting deeper than maxJSONDepth, naming the
// file, the line and the bound, before DuckDB reads any of them: one pass
// over each file's bytes, holding a buffer.
func jsonDepths(ctx context.Context, files []string, objPath map[string]string) error {
	for _, f := range files {
		line, err := jsonDepth(ctx, f)
		if ctx.Err() != nil {
			return ctx.Err()
		} else if err != nil {
			return fmt.Errorf("%w: reading %s: %v", ErrInfrastructure, objPath[f], err)
		}
		if line > 0 {
			return fmt.Errorf("file %s: line %d nests arrays and objects more than %d deep: Spark's reader refuses more than 1000 levels, pandas' more than 1024, and DuckDB's read of it may crash",
				objPath[f], line, maxJSONDepth)
		}
	}
	return nil
}

// jsonDepth is the first line (counted from 1) of the file at path whose
// arrays and objects nest more than maxJSONDepth deep, or 0. Brackets
// inside strings do not count; each line starts at depth 0.
func jsonDepth(ctx context.Context, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	line, depth := 1, 0
	inString, escaped := false, false
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		buf, err := r.Peek(r.Buffered())
		if len(buf) == 0 {
			if _, err = r.Peek(1); errors.Is(err, io.EOF) {
				return 0, nil
			} else if err != nil {
				return 0, err
			}
			continue
		}
		for _, b := range buf {
			switch {
			case b == '\n':
				line, depth, inString, escaped = line+1, 0, false, false
			case inString:
				switch {
				case escaped:
					escaped = false
				case b == '\\':
					escaped = true
				case b == '"':
					inString = false
				}
			case b == '"':
				inString = true
			case b == '[' || b == '{':
				if depth++; depth > maxJSONDepth {
					return line, nil
				}
			case b == ']' || b == '}':
				depth--
			}
		}
		if _, err := r.Discard(len(buf)); err != nil {
			return 0, err
		}
	}
}
