package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// reader64bTable is a Delta table under prefix: version 0 on main declares
// x of type decl (a Delta type's JSON) beside id long and adds main's file;
// the branch b1's version 1 adds batch's file, its add stating stats when
// stats is set (a JSON object's text, as Delta writers put it in "stats").
type reader64bTable struct {
	decl, main, batch, stats string
}

func (c reader64bTable) build(t *testing.T, src *dirSource, prefix string) {
	t.Helper()
	p := &probeTable{src: src, prefix: prefix}
	fields := []string{deltaChar60Field("id", `"long"`, ""), deltaChar60Field("x", c.decl, "")}
	p.file(t, "part-0.parquet", c.main)
	p.commit(t, 0, deltaProtocol(1), probeMeta(fields, nil, nil), p.add(t, "part-0.parquet", "part-0.parquet", nil, nil))
	src.branch(t, "main", "b1")
	src.write(t, "b1", prefix+"/part-1.parquet", c.batch)
	st, err := os.Stat(filepath.Join(src.root, "b1", filepath.FromSlash(prefix), "part-1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]any{"path": "part-1.parquet", "partitionValues": map[string]any{}, "size": st.Size(), "modificationTime": 1, "dataChange": true}
	if c.stats != "" {
		a["stats"] = c.stats
	}
	add, _ := json.Marshal(map[string]any{"add": a})
	writeDeltaCommit(t, src, "b1", prefix, 1, string(add))
}

// reader64bCases are the Delta ports of review 62's type widening
// (TestReader62SparkReadsAnInt32LeafByAWiderFilesType: a file's INT32
// leaf under a wider declared type, here the log's schema rather than
// the first file's) and of the stats differentials (an add whose stats
// exclude the rows its file holds: Delta readers skip the file by them).
// spark is what delta-spark 4.4.0 reads of x (sorted), then of x under
// the filter x < 10; refused says the audit must refuse the table.
var reader64bCases = []struct {
	name    string
	table   reader64bTable
	refused bool
	// spark is what delta-spark 4.4.0 reads with its vectorized Parquet
	// reader: x, then x under x < 10, then id under x IS NULL, each
	// sorted; "ERROR" where the read fails. sparkRow is the row-based
	// reader's when it differs.
	spark, sparkRow string
	noMax           bool // the range has no max (a value Spark reads below 0, DuckDB above)
}{
	{"long_then_decimal", reader64bTable{decl: `"long"`, main: "SELECT 1::BIGINT AS id, 3::BIGINT AS x", batch: "SELECT 2::BIGINT AS id, 4.0::DECIMAL(9,1) AS x"}, true, "3 | 40 / 3 / ", "", false},
	{"double_then_decimal", reader64bTable{decl: `"double"`, main: "SELECT 1::BIGINT AS id, 3.5::DOUBLE AS x", batch: "SELECT 2::BIGINT AS id, 4.5::DECIMAL(9,1) AS x"}, true, "3.5 | 45.0 / 3.5 / ", "", false},
	{"double_then_uinteger", reader64bTable{decl: `"double"`, main: "SELECT 1::BIGINT AS id, 3.0::DOUBLE AS x", batch: "SELECT 2::BIGINT AS id, 4294967295::UINTEGER AS x"}, true, "-1.0 | 3.0 / -1.0 | 3.0 / ", "", true},
	{"long_then_integer", reader64bTable{decl: `"long"`, main: "SELECT 1::BIGINT AS id, 3::BIGINT AS x", batch: "SELECT 2::BIGINT AS id, 4::INTEGER AS x"}, false, "3 | 4 / 3 | 4 / ", "", false},
	{"double_then_integer", reader64bTable{decl: `"double"`, main: "SELECT 1::BIGINT AS id, 3.0::DOUBLE AS x", batch: "SELECT 2::BIGINT AS id, 4::INTEGER AS x"}, false, "3.0 | 4.0 / 3.0 | 4.0 / ", "", false},
	{"integer_then_bigint", reader64bTable{decl: `"integer"`, main: "SELECT 1::BIGINT AS id, 3::INTEGER AS x", batch: "SELECT 2::BIGINT AS id, 4::BIGINT AS x"}, true, "ERROR", "", false},
	{"decimal_then_decimal_scale", reader64bTable{decl: `"decimal(9,1)"`, main: "SELECT 1::BIGINT AS id, 3.0::DECIMAL(9,1) AS x", batch: "SELECT 2::BIGINT AS id, 4.00::DECIMAL(9,2) AS x"}, true, "ERROR", "3.0 | 4.0 / 3.0 | 4.0 / ", false},
	{"stats_exclude_rows", reader64bTable{decl: `"long"`, main: "SELECT 1::BIGINT AS id, 3::BIGINT AS x", batch: "SELECT 2::BIGINT AS id, 4::BIGINT AS x",
		stats: `{"numRecords":1,"minValues":{"id":2,"x":100},"maxValues":{"id":2,"x":100},"nullCount":{"id":0,"x":0}}`}, true, "3 | 4 / 3 / ", "", false},
	{"stats_honest", reader64bTable{decl: `"long"`, main: "SELECT 1::BIGINT AS id, 3::BIGINT AS x", batch: "SELECT 2::BIGINT AS id, 4::BIGINT AS x",
		stats: `{"numRecords":1,"minValues":{"id":2,"x":4},"maxValues":{"id":2,"x":4},"nullCount":{"id":0,"x":0}}`}, false, "3 | 4 / 3 | 4 / ", "", false},
	{"stats_nullcount_lies", reader64bTable{decl: `"long"`, main: "SELECT 1::BIGINT AS id, 3::BIGINT AS x", batch: "SELECT 2::BIGINT AS id, NULL::BIGINT AS x",
		stats: `{"numRecords":1,"minValues":{"id":2},"maxValues":{"id":2},"nullCount":{"id":0,"x":0}}`}, true, "3 | None / 3 / ", "", false},
}

// TestReader64bDeltaTypesAndStatsAudit: the audit's verdict on each of
// reader64bCases's tables under a range of x within 0 to 10 and a
// not_null of x.
func TestReader64bDeltaTypesAndStatsAudit(t *testing.T) {
	for _, c := range reader64bCases {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			c.table.build(t, src, "gold/events")
			rng := Check{Name: "range", Kind: KindRange, Table: "events", Column: "x", Min: f64(0), Max: f64(10)}
			if c.noMax {
				rng.Max = nil
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, rng,
				Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(1)})
			var msgs []string
			for _, r := range rep.Checks {
				msgs = append(msgs, string(r.Status)+" "+r.Message)
			}
			t.Logf("passed=%v: %s", rep.Passed, strings.Join(msgs, "; "))
			if c.refused && (rep.Passed || rep.Checks[0].Status != schemas.StatusError ||
				!strings.Contains(rep.Checks[0].Message, "part-1.parquet") || !strings.Contains(rep.Checks[0].Message, `"x"`)) {
				t.Errorf("delta-spark reads it otherwise than the audit: want it refused")
			}
			if !c.refused && !rep.Passed {
				t.Errorf("delta-spark reads it as the audit does: want it passed")
			}
		})
	}
}

// TestReader64bDeltaSparkReadsTypesAndStats: what delta-spark reads of
// reader64bCases's tables.
func TestReader64bDeltaSparkReadsTypesAndStats(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := deltaSparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_DELTASPARK_PYTHON (scripts/deltasparkenv.sh installs delta-spark)", err)
	}
	var dirs []string
	for _, c := range reader64bCases {
		src := &dirSource{root: filepath.Join(t.TempDir(), c.name), downloads: map[string]int{}, sums: map[string]string{}}
		c.table.build(t, src, "t")
		dirs = append(dirs, filepath.Join(src.root, "b1", "t"))
	}
	const read = deltaSparkSession + `for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for d in sys.argv[1:]:
        name = os.path.basename(os.path.dirname(os.path.dirname(d)))
        try:
            df = s.read.format("delta").load(d)
            a = " | ".join(sorted(str(r.x) for r in df.select("x").collect()))
            f = " | ".join(sorted(str(r.x) for r in df.where("x < 10").select("x").collect()))
            n = " | ".join(sorted(str(r.id) for r in df.where("x IS NULL").select("id").collect()))
            print(vec + "\t" + name + "\t" + a + " / " + f + " / " + n)
        except Exception as e:
            print(vec + "\t" + name + "\tERROR " + str(e).replace("\n", " ")[:300])
s.stop()
`
	out, stderr := runPySpark(t, python, read, dirs, "WAREHOUSE="+filepath.Join(t.TempDir(), "wh"))
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
			if strings.HasPrefix(f[2], "ERROR") {
				t.Logf("%s %s: %s", f[0], f[1], f[2])
				f[2] = "ERROR"
			}
			got[f[0]+" "+f[1]] = f[2]
		}
	}
	for _, c := range reader64bCases {
		row := c.sparkRow
		if row == "" {
			row = c.spark
		}
		for vec, w := range map[string]string{"true": c.spark, "false": row} {
			g, ok := got[vec+" "+c.name]
			if !ok {
				t.Fatalf("%s (vectorized %s): no reading:\n%s\n%s", c.name, vec, out, stderr)
			}
			t.Logf("%s (vectorized %s, audit refuses: %v): delta-spark reads %s", c.name, vec, c.refused, g)
			if strings.TrimSpace(g) != strings.TrimSpace(w) { // the last line loses its trailing space
				t.Errorf("%s (vectorized %s): delta-spark reads %q, want %q", c.name, vec, g, w)
			}
		}
	}
}

// reader64bZoneCases: stats claims of a timestamp column (Delta's
// timestamp, adjusted to UTC) with and without an offset. The data file
// part-1.parquet holds 2024-01-01 02:00 UTC; its add claims a min of 01:00
// and a max of 03:00. delta-spark parses a claim with no offset in the
// reader's session time zone: in America/New_York its min is 06:00 UTC,
// and a filter x < 04:00 UTC skips the file. spark is the ids delta-spark
// reads under that filter in UTC, then in America/New_York.
var reader64bZoneCases = []struct {
	name    string
	table   reader64bTable
	refused bool
	spark   string
}{
	{"ts_claims_without_offset", reader64bTable{decl: `"timestamp"`, main: "SELECT 1::BIGINT AS id, TIMESTAMPTZ '2024-01-01 00:00:00+00' AS x", batch: "SELECT 2::BIGINT AS id, TIMESTAMPTZ '2024-01-01 02:00:00+00' AS x",
		stats: `{"numRecords":1,"minValues":{"id":2,"x":"2024-01-01T01:00:00.000"},"maxValues":{"id":2,"x":"2024-01-01T03:00:00.000"},"nullCount":{"id":0,"x":0}}`}, true, "1 | 2 / 1"},
	{"ts_claims_with_offset", reader64bTable{decl: `"timestamp"`, main: "SELECT 1::BIGINT AS id, TIMESTAMPTZ '2024-01-01 00:00:00+00' AS x", batch: "SELECT 2::BIGINT AS id, TIMESTAMPTZ '2024-01-01 02:00:00+00' AS x",
		stats: `{"numRecords":1,"minValues":{"id":2,"x":"2024-01-01T01:00:00.000Z"},"maxValues":{"id":2,"x":"2024-01-01T03:00:00.000+00:00"},"nullCount":{"id":0,"x":0}}`}, false, "1 | 2 / 1 | 2"},
}

// TestReader64bTimestampClaimsWithoutOffsetAudit: the audit's verdict on
// reader64bZoneCases's tables.
func TestReader64bTimestampClaimsWithoutOffsetAudit(t *testing.T) {
	for _, c := range reader64bZoneCases {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			c.table.build(t, src, "gold/events")
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(1)})
			res := rep.Checks[0]
			t.Logf("passed=%v: %s %s", rep.Passed, res.Status, res.Message)
			if c.refused && (rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "part-1.parquet") || !strings.Contains(res.Message, `"x"`)) {
				t.Errorf("delta-spark skips the file by a zone's reading of the claim: want it refused naming the file and the column")
			}
			if !c.refused && !rep.Passed {
				t.Errorf("delta-spark reads the claim as the audit does in every zone: want it passed")
			}
		})
	}
}

// TestReader64bDeltaSparkReadsTimestampClaimsByZone: what delta-spark
// reads of reader64bZoneCases's tables under x < 04:00 UTC, each zone
// reading its own copy (a DeltaLog's state is cached per path).
func TestReader64bDeltaSparkReadsTimestampClaimsByZone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := deltaSparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_DELTASPARK_PYTHON (scripts/deltasparkenv.sh installs delta-spark)", err)
	}
	var args []string
	for _, c := range reader64bZoneCases {
		for _, zone := range []string{"UTC", "America/New_York"} {
			src := &dirSource{root: filepath.Join(t.TempDir(), c.name), downloads: map[string]int{}, sums: map[string]string{}}
			c.table.build(t, src, "t")
			args = append(args, zone+"="+c.name+"="+filepath.Join(src.root, "b1", "t"))
		}
	}
	const read = deltaSparkSession + `for a in sys.argv[1:]:
    zone, name, path = a.split("=", 2)
    s.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = s.read.format("delta").load(path)
        ids = " | ".join(sorted(str(r.id) for r in df.where("x < timestamp'2024-01-01T04:00:00Z'").select("id").collect()))
        print(zone + "\t" + name + "\t" + ids)
    except Exception as e:
        print(zone + "\t" + name + "\tERROR " + str(e).replace("\n", " ")[:300])
s.stop()
`
	out, stderr := runPySpark(t, python, read, args, "WAREHOUSE="+filepath.Join(t.TempDir(), "wh"))
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
			got[f[0]+" "+f[1]] = f[2]
		}
	}
	for _, c := range reader64bZoneCases {
		g := got["UTC "+c.name] + " / " + got["America/New_York "+c.name]
		t.Logf("%s (audit refuses: %v): delta-spark reads ids %s (UTC / America/New_York)", c.name, c.refused, g)
		if g != c.spark {
			t.Errorf("%s: delta-spark reads %q, want %q\n%s\n%s", c.name, g, c.spark, out, stderr)
		}
	}
}
