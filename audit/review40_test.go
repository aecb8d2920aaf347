package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// review40Answer is what review40_pandas.py printed for one file.
type review40Answer struct {
	Values []*string `json:"values"`
	Error  string    `json:"error"`
}

// review40Pandas is pandas' reading of column col of each file (format
// csv or jsonl), or nil where the interop Python is not at hand.
func review40Pandas(t *testing.T, args []string) []review40Answer {
	t.Helper()
	python, err := testPython()
	if err != nil || testing.Short() {
		t.Logf("pandas not run (%v)", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return scriptAnswers[review40Answer](t, ctx, python, "review40_pandas.py", args)
}

// review40Text is a's values as text, NULL for a missing one, or its error.
func review40Text(a review40Answer) string {
	if a.Error != "" {
		return "error " + a.Error
	}
	return strings.Join(each(a.Values, func(v *string) string {
		if v == nil {
			return "NULL"
		}
		return *v
	}), ",")
}

// wideRow is a CSV header of n columns c0... and a row of n fields v.
func wideRow(n int, v string) (string, string) {
	var header, row []string
	for i := range n {
		header = append(header, fmt.Sprintf("c%d", i))
		row = append(row, v)
	}
	return strings.Join(header, ","), strings.Join(row, ",")
}

// TestReview40GuardThatCannotReadAFileRefusesIt: the reader-fidelity
// guards over CSV and JSON lines files (nullSpelling, typedSpelling) read
// each file in a query of their own, and passed a file on which that
// query failed: the checks then judged DuckDB's reading, which pandas'
// differs from. Each file below is one the guard's query could not read
// while the table's view reads it and its check passes:
//   - a header name with a NUL character: typedSpelling's query names the
//     column and DuckDB ends the statement at the NUL (Binder Error);
//   - 1200 columns of booleans beside the column checked: typedSpelling's
//     one query of 1200 branches ran out of memory (memory_limit 488 MiB);
//   - a byte not UTF-8 in a number column past the sniffer's sample, and
//     NA (NULL to pandas) after it: nullSpelling reads every column as
//     text and failed on the byte, the check reads only its column.
//
// pandas 3.1.1 reads t and f as text (DuckDB as true and false), and
// cannot read a file that is not UTF-8 (DuckDB's check passes it). The
// first two passed before; the third passed nullSpelling and then crashed
// DuckDB in typedSpelling (INTERNAL Error: Attempted to access index 1
// within vector of size 1, database invalidated). The fourth, a byte not
// UTF-8 in a column of text past the sample, crashes DuckDB 1.5 so in any
// read of that column alone (the check's): nullSpelling, reading every
// column, fails on it cleanly first, and now refuses the file before a
// check reads it (before, the audit failed as an infrastructure error).
func TestReview40GuardThatCannotReadAFileRefusesIt(t *testing.T) {
	header, row := wideRow(500, "true")
	var late strings.Builder
	late.WriteString("v,n\n")
	for range 30000 {
		late.WriteString("x,1\n")
	}
	late.WriteString("x,\x80\nNA,1\n")
	var lateText strings.Builder
	lateText.WriteString("v,n\n")
	for range 30000 {
		lateText.WriteString("x,y\n")
	}
	lateText.WriteString("x,\x80\n")
	cases := []struct {
		name, csv string
		check     Check
		pandas    string // pandas' reading of the checked column
	}{
		{"nul_in_a_header_name", "v,w\x00z\nt,1\nf,2\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"true", "false"}}, "t,f"},
		{"wide_file", "v," + header + "\nt," + row + "\nf," + row + "\n", Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"true", "false"}}, "t,f"},
		{"not_utf8_past_the_sample", late.String(), Check{Kind: KindNotNull, Column: "v"}, "error UnicodeDecodeError"},
		{"not_utf8_text_past_the_sample", lateText.String(), Check{Kind: KindNotNull, Column: "n"}, "error UnicodeDecodeError"},
	}
	src := newBatchSource(t)
	var args []string
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/a.csv", c.csv)
		args = append(args, "csv:"+c.check.Column+":"+filepath.Join(src.root, "b1", c.name, "a.csv"))
	}
	if answers := review40Pandas(t, args); answers != nil {
		for i, c := range cases {
			if got := review40Text(answers[i]); !strings.HasPrefix(got, c.pandas) {
				t.Fatalf("%s: pandas reads %s, want %s: the case shows nothing", c.name, schemas.Clip(got, 200), c.pandas)
			}
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		rep := auditTableAt(t, e, c.name+"/", FormatCSV, c.check)
		if rep.Passed {
			t.Errorf("%s: %s passed (%s) while pandas reads %s", c.name, c.check.Kind, rep.Checks[0].Observed, c.pandas)
			continue
		}
		t.Logf("%s: refused: %s", c.name, refusal(rep))
	}
}

// TestReview40NamesDuckDBRenamesAreRefused: DuckDB reads a CSV header or
// JSON keys whose names differ only in case (a and A) as a and A_1, so
// caseCollision, given DuckDB's names, saw no collision; a check of A then
// binds to a (DuckDB binds names without regard to case) and judged a's
// values, where pandas 3.1.1 reads A's. Both passed before. An honest file
// whose column is named a_1 beside a passes.
func TestReview40NamesDuckDBRenamesAreRefused(t *testing.T) {
	cases := []struct {
		name, file, text string
		passes           bool
	}{
		{"csv_header", "a.csv", "a,A\nx,y\n", false},
		{"json_keys", "a.jsonl", "{\"a\": \"x\", \"A\": \"y\"}\n", false},
		{"json_keys_of_two_records", "a.jsonl", "{\"a\": \"x\"}\n{\"A\": \"y\"}\n", false},
		{"csv_honest_suffix", "a.csv", "a,A_1\nx,y\n", true},
		{"json_honest_suffix", "a.jsonl", "{\"a\": \"x\", \"A_1\": \"y\"}\n", true},
	}
	src := newBatchSource(t)
	var args []string
	for _, c := range cases {
		src.writeRaw(t, "b1", c.name+"/"+c.file, c.text)
		format := "csv"
		if strings.HasSuffix(c.file, ".jsonl") {
			format = "jsonl"
		}
		args = append(args, format+":A:"+filepath.Join(src.root, "b1", c.name, c.file))
	}
	if answers := review40Pandas(t, args); answers != nil {
		for i, c := range cases {
			if got := review40Text(answers[i]); !c.passes && !strings.HasSuffix(got, "y") {
				t.Fatalf("%s: pandas reads A as %s: the case shows nothing", c.name, schemas.Clip(got, 200))
			}
		}
	}
	e := newEngine(t, src, "")
	for _, c := range cases {
		format, column := FormatCSV, "A"
		if strings.HasSuffix(c.file, ".jsonl") {
			format = FormatJSONL
		}
		if c.passes {
			column = "A_1"
		}
		rep := auditTableAt(t, e, c.name+"/", format, Check{Kind: KindAcceptedValues, Column: column, Values: []string{"x", "y"}[:map[bool]int{false: 1, true: 2}[c.passes]]})
		if rep.Passed != c.passes {
			t.Errorf("%s: passed %v (%s %s), want %v (pandas reads A as y)", c.name, rep.Passed, rep.Checks[0].Observed, refusal(rep), c.passes)
			continue
		}
		t.Logf("%s: passed %v: %s", c.name, rep.Passed, refusal(rep))
	}
}
