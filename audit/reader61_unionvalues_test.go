package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// unionScript is pandas' reading of a Parquet table's directory and its
// count of rows a check fails: unique (argv[3] "unique") or a range's
// maximum (argv[3] "max", argv[4] the bound).
const unionScript = `import sys, pandas as pd
c = pd.read_parquet(sys.argv[1])[sys.argv[2]]
if sys.argv[3] == "unique":
    print(int(c.duplicated(keep=False).sum()))
else:
    print(int((c > float(sys.argv[4])).sum()))`

// TestReader61TypesUnionedAcrossFilesAreRefused: a Parquet table whose
// column x is of one type in part-0.parquet and another in part-1.parquet.
// DuckDB reads the files together in their union's type (FLOAT beside
// DOUBLE as DOUBLE, DATE beside TIMESTAMP as TIMESTAMP, DECIMAL beside
// DOUBLE as DOUBLE, BOOLEAN beside BIGINT as BIGINT, INTEGER beside FLOAT
// as FLOAT); pyarrow's dataset, and so pandas.read_parquet of the
// directory (pandas 3.1.1, pyarrow 26.0.1), in the first file's type,
// casting the other's values to it without a word where they do not fit
// it exactly: a DOUBLE 1e300 beside a FLOAT first is inf, 0.1 and
// 0.1000000001 are both 0.10000000149011612; a TIMESTAMP 12:00 beside a DATE first is its date;
// a DOUBLE 0.123 beside a DECIMAL(10,2) first is 0.12; a BIGINT 2 beside
// a BOOLEAN first is True; and a DECIMAL 0.3 beside a DOUBLE first is
// 0.30000000000000004 (pyarrow's cast of a decimal to a double is not the
// nearest double: about half of all decimals of scale 1 to 4 read so),
// where DuckDB reads 0.3. And where the union is the narrower one,
// DuckDB rounds the first file's values that pandas reads as written
// (an INTEGER 16777217 beside a FLOAT is 16777216 to DuckDB). Each check
// passed in DuckDB's reading and fails in pandas': refused, naming both
// files, the column and the two types. Values both types hold exactly
// read alike and pass. A first file of no rows counts as much (review 61:
// pyarrow's dataset takes its type all the same; a FLOAT file of no rows
// before a DOUBLE 1e300 made pandas read inf, and the audit passed).
func TestReader61TypesUnionedAcrossFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name, first, second string
		check               Check
		args                []string // unionScript's check
		refused             bool
		empty               bool // part-0.parquet holds no rows, only its type
	}{
		{"float_then_double_beyond_float", "0.5::FLOAT", "1e300::DOUBLE", Check{Kind: KindRange, Column: "x", Max: f64(1e301)}, []string{"max", "1e301"}, true, false},
		{"float_then_doubles_a_float_apart", "0.5::FLOAT", "unnest([0.1, 0.1000000001])::DOUBLE", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, false},
		{"float_then_double_exact", "0.5::FLOAT", "0.25::DOUBLE", Check{Kind: KindRange, Column: "x", Max: f64(0.5)}, []string{"max", "0.5"}, false, false},
		{"date_then_timestamp", "DATE '2024-01-01'", "TIMESTAMP '2024-01-01 12:00:00'", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, false},
		{"date_then_timestamptz", "DATE '2024-01-01'", "TIMESTAMPTZ '2024-01-01 12:00:00+00'", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, false},
		{"date_then_midnight", "DATE '2024-01-01'", "TIMESTAMP '2024-01-02 00:00:00'", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, false, false},
		{"decimal_then_double", "0.12::DECIMAL(10,2)", "0.123::DOUBLE", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, false},
		{"boolean_then_bigint", "true", "2::BIGINT", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, false},
		{"integer_then_float", "16777217::INTEGER", "2.0::FLOAT", Check{Kind: KindRange, Column: "x", Max: f64(16777216)}, []string{"max", "16777216"}, true, false},
		{"double_then_decimal", "0.2::DOUBLE", "0.3::DECIMAL(10,1)", Check{Kind: KindRange, Column: "x", Max: f64(0.3)}, []string{"max", "0.3"}, true, false},
		// An INT64 DECIMAL: Spark reads an INT32 one (DECIMAL(4,1)) beside
		// a DOUBLE first by its raw integer, 150.0 as 1500.0 (review 62).
		{"double_then_decimal_read_alike", "0.2::DOUBLE", "150.0::DECIMAL(18,1)", Check{Kind: KindRange, Column: "x", Max: f64(150)}, []string{"max", "150"}, false, false},
		{"decimal_then_double_rounded", "100.00000000000000000001::DECIMAL(38,20)", "1.0::DOUBLE", Check{Kind: KindRange, Column: "x", Max: f64(100)}, []string{"max", "100"}, true, false},
		{"empty_float_then_double_beyond_float", "0.5::FLOAT", "1e300::DOUBLE", Check{Kind: KindRange, Column: "x", Max: f64(1e301)}, []string{"max", "1e301"}, true, true},
		{"empty_date_then_timestamps", "DATE '2024-01-01'", "unnest([TIMESTAMP '2024-01-01 12:00:00', TIMESTAMP '2024-01-01 13:00:00'])", Check{Kind: KindUnique, Column: "x"}, []string{"unique"}, true, true},
		{"empty_float_then_double_exact", "0.5::FLOAT", "0.25::DOUBLE", Check{Kind: KindRange, Column: "x", Max: f64(0.5)}, []string{"max", "0.5"}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			first := "SELECT " + c.first + " AS x"
			if c.empty {
				first += " WHERE false"
			}
			src.write(t, "b1", "t/part-0.parquet", first)
			src.write(t, "b1", "t/part-1.parquet", "SELECT "+c.second+" AS x")
			dir := filepath.Join(src.root, "b1", "t")
			rep, res, _ := auditLikePandas(t, src, unionScript, append([]string{dir, "x"}, c.args...), FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") || !strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, `"x"`) {
				t.Fatalf("%s %q (%s); pandas reads a failing value: want it refused naming both files and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReader61TypesUnionedAcrossFilesAreRefusedIncrementally: the attack
// of TestReader61TypesUnionedAcrossFilesAreRefused by a batch onto main
// whose attestation lets it be audited incrementally. A batch writing
// DOUBLEs 0.1 and 0.1000000001 beside main's FLOAT file (first by path:
// pandas reads the batch's values as one FLOAT), and a batch writing a
// FLOAT file that sorts before main's DOUBLE file (pandas then reads the
// unchanged DOUBLEs as FLOATs): the incremental audit, which reads the
// batch's files alone, sees the column's two types (schemaDisagreement),
// runs full and refuses the table, naming the DOUBLE file and the FLOAT
// one, as the full audit does.
func TestReader61TypesUnionedAcrossFilesAreRefusedIncrementally(t *testing.T) {
	for _, c := range []struct {
		name, mainType, batchPath, batchValues string
	}{
		{"doubles_after_main_floats", "FLOAT", "data/t/part-b.parquet", "unnest([0.1, 0.1000000001])::DOUBLE"},
		{"floats_before_main_doubles", "DOUBLE", "data/t/a.parquet", "0.5::FLOAT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mainValues := "0.5::FLOAT"
			if c.mainType == "DOUBLE" {
				mainValues = "unnest([0.1, 0.1000000001])::DOUBLE"
			}
			suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Name: "u", Kind: KindUnique, Table: "t", Column: "x"}}}
			audit := attestedBatches(t, suite, "SELECT "+mainValues+" AS x")
			// A first batch of main's type: passed, and attested.
			if rep := audit("data/t/part-?.parquet", "SELECT "+mainValues+"+1 AS x"); !rep.Passed {
				t.Fatalf("a batch of main's type: %s %q", rep.Checks[0].Status, rep.Checks[0].Message)
			}
			rep := audit(c.batchPath, "SELECT "+c.batchValues+" AS x")
			res := rep.Checks[0]
			if rep.Passed || rep.Mode != ModeFull || res.Status != schemas.StatusError || !strings.Contains(res.Message, "is DOUBLE there and FLOAT in file") {
				t.Fatalf("passed=%v %s (%q) %s %q: want the table refused by a full audit", rep.Passed, rep.Mode, rep.ModeReason, res.Status, res.Message)
			}
			t.Logf("%s (%s): %s", rep.Mode, rep.ModeReason, res.Message)
		})
	}
}

// attestedBatches is an audit of a batch (a branch of the head, one file
// written at path, its "?" the branch's id, by query), compared with the
// full audit's verdicts (diffHistory.compare), on a lake whose root holds
// one file of table data/t/, part-a.parquet, written by mainQuery; a
// passing batch is merged and attested, the head moving from the root.
func attestedBatches(t *testing.T, suite Suite, mainQuery string) func(path, query string) schemas.AuditReport {
	e, h := statsHistory(t, "data/t/part-a.parquet", mainQuery)
	return func(path, query string) schemas.AuditReport {
		rep, s := h.audited(e, "d", suite, nil, path, query) // fails unless every verdict is the full audit's
		if rep.Passed {
			h.merge(h.head, s, "d", suite, rep)
		}
		return rep
	}
}
