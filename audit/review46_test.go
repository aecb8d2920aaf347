package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
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
