package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// review46GivenUpFooter is TestReview11FootersTheGoReaderGivesUpOnAreRefused's
// file: 3 rows of x (1, 2, 3), no statistics, a row group claiming a
// total_compressed_size of 1 GiB (Spark reads 0 rows of it), and a byte
// after the FileMetaData, which DuckDB, pyarrow and Spark ignore and the Go
// reader gives up on.
func review46GivenUpFooter(t *testing.T) []byte {
	t.Helper()
	body := append(append(le32(1), le32(2)...), le32(3)...)
	pg := append(tstruct(ti32(1, 0), ti32(2, int32(len(body))), ti32(3, int32(len(body))), tst(5, ti32(1, 3), ti32(2, 0), ti32(3, 3), ti32(4, 3))), body...)
	handRowGroupExtra = []tf{ti64(6, 1<<30)}
	b := handParquetCol(3, pg, 4, 0, int64(len(pg)), ptInt32, -1, nil, nil)
	handRowGroupExtra = nil
	n := binary.LittleEndian.Uint32(b[len(b)-8:])
	b = append(append(b[:len(b)-8:len(b)-8], 0), binary.LittleEndian.AppendUint32(nil, n+1)...)
	b = append(b, "PAR1"...)
	if _, err := readFooter(writeTemp(t, b)); err == nil {
		t.Fatal("the Go reader decodes the footer: the case shows nothing")
	}
	return b
}

// TestReview46FooterMetadataThatFailsIsNotPassedUnseen: a footer the Go
// reader gives up on is read by DuckDB's parquet_metadata instead
// (readerIndexes, and unreadClaims for its statistics), and a file whose
// parquet_metadata failed was passed unchecked, "left for the view",
// though the view reads it: out of memory (the limit is shared by every
// run in flight) passed a file whose row group Spark reads 0 rows of. A
// parquet_metadata that ran out of memory ends the audit as
// infrastructure (retried); one that failed otherwise on a file DuckDB
// reads refuses the file by name. DuckDB 1.5.6's parquet_metadata fails
// where its scan does not on statistics of a size other than their
// type's ("Incorrect stats size for type INTEGER") of a column the scan
// does not read, though a view's count over the file then fails as well;
// the fault is injected (scanFault, tag "footer").
func TestReview46FooterMetadataThatFailsIsNotPassedUnseen(t *testing.T) {
	b := review46GivenUpFooter(t)
	for _, c := range []struct {
		name  string
		fault string
		infra bool
	}{
		{"out of memory", "Out of Memory Error: could not allocate block of size 256.0 KiB (488.2 MiB/488.2 MiB used)", true},
		{"rejected", "Invalid Input Error: Incorrect stats size for type INTEGER", false},
	} {
		e := newEngine(t, oneFileBatch(t, b), "")
		faulted := 0
		e.scanFault = func(tag string) error {
			if tag != "footer" {
				return nil
			}
			faulted++
			return errors.New(c.fault)
		}
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)}}}})
		switch {
		case faulted == 0:
			t.Errorf("%s: parquet_metadata was not asked: the case shows nothing (err %v, passed %v %s)", c.name, err, rep.Passed, checkMessages(rep))
		case c.infra && !errors.Is(err, ErrInfrastructure):
			t.Errorf("%s: err %v, passed %v (%s); want an infrastructure error", c.name, err, rep.Passed, checkMessages(rep))
		case !c.infra && (err != nil || rep.Passed || !strings.Contains(checkMessages(rep), "t/part-0.parquet")):
			t.Errorf("%s: err %v, passed %v (%s); want the file refused by name", c.name, err, rep.Passed, checkMessages(rep))
		default:
			t.Logf("%s: %v %s", c.name, err, checkMessages(rep))
		}
	}
}

// TestReview46DataSpellingOutOfMemoryIsRefused: an error of DuckDB's may
// quote the data, and the audit classed an error whose text holds "Out of
// Memory Error" as the machine's (infrastructure: retried, never refused)
// when a refusal quoted it as text, its type lost.
// testdata/review46_oom_text.parquet (pyarrow 26.0.1, row groups of 2
// rows: id 1 to 4, s "a", "b", "Out of Memory Error: could not allocate
// \xff", "c", the last byte not UTF-8, with statistics and page
// statistics) made the audit end as infrastructure: DuckDB's "Invalid
// string encoding found in Parquet file: value "Out of Memory Error: ..."
// is not valid UTF8!", quoted by the refusal of the page statistics
// (readerIndexes) and of the row groups' (fileClaimsHold). A refusal
// quoting DuckDB's error is decided by its type: the file is refused.
func TestReview46DataSpellingOutOfMemoryIsRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "review46_oom_text.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, notInGo := range []bool{false, true} {
		e := newEngine(t, oneFileBatch(t, b), "")
		e.claimsNotInGo = notInGo
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "c", Kind: KindNotNull, Table: "t", Column: "id"}}}})
		if err != nil || rep.Passed || !strings.Contains(checkMessages(rep), "t/part-0.parquet") {
			t.Errorf("claims not in Go %v: err %v, passed %v (%s); want the file refused by name", notInGo, err, rep.Passed, checkMessages(rep))
		}
	}
	// The row groups' claims alone (fileClaimsHold), read by DuckDB.
	e := newEngine(t, newDirSource(t), "")
	e.claimsNotInGo = true
	f := filepath.Join(e.dir, "oom_text.parquet")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &run{e: e}
	err = r.claimsHold(context.Background(), "t", []string{f}, map[string]string{f: "p.parquet"}, nil)
	if err == nil || infrastructure(err) || invalidating(err) || !strings.Contains(err.Error(), "p.parquet") || !strings.Contains(err.Error(), "Out of Memory Error") {
		t.Fatalf("claimsHold: %v (infrastructure %v); want the file refused by name, quoting DuckDB", err, err != nil && infrastructure(err))
	}
}

// TestReview46QuotingIsDecidedByItsCausesType: a refusal quoting DuckDB's
// error is the machine's when its cause's type says so, or, for a cause
// that lost its type, when the cause's text begins with DuckDB's prefix
// (a value the data spells is inside it), and keeps the refusal's own
// chain (ErrDeltaUnsupported).
func TestReview46QuotingIsDecidedByItsCausesType(t *testing.T) {
	oom := &duckdb.Error{Type: duckdb.ErrorTypeOutOfMemory, Msg: "Out of Memory Error: failed to allocate data of size 32.0 MiB"}
	conv := &duckdb.Error{Type: duckdb.ErrorTypeConversion, Msg: "Conversion Error: Could not convert string 'Out of Memory Error: INTERNAL Error: x' to INT32"}
	refuse := func(cause error) error {
		return quote(fmt.Errorf("%w: file f cannot be compared (%v)", ErrDeltaUnsupported, cause), cause)
	}
	for _, c := range []struct {
		name  string
		err   error
		infra bool
	}{
		{"out of memory", refuse(oom), true},
		{"a value spelling it", refuse(conv), false},
		{"a value spelling it, untyped", refuse(errors.New(conv.Msg)), false},
		{"wrapped again", fmt.Errorf("cannot read table t (b1): %w", refuse(conv)), false},
		{"out of memory, untyped", refuse(errors.New(oom.Msg)), true},
		{"a crash, untyped", refuse(errors.New("INTERNAL Error: Attempted to access index 1 within vector of size 1")), true},
	} {
		if got := infrastructure(c.err); got != c.infra {
			t.Errorf("%s: infrastructure %v, want %v", c.name, got, c.infra)
		}
		if got, want := invalidating(c.err), strings.HasPrefix(c.name, "a crash"); got != want {
			t.Errorf("%s: invalidating %v, want %v", c.name, got, want)
		}
		if !errors.Is(c.err, ErrDeltaUnsupported) {
			t.Errorf("%s: the refusal's chain is lost", c.name)
		}
	}
}

// TestReview46TimestampsInNanosecondsWithAZonePass: pandas (3.1.1, parquet
// version 2.6) writes a zoned pd.Timestamp as a TIMESTAMP(NANOS,
// isAdjustedToUTC), which DuckDB reads as a TIMESTAMP WITH TIME ZONE, in
// microseconds truncated toward zero, and the audit compared the page
// statistics, the column index and the row groups' statistics with
// epoch_ns of that: an honest file with a time of a fraction of a
// microsecond was refused ("the statistics in the header of its data page
// 0 ... say it holds values from ...123456789 ...; it holds values from
// ...123456000"). They are compared in microseconds, the claims truncated
// as DuckDB truncates the values (and its skipping reads the claims).
// testdata/review46_tz_nanos.parquet (pandas 3.1.1, pyarrow 26.0.1, row
// groups of 3; page statistics in the pages' headers) and
// review46_tz_nanos_index.parquet (the same with write_page_index: a
// column index, no page statistics): id 0 to 5, ts 1969-12-31
// 23:59:59.999999999, 1900-01-01 00:00:00.0000005, NULL, 2025-05-31
// 12:00:00.123456789, 2025-06-01 00:00:00.000000001, 2025-06-02
// 23:59:59.999999999 (UTC) pass; their copies whose max of row group 1
// claims a microsecond less (in its data page's header, its column index,
// its footer) are refused, and so are those whose footer claims a
// nanosecond less, which pyarrow's row-group skipping reads (the pages
// read in Go, nanosecondsHold).
func TestReview46TimestampsInNanosecondsWithAZonePass(t *testing.T) {
	max := time.Date(2025, 6, 2, 23, 59, 59, 999999999, time.UTC).UnixNano()
	var from, to, toNano [8]byte
	binary.LittleEndian.PutUint64(from[:], uint64(max))
	binary.LittleEndian.PutUint64(to[:], uint64(max-1000))
	binary.LittleEndian.PutUint64(toNano[:], uint64(max-1))
	// forgedTo is b with every copy of the max in [lo, hi) made to.
	forgedTo := func(b []byte, lo, hi int64, to [8]byte) []byte {
		b = bytes.Clone(b)
		n := 0
		for i := lo; i+8 <= hi; i++ {
			if bytes.Equal(b[i:i+8], from[:]) {
				copy(b[i:], to[:])
				n++
			}
		}
		if n == 0 {
			t.Fatalf("no copy of the max in [%d, %d)", lo, hi)
		}
		return b
	}
	// forged is b with every copy of the max in [lo, hi) a microsecond less.
	forged := func(b []byte, lo, hi int64) []byte { return forgedTo(b, lo, hi, to) }
	type file struct {
		name string
		b    []byte
		want string // in the refusal; "" for a pass
	}
	var files []file
	for _, name := range []string{"review46_tz_nanos.parquet", "review46_tz_nanos_index.parquet"} {
		path, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		honest, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ft, err := readFooter(path)
		if err != nil {
			t.Fatal(err)
		}
		c := ft.chunks[3] // row group 1, ts
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pages, err := walkPages(f, int64(len(honest)), c)
		f.Close()
		if err != nil || c.rowGroup != 1 || c.path != "ts" || len(pages) == 0 || !pages[len(pages)-1].data() {
			t.Fatalf("%s: chunk 3 is of row group %d, column %q, %d pages (%v); want row group 1's ts, a data page last", name, c.rowGroup, c.path, len(pages), err)
		}
		page := pages[len(pages)-1]
		footerAt := int64(len(honest)) - 8 - int64(binary.LittleEndian.Uint32(honest[len(honest)-8:]))
		files = append(files, file{name, honest, ""},
			file{name + ", forged footer", forged(honest, footerAt, int64(len(honest))), "row group 1"},
			file{name + ", footer forged by a nanosecond", forgedTo(honest, footerAt, int64(len(honest)), toNano), "to the nanosecond"})
		if c.colIdxOffset >= 0 {
			files = append(files, file{name + ", forged column index", forged(honest, c.colIdxOffset, footerAt), "column index says page"})
		} else {
			files = append(files, file{name + ", forged page header", forged(honest, page.offset, page.body()), "header of its data page"})
		}
	}
	for _, c := range files {
		for _, notInGo := range []bool{false, true} {
			e := newEngine(t, oneFileBatch(t, c.b), "")
			e.claimsNotInGo = notInGo
			rep := auditTableAt(t, e, "t/", FormatParquet, Check{Kind: KindNotNull, Column: "id"})
			msg := checkMessages(rep)
			switch {
			case c.want == "" && !rep.Passed:
				t.Errorf("%s, claims not in Go %v: refused: %s", c.name, notInGo, msg)
			case c.want != "" && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, c.want) || !strings.Contains(msg, `column "ts"`)):
				t.Errorf("%s, claims not in Go %v: passed %v (%s), want refused naming the file, column ts and %q", c.name, notInGo, rep.Passed, msg, c.want)
			}
		}
	}
}

// TestReview46DecimalsOfMoreThan38DigitsAreRefused: DuckDB 1.5.6 reads a
// DECIMAL of more than 38 digits as a DOUBLE, and one stored in a
// FIXED_LEN_BYTE_ARRAY of a length not a multiple of 8 multiplied by a
// power of two (its last bytes read as the high bytes of 8): pyarrow's
// decimal256(40, 2) in 17 bytes, 0.01, read 720575940379279.4 (0.01 *
// 2^56), where pyarrow and pandas read 0.01 and Spark fails (its decimals
// are of at most 38 digits). testdata/review46_decimal40.parquet (pyarrow
// 26.0.1, write_statistics=False: no claim to compare): id 1, 2; amount
// DECIMAL(40, 2) and ok DECIMAL(38, 2) both 0.01, 2500.00. A range check
// of amount >= 1 passed where pandas reads 0.01; a file whose such column
// a check reads is refused, naming the column. The same check of ok,
// DuckDB's DECIMAL(38, 2), fails as it should, and a check of id passes.
func TestReview46DecimalsOfMoreThan38DigitsAreRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "review46_decimal40.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if python, err := testPython(); err == nil && !testing.Short() {
		out, err := exec.Command(python, "-c", "import sys, pandas as pd; print(list(map(str, pd.read_parquet(sys.argv[1]).amount)))", filepath.Join("testdata", "review46_decimal40.parquet")).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "['0.01', '2500.00']" {
			t.Fatalf("pandas reads amount as %s (%v), want 0.01 and 2500.00", out, err)
		}
	}
	for _, c := range []struct {
		name  string
		check Check
		want  string // in a refusal; "" for a pass, "fail" for the check failing
	}{
		{"amount", Check{Kind: KindRange, Column: "amount", Min: f64(1)}, `column "amount"`},
		{"ok", Check{Kind: KindRange, Column: "ok", Min: f64(1)}, "fail"},
		{"id", Check{Kind: KindNotNull, Column: "id"}, ""},
	} {
		e := newEngine(t, oneFileBatch(t, b), "")
		rep := auditTableAt(t, e, "t/", FormatParquet, c.check)
		msg := checkMessages(rep)
		switch {
		case c.want == "" && !rep.Passed:
			t.Errorf("%s: refused: %s", c.name, msg)
		case c.want == "fail" && (rep.Passed || len(rep.Checks) != 1 || rep.Checks[0].Status != "fail"):
			t.Errorf("%s: passed %v (%s), want the check failed", c.name, rep.Passed, msg)
		case c.want != "" && c.want != "fail" && (rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, c.want)):
			t.Errorf("%s: passed %v (%s), want refused naming the file and %s", c.name, rep.Passed, msg, c.want)
		}
	}
}

// TestReview46RefusalsSpellingOutOfMemoryAreRefusals: a refusal of the
// audit's own names the data (a value, a column, a partition key), and
// was taken for the machine's where that text spelled "Out of Memory
// Error" (infrastructure() looks for DuckDB's words in an error that lost
// its type): the audit ended as infrastructure, retried and then failed,
// instead of refusing the batch. A CSV field with a quote (which Spark
// reads otherwise) and a Parquet file under a key=value directory whose
// key is also its column (hiveCollision), each spelling it, are refused.
func TestReview46RefusalsSpellingOutOfMemoryAreRefusals(t *testing.T) {
	for _, c := range []struct {
		name, path, format string
		write              func(src *dirSource)
		check              Check
	}{
		{"csv quote", "t/", FormatCSV, func(src *dirSource) {
			src.writeRaw(t, "b1", "t/a.csv", "id,v\n1,\"Out of Memory Error: could not allocate \"\"x\"\"\"\n")
		}, Check{Kind: KindNotNull, Column: "id"}},
		{"hive key", "t/", FormatParquet, func(src *dirSource) {
			src.write(t, "b1", "t/Out of Memory Error=1/a.parquet", `SELECT 1::BIGINT AS id, 2 AS "Out of Memory Error"`)
		}, Check{Kind: KindNotNull, Column: "id"}},
	} {
		src := newBatchSource(t)
		c.write(src)
		e := newEngine(t, src, "")
		chk := c.check
		chk.Name, chk.Table = "c", "t"
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: c.path, Format: c.format}}, Checks: []Check{chk}}})
		if err != nil || rep.Passed || !strings.Contains(checkMessages(rep), "Out of Memory Error") {
			t.Errorf("%s: err %v, passed %v (%s); want refused, naming the data", c.name, err, rep.Passed, checkMessages(rep))
		}
	}
}

// TestReview46RefusedKeepsTheMachinesErrors: refused makes a refusal a
// verdict, never the machine's whatever it spells, and keeps the
// machine's errors as they are: by a DuckDB type, ErrInfrastructure, the
// context, or a lost type's text begun with DuckDB's prefix (the fault
// hooks' errors).
func TestReview46RefusedKeepsTheMachinesErrors(t *testing.T) {
	oom := &duckdb.Error{Type: duckdb.ErrorTypeOutOfMemory, Msg: "Out of Memory Error: failed to allocate data of size 32.0 MiB"}
	conv := &duckdb.Error{Type: duckdb.ErrorTypeConversion, Msg: "Conversion Error: Could not convert string 'Out of Memory Error' to INT32"}
	for _, c := range []struct {
		name  string
		err   error
		infra bool
	}{
		{"a refusal naming the data", errors.New(`file t/a.csv has a quote in a field of column "v" ("Out of Memory Error: \"x\"")`), false},
		{"a refusal naming a crash", errors.New(`file t/a.parquet has a column "INTERNAL Error" twice`), false},
		{"a typed conversion error", fmt.Errorf("file f: %w", conv), false},
		{"a typed out of memory", fmt.Errorf("file f: %w", oom), true},
		{"out of memory, untyped", fmt.Errorf("listing: %w", errors.New(oom.Msg)), true},
		{"a quoted out of memory", quote(errors.New("file f: cannot be compared (Out of Memory Error: ...)"), oom), true},
		{"the infrastructure's", fmt.Errorf("%w: before reading: lakeFS down", ErrInfrastructure), false},
		{"cancelled", fmt.Errorf("file f: %w", context.Canceled), false},
	} {
		got := refused(c.err)
		if _, isVerdict := errors.AsType[verdict](got); isVerdict != (c.name == "a refusal naming the data" || c.name == "a refusal naming a crash" || c.name == "a typed conversion error") {
			t.Errorf("%s: refused(...) is a verdict %v", c.name, isVerdict)
		}
		if infrastructure(got) != c.infra || invalidating(got) {
			t.Errorf("%s: infrastructure %v, invalidating %v; want %v, false", c.name, infrastructure(got), invalidating(got), c.infra)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the error's own chain is lost", c.name)
		}
	}
}
