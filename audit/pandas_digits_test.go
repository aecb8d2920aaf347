package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// pandas.read_json converts a column whose every value is a number's text
// to numbers with Python's float, which takes the decimal digits of every
// script ("１２" fullwidth, "٣٤" Arabic-Indic) as 0-9; DuckDB's TRY_CAST
// takes ASCII digits only. The refusals that judge which texts pandas
// reads as numbers (pandasJSONNumbers, pandasJSONFiles) took such a
// column for text pandas keeps: "12" and "１２" are two ids to DuckDB and
// one to pandas (3.1.1, run here), and accepted values listing "１２" find
// none of them in pandas. Now the digits are read as Python reads them.
func TestJSONNumbersInOtherScriptsPandasReadsAsNumbers(t *testing.T) {
	const (
		unique   = "import sys, pandas as pd; s = pd.concat([pd.read_json(f, lines=True) for f in sys.argv[1:-1]])[sys.argv[-1]].dropna(); print(int(s.duplicated().sum()))"
		accepted = "import sys, pandas as pd; s = pd.concat([pd.read_json(f, lines=True) for f in sys.argv[1:-1]])[sys.argv[-1]].dropna(); print(int((~s.isin(['１２', '٣٤', '12'])).sum()))"
	)
	cases := []struct {
		name   string
		files  map[string]string
		script string
		check  Check
		refuse bool
	}{
		{"unique fullwidth", map[string]string{"a.jsonl": "{\"id\": \"12\"}\n{\"id\": \"１２\"}\n"}, unique, Check{Kind: KindUnique, Column: "id"}, true},
		{"unique arabic-indic", map[string]string{"a.jsonl": "{\"id\": \"34\"}\n{\"id\": \"٣٤\"}\n"}, unique, Check{Kind: KindUnique, Column: "id"}, true},
		{"unique file by file", map[string]string{"a.jsonl": "{\"id\": \"１２\"}\n", "b.jsonl": "{\"id\": \"12\"}\n", "c.jsonl": "{\"id\": \"x\"}\n"}, unique, Check{Kind: KindUnique, Column: "id"}, true},
		{"accepted", map[string]string{"a.jsonl": "{\"code\": \"１２\"}\n{\"code\": \"٣٤\"}\n"}, accepted,
			Check{Kind: KindAcceptedValues, Column: "code", Values: []string{"１２", "٣٤", "12"}}, true},
		{"text kept", map[string]string{"a.jsonl": "{\"id\": \"１２\"}\n{\"id\": \"a１\"}\n{\"id\": \"12\"}\n"}, unique, Check{Kind: KindUnique, Column: "id"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			var args []string
			for name, text := range c.files {
				src.writeRaw(t, "b1", "t/"+name, text)
				args = append(args, filepath.Join(src.root, "b1", "t", name))
			}
			args = append(args, c.check.Column)
			rep, res, refused := auditLikePandas(t, src, c.script, args, FormatJSONL, c.check, c.refuse)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "read_json") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q; pandas reads other numbers: want it refused naming read_json", res.Status, res.Message)
			}
		})
	}
}
