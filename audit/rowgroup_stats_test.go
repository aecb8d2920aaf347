package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// readerCount is count(*) of a query over file f (written as FILE) as a
// reader of main runs it: DuckDB with its default settings, which prunes
// row groups by the footer's claims; or, trusting=false, as the audit reads
// (the full scan).
func readerCount(t *testing.T, f, query string, trusting bool) int64 {
	t.Helper()
	dsn := ""
	if !trusting {
		dsn = "?disabled_optimizers=" + distrustedOptimizers
	}
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	q := strings.ReplaceAll(query, "FILE", "read_parquet("+quoteLiteral(f)+")")
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestRowGroupStatisticsThatLieAreRefused is the attack of a writer whose
// Parquet data passes the suite but whose footer claims a narrower min or
// max, or no nulls over a NULL: a reader of main with default settings
// (DuckDB here; Spark, pyarrow.dataset and delta-rs prune so too) skips
// the row group and reads other rows than the audit did. The audit must
// refuse the file, naming it, the row group and the column.
func TestRowGroupStatisticsThatLieAreRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		forge  func(t *testing.T, b []byte, dst string) []byte
		query  string // a reader's count over the file: pruned differs from the scan
		filter string // the same as a pyarrow.dataset filter
		column string // the row group and column the refusal names
	}{
		{"narrower_max", func(t *testing.T, b []byte, dst string) []byte { return forgeMax(t, b, 1_000_000, 5000, dst) },
			"SELECT count(*) FROM FILE WHERE x = 1000000", "pc.field('x') == 1000000", `row group 2, column "x"`},
		{"narrower_min", func(t *testing.T, b []byte, dst string) []byte { return forgeMax(t, b, 1, 3, dst) },
			"SELECT count(*) FROM FILE WHERE x = 1", "pc.field('x') == 1", `row group 0, column "x"`},
		{"no_nulls_claimed", func(t *testing.T, b []byte, dst string) []byte { return forgeNullCount(t, b, "y", dst) },
			"SELECT count(*) FROM FILE WHERE y IS NULL", "pc.field('y').is_null()", `row group 0, column "y"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "t/a.parquet", "SELECT 5::BIGINT AS x, 5::BIGINT AS y")
			src.branch(t, "main", "b")
			dst := filepath.Join(src.root, "b", "t", "b.parquet")
			// x = 1..5000 and 1000000, y = x but NULL at 7; three row
			// groups (2048, 2048 and 905 rows).
			copySQL(t, `COPY (SELECT x, CASE WHEN x = 7 THEN NULL ELSE x END AS y
				FROM (SELECT i::BIGINT AS x FROM range(1, 5001) r(i) UNION ALL SELECT 1000000) ORDER BY x)
				TO `+quoteLiteral(dst)+` (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 2048)`)
			if got := footerStat(t, dst, "count(*)", "x"); got != "3" {
				t.Fatalf("%s row groups, want 3", got)
			}
			honest, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			c.forge(t, honest, dst)
			// The disagreement: a reader of main pruning by the claim counts
			// no row, the full scan (and the audit) one.
			pruned, scanned := readerCount(t, dst, c.query, true), readerCount(t, dst, c.query, false)
			if pruned == scanned || scanned != 1 {
				t.Fatalf("%s: DuckDB with default settings counts %d, the full scan %d: want them to differ (the attack)", c.query, pruned, scanned)
			}
			pyarrowSkips(t, dst, c.filter)
			for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
				e := newEngine(t, src, cache)
				for range 2 { // the second run of an engine with a cache may take the memo
					rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
						Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
							{Name: "x_range", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(2e6)},
							{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)}}}})
					if err != nil {
						t.Fatal(err)
					}
					got := rep.Checks[0]
					if rep.Passed || !strings.Contains(got.Message, "t/b.parquet") || !strings.Contains(got.Message, c.column) {
						t.Errorf("cache %v: passed %v (%s %s), want refused naming t/b.parquet and %s", cache != "", rep.Passed, got.Observed, got.Message, c.column)
					} else {
						t.Logf("refused: %s", got.Message)
					}
				}
			}
		})
	}
}

// honestWriters are files whose footers honest writers wrote, each a
// table: DuckDB's (several row groups, every type it writes statistics
// for) and, with the interop Python, pyarrow's (row groups of uneven
// sizes). Their claims hold, so claimsHold must pass them all.
var honestDuckDB = map[string]string{
	"duck_types": `SELECT i::BIGINT AS id, (i - 2500)::INTEGER AS neg, (i % 7)::TINYINT AS tiny, (i % 300)::SMALLINT AS small,
		(i * 1000)::UBIGINT + 18446744073700000000::UBIGINT AS ubig, (i % 250)::UTINYINT AS utiny, (i * 7)::UINTEGER + 4294900000::UINTEGER AS uint,
		(i / 3.0)::FLOAT AS f32, CASE WHEN i = 10 THEN '-0.0'::DOUBLE WHEN i = 11 THEN 'inf'::DOUBLE ELSE (i - 2000) / 7.0 END AS f64,
		CASE WHEN i % 5 = 0 THEN NULL ELSE 'é' || i END AS s, CASE WHEN i % 3 = 0 THEN '' ELSE '日本' || (i % 10) END AS uni,
		((i - 2500) / 10)::DECIMAL(4,1) AS d4, (i * 1.25 - 3000)::DECIMAL(18,2) AS d18, ((i - 2500) * 1234567890123.456789)::DECIMAL(30,6) AS d30,
		DATE '1960-01-01' + i::INTEGER AS dt, TIMESTAMP '1969-12-31 23:00:00' + to_microseconds(i * 1234567) AS ts,
		TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_seconds(i) AS tstz, (TIMESTAMP '2020-01-01' + to_microseconds(i))::TIMESTAMP_NS AS tsns,
		(TIMESTAMP '2020-01-01' + to_seconds(i))::TIMESTAMP_MS AS tsms,
		TIME '00:00:00' + to_microseconds(i * 1000001) AS tm, i % 2 = 0 AS b, encode(chr((i % 500 + 1)::INTEGER)) AS bl,
		CASE WHEN i % 2 = 0 THEN NULL ELSE uuid() END AS u, NULL::BIGINT AS allnull, NULL::VARCHAR AS allnull_s,
		{'a': i, 'b': {'c': 'x' || (i % 13)}, 'n': CASE WHEN i % 4 = 0 THEN NULL ELSE i END} AS st,
		CASE WHEN i % 9 = 0 THEN NULL ELSE {'a': i} END AS nullst,
		[i, NULL, i + 1] AS l, map([i::VARCHAR], [i]) AS m, 'nan'::DOUBLE AS allnan,
		CASE WHEN i % 100 = 0 THEN 'nan'::DOUBLE ELSE i END AS somenan, (['a', 'b', 'c'])[i % 3 + 1]::ENUM('a', 'b', 'c') AS e
		FROM range(1, 5001) r(i)`,
	"duck_one_group": `SELECT 1::BIGINT AS x, NULL::INTEGER AS y, 'a' AS s`,
	"duck_empty":     `SELECT 1::BIGINT AS x, 'a' AS s WHERE false`,
}

const honestPyArrow = `
import sys, decimal, datetime, uuid
import pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
def rows(lo, hi):
    r = range(lo, hi)
    return pa.table({
        "i8": pa.array([i % 100 - 50 for i in r], pa.int8()),
        "i64": pa.array([(i - 500) * 10**12 for i in r], pa.int64()),
        "u8": pa.array([i % 256 for i in r], pa.uint8()),
        "u32": pa.array([2**32 - 1 - i for i in r], pa.uint32()),
        "u64": pa.array([2**64 - 1 - i for i in r], pa.uint64()),
        "f32": pa.array([float(i) / 3 - 100 for i in r], pa.float32()),
        "f64": pa.array([-0.0 if i % 50 == 0 else (float('inf') if i == 7 else i / 7 - 50) for i in r], pa.float64()),
        "s": pa.array([None if i % 4 == 0 else ("" if i % 4 == 1 else "é😀" + str(i)) for i in r], pa.string()),
        "ls": pa.array(["z" * (i % 5) for i in r], pa.large_string()),
        "bin": pa.array([bytes([i % 256, 255 - i % 256]) for i in r], pa.binary()),
        "fbin": pa.array([bytes([i % 256] * 4) for i in r], pa.binary(4)),
        "d9": pa.array([decimal.Decimal(i - 500) / 100 for i in r], pa.decimal128(9, 2)),
        "d18": pa.array([decimal.Decimal(i - 500) * 1000000 + decimal.Decimal("0.125") for i in r], pa.decimal128(18, 3)),
        "d38": pa.array([decimal.Decimal(i - 500) * 10**30 for i in r], pa.decimal128(38, 0)),
        "date": pa.array([datetime.date(1950, 1, 1) + datetime.timedelta(days=i * 17) for i in r], pa.date32()),
        "ts_ms": pa.array([i * 86400123 - 10**11 for i in r], pa.timestamp("ms")),
        "ts_us": pa.array([i * 86400123457 for i in r], pa.timestamp("us", tz="UTC")),
        "ts_ns": pa.array([i * 86400123456789 for i in r], pa.timestamp("ns")),
        "t_ms": pa.array([i * 1001 % 86400000 for i in r], pa.time32("ms")),
        "t_us": pa.array([i * 1000001 % 86400000000 for i in r], pa.time64("us")),
        "t_ns": pa.array([i * 1000000007 % 86400000000000 for i in r], pa.time64("ns")),
        "b": pa.array([i % 3 == 0 for i in r], pa.bool_()),
        "dict": pa.array(["k" + str(i % 4) for i in r]).dictionary_encode(),
        "allnull": pa.array([None for i in r], pa.int32()),
        "l": pa.array([[i, None] for i in r], pa.list_(pa.int64())),
        "st": pa.array([{"a": i, "b": None if i % 2 else "x"} for i in r], pa.struct([("a", pa.int64()), ("b", pa.string())])),
    })
w = pq.ParquetWriter(out, rows(0, 1).schema)
for lo, hi in [(0, 700), (700, 1000), (1000, 1001), (1001, 2500)]:
    w.write_table(rows(lo, hi))
w.close()
`

// TestHonestStatisticsPass: the files honest writers write, with several
// row groups, every type, nulls, empty strings, unicode, -0.0 and
// infinities, pass claimsHold unchanged.
func TestHonestStatisticsPass(t *testing.T) {
	src := newDirSource(t)
	var tables []Table
	var checks []Check
	add := func(name string) {
		tables = append(tables, Table{Name: name, Path: name + "/"})
		checks = append(checks, Check{Name: name, Kind: KindRowCount, Table: name, Min: f64(0)})
	}
	for name, q := range honestDuckDB {
		dst := filepath.Join(src.root, "b", name, "a.parquet")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		copySQL(t, "COPY ("+q+") TO "+quoteLiteral(dst)+" (FORMAT parquet, ROW_GROUP_SIZE 2048)")
		add(name)
	}
	if python, err := testPython(); err != nil {
		t.Logf("pyarrow's files left out: %v", err)
	} else {
		dst := filepath.Join(src.root, "b", "pyarrow", "a.parquet")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(python, "-c", honestPyArrow, dst).CombinedOutput(); err != nil {
			t.Fatalf("pyarrow: %v\n%s", err, out)
		}
		add("pyarrow")
	}
	if err := os.MkdirAll(filepath.Join(src.root, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: tables, Checks: checks}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("%s: %s %s %s, want pass: honest statistics", c.Name, c.Status, c.Observed, c.Message)
		}
	}
}

// narrower is b, a claimed max of leaf l, made the next smaller value of
// the same length, or nil where there is none.
func narrower(l leafColumn, b []byte) []byte {
	b = bytes.Clone(b)
	switch l.kind {
	case claimBool:
		if len(b) != 1 || b[0] != 1 {
			return nil
		}
		b[0] = 0
	case claimFloat:
		f := math.Float32frombits(binary.LittleEndian.Uint32(b))
		binary.LittleEndian.PutUint32(b, math.Float32bits(math.Nextafter32(f, float32(math.Inf(-1)))))
	case claimDouble:
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		binary.LittleEndian.PutUint64(b, math.Float64bits(math.Nextafter(f, math.Inf(-1))))
	case claimBytes, claimUUID:
		k := len(b) - 1
		for k >= 0 && b[k] == 0 {
			k--
		}
		if k < 0 {
			return nil
		}
		b[k]--
	case claimDecimal:
		if l.physical == ptFixed || l.physical == ptByteArray { // big-endian
			for k := len(b) - 1; k >= 0; k-- {
				b[k]--
				if b[k] != 0xff {
					break
				}
			}
			return b
		}
		fallthrough
	default: // little-endian integers
		step := uint64(1)
		if l.kind == claimTime && l.unit == 3 {
			step = 2000 // compared to the microsecond
		}
		if len(b) == 4 {
			binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)-uint32(step))
		} else {
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)-step)
		}
	}
	return b
}

// TestEveryTypesNarrowerMaxIsRefused forges, in the honest files of
// TestHonestStatisticsPass, each checked leaf's max_value in one row group
// to the next smaller value (in place, so only that claim changes): every
// one must be refused, naming that row group and column.
func TestEveryTypesNarrowerMaxIsRefused(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, name := range []string{"duck_types"} {
		files[name] = filepath.Join(dir, name+".parquet")
		copySQL(t, "COPY ("+honestDuckDB[name]+") TO "+quoteLiteral(files[name])+" (FORMAT parquet, ROW_GROUP_SIZE 2048)")
	}
	if python, err := testPython(); err == nil {
		files["pyarrow"] = filepath.Join(dir, "pyarrow.parquet")
		if out, err := exec.Command(python, "-c", honestPyArrow, files["pyarrow"]).CombinedOutput(); err != nil {
			t.Fatalf("pyarrow: %v\n%s", err, out)
		}
	}
	src := newBatchSource(t)
	e := newEngine(t, src, "")
	n := 0
	for name, f := range files {
		honest, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lo, _ := footer(t, honest)
		buf := honest[lo : len(honest)-8]
		leaves, groups, err := decodeFooterClaims(buf)
		if err != nil {
			t.Fatal(err)
		}
		for k, l := range leaves {
			if l.repeated {
				continue
			}
			g := len(groups) - 1 // the last row group, the others' claims left true
			c := groups[g].chunks[k]
			if c.maxValue == nil {
				continue
			}
			forged := narrower(l, c.maxValue)
			if forged == nil {
				continue
			}
			b := bytes.Clone(honest)
			at := lo + cap(buf) - cap(c.maxValue) // the claim is a slice of buf
			copy(b[at:], forged)
			ref := fmt.Sprintf("%s-%d", name, k)
			dst := filepath.Join(src.root, ref, "t", "a.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: ref, BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(0)}}}})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("row group %d, column %q: its footer claims a max_value", g, l.name())
			if got := rep.Checks[0]; rep.Passed || !strings.Contains(got.Message, want) {
				t.Errorf("%s, %s's max_value %x forged to %x: passed %v (%s), want refused: %s", name, l.name(), c.maxValue, forged, rep.Passed, got.Message, want)
			}
			n++
		}
	}
	t.Logf("%d forged claims refused", n)
}

// TestUnreadFooterClaimsAreRefused: a footer the Go reader gives up on (4
// MiB of key-value metadata here) whose statistics DuckDB finds cannot be
// compared: the file is refused, naming it.
func TestUnreadFooterClaimsAreRefused(t *testing.T) {
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	copySQL(t, "COPY (SELECT i::BIGINT AS x FROM range(10) r(i)) TO "+quoteLiteral(dst)+
		" (FORMAT parquet, KV_METADATA {pad: repeat('x', 5000000)})")
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := footer(t, b); hi-lo <= footerMaxBytes {
		t.Fatalf("footer of %d bytes, want over %d", hi-lo, footerMaxBytes)
	}
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	// readerIndexes refuses it first: any footer the Go reader gives up on
	// (TestReview11FootersTheGoReaderGivesUpOnAreRefused).
	if got := rep.Checks[0]; rep.Passed || !strings.Contains(got.Message, "file t/a.parquet: its footer holds statistics lakewap cannot read") &&
		!strings.Contains(got.Message, "file t/a.parquet has a footer the audit does not read") {
		t.Errorf("passed %v (%s %s), want refused: a footer or statistics lakewap cannot read", rep.Passed, got.Observed, got.Message)
	}
}

// pyarrowSkips shows, with the interop Python, that pyarrow.dataset
// reading file with filter counts no row where filtering its full read
// counts one. Skipped without it.
func pyarrowSkips(t *testing.T, file, filter string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Logf("pyarrow not shown: %v", err)
		return
	}
	script := fmt.Sprintf(`
import sys, pyarrow.dataset as ds, pyarrow.compute as pc
f = %s
d = ds.dataset(sys.argv[1])
print(d.to_table(filter=f).num_rows, d.to_table().filter(f).num_rows)
`, filter)
	out, err := exec.Command(python, "-c", script, file).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	var got, want int
	if _, err := fmt.Sscan(string(out), &got, &want); err != nil || want != 1 || got == want {
		t.Fatalf("pyarrow.dataset with filter %s reads %d rows, filtering its full read %d (%s): want them to differ", filter, got, want, out)
	}
	t.Logf("pyarrow.dataset with filter %s reads %d rows, filtering its full read %d", filter, got, want)
}

// TestNaNUnderAMinMaxClaimIsRefused: pyarrow writes a float row group's
// min and max leaving NaN out; DuckDB orders NaN above every number, so
// with its default settings WHERE x > 5 skips the row group and misses
// the NaN row its full scan reads. Such a file is refused, naming the
// NaN; DuckDB's own writer claims no min or max there (TestHonestStatisticsPass).
func TestNaNUnderAMinMaxClaimIsRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("pyarrow not at hand: %v", err)
	}
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"x": pa.array([1.0, float("nan"), 2.0])}), sys.argv[1])
`
	if out, err := exec.Command(python, "-c", script, dst).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	q := "SELECT count(*) FROM FILE WHERE x > 5"
	if pruned, scanned := readerCount(t, dst, q, true), readerCount(t, dst, q, false); pruned == scanned {
		t.Fatalf("%s: DuckDB with default settings counts %d, the full scan %d: want them to differ", q, pruned, scanned)
	}
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The page headers' statistics (readerIndexes) are checked first and
	// claim the same; either refusal names the NaN.
	if got := rep.Checks[0]; rep.Passed || !strings.Contains(strings.ToLower(got.Message), "nan") {
		t.Errorf("passed %v (%s %s), want refused naming the NaN", rep.Passed, got.Observed, got.Message)
	}
	// The row group's claim alone, as claimsHold compares it.
	var b8 [8]byte
	binary.LittleEndian.PutUint64(b8[:], math.Float64bits(2))
	leaf := leafColumn{path: []string{"x"}, kind: claimDouble, physical: ptDouble}
	err = chunkHolds(leaf, chunkClaims{maxValue: b8[:], nullCount: 0, hasNullCount: true}, 3, []any{int64(3), 1.0, 2.0, int64(1)})
	if err == nil || !strings.Contains(err.Error(), "its footer claims a max_value, the data holds 1 NaN") {
		t.Errorf("a max claim over a NaN: %v, want refused naming the NaN", err)
	}
	if err := chunkHolds(leaf, chunkClaims{nullCount: 0, hasNullCount: true}, 3, []any{int64(3), 1.0, 2.0, int64(1)}); err != nil {
		t.Errorf("no min or max claimed over a NaN: %v, want it to hold", err)
	}
}
