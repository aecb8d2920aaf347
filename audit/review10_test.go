package audit

import (
	"strings"
	"testing"
)

// deltaRSStatsParsed is the head of a delta-rs script whose
// stats_parsed(out, parse, st) checkpoints the table at out and gives
// every add of the checkpoint the stats_parsed parse(its JSON stats), of
// type st, the JSON stats kept as delta-rs wrote them, and whose
// claim(out, bound, value) makes the adds of the table's first commit
// claim value as column t's bound ("minValues" or "maxValues").
const deltaRSStatsParsed = `
import sys, os, glob, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
def claim(out, bound, value):
    c0 = os.path.join(out, "_delta_log", "00000000000000000000.json")
    lines = []
    for ln in open(c0).read().splitlines():
        a = json.loads(ln)
        if "add" in a:
            s = json.loads(a["add"]["stats"])
            s[bound]["t"] = value
            a["add"]["stats"] = json.dumps(s)
        lines.append(json.dumps(a))
    open(c0, "w").write("\n".join(lines) + "\n")
def stats_parsed(out, parse, st):
    DeltaTable(out).create_checkpoint()
    cp = glob.glob(os.path.join(out, "_delta_log", "*.checkpoint.parquet"))[0]
    t = pq.read_table(cp)
    add = t.column("add").combine_chunks()
    sp = [None if r is None else parse(json.loads(r["stats"])) for r in add.to_pylist()]
    names = [add.type.field(i).name for i in range(add.type.num_fields)]
    fields = [add.field(i) for i in range(len(names))]
    t = t.set_column(t.schema.get_field_index("add"), "add",
        pa.StructArray.from_arrays(fields + [pa.array(sp, st)], names=names + ["stats_parsed"], mask=add.is_null()))
    pq.write_table(t, cp)
`

// deltaRSNarrowStatsParsed writes a Delta table with delta-rs (x a DOUBLE
// holding 3.00000001 in the first file) and its checkpoint of version 1,
// then gives every add of the checkpoint a stats_parsed whose minValues
// and maxValues are of a narrower type than the column, FLOAT, the JSON
// stats kept as delta-rs wrote them. The JSON read into FLOAT is the
// stats_parsed (3.00000001 rounds to 3.0), but delta-rs skips the file by
// the FLOAT's 3.0 for x = 3.00000001.
const deltaRSNarrowStatsParsed = deltaRSStatsParsed + `
out = sys.argv[1]
write_deltalake(out, pa.table({"x": pa.array([1.0, 2.0, 3.00000001])}))
write_deltalake(out, pa.table({"x": pa.array([1.5])}), mode="append")
st = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("x", pa.float32())])),
                ("maxValues", pa.struct([("x", pa.float32())])), ("nullCount", pa.struct([("x", pa.int64())]))])
stats_parsed(out, lambda s: s, st)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestReview10StatsParsedOfANarrowerTypeIsRefused: a checkpoint's
// stats_parsed whose claims are of a narrower type than the column (FLOAT
// for a DOUBLE) equals the JSON stats read into its own types, since the
// JSON's 3.00000001 rounds to the FLOAT 3.0; delta-rs skips the file
// holding 3.00000001 for x = 3.00000001 by it. lakewap compared the JSON
// with the stats_parsed in the stats_parsed's types and passed the table.
func TestReview10StatsParsedOfANarrowerTypeIsRefused(t *testing.T) {
	src, dir := deltaRSTable(t, deltaRSNarrowStatsParsed)
	deltaRSSkips(t, dir, `[("x", "=", 3.00000001)]`)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(4), Max: f64(4)})
	wantRefused(t, rep, "stats_parsed")
}

// deltaRSOffsetStatsParsed writes a Delta table with delta-rs (t a UTC
// timestamp holding 15:00Z in the first file), whose first commit states
// that file's max as the same instant at -05:00 ("10:00:00.000-05:00"),
// and its checkpoint of version 1 with a stats_parsed of TIMESTAMP
// (without time zone) claiming the wall-clock time 10:00 (DuckDB's
// from_json reads the JSON so, dropping the offset).
const deltaRSOffsetStatsParsed = deltaRSStatsParsed + `
import datetime
out = sys.argv[1]
U = datetime.timezone.utc
ts = lambda h: datetime.datetime(2024, 1, 1, h, tzinfo=U)
write_deltalake(out, pa.table({"t": pa.array([ts(1), ts(15)], pa.timestamp("us", "UTC"))}))
write_deltalake(out, pa.table({"t": pa.array([ts(2)], pa.timestamp("us", "UTC"))}), mode="append")
claim(out, "maxValues", "2024-01-01T10:00:00.000-05:00")  # the same instant as 15:00Z
def naive(v):
    d = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    return d.replace(tzinfo=None)  # drops the offset, as DuckDB's from_json into TIMESTAMP does
st = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("t", pa.timestamp("us"))])),
                ("maxValues", pa.struct([("t", pa.timestamp("us"))])), ("nullCount", pa.struct([("t", pa.int64())]))])
stats_parsed(out, lambda s: {"numRecords": s["numRecords"], "minValues": {"t": naive(s["minValues"]["t"])}, "maxValues": {"t": naive(s["maxValues"]["t"])}, "nullCount": s["nullCount"]}, st)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestReview10StatsParsedTimestampWithoutZoneIsRefused: a stats_parsed of
// TIMESTAMP for a UTC timestamp column equals the JSON stats read into it
// where the JSON names an offset (from_json drops it: 10:00-05:00 reads
// 10:00), and delta-rs casts it to UTC and skips the file holding 15:00Z
// for t = 15:00Z. statsParsedTypes took TIMESTAMP and TIMESTAMPTZ alike.
func TestReview10StatsParsedTimestampWithoutZoneIsRefused(t *testing.T) {
	src, dir := deltaRSTable(t, deltaRSOffsetStatsParsed)
	deltaRSSkips(t, dir, `[("t", "=", __import__("datetime").datetime(2024, 1, 1, 15, tzinfo=__import__("datetime").timezone.utc))]`)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(3), Max: f64(3)})
	wantRefused(t, rep, "stats_parsed")
}

// deltaRSNtzOffsetStats writes a Delta table with delta-rs (t a
// timestamp_ntz holding 01:00 and 15:00 in its first file, 02:00 in its
// second) whose first commit claims that file's min as
// "2024-01-01T01:00:00.000-05:00".
const deltaRSNtzOffsetStats = deltaRSStatsParsed + `
import datetime
out = sys.argv[1]
ts = lambda h: datetime.datetime(2024, 1, 1, h)
write_deltalake(out, pa.table({"t": pa.array([ts(1), ts(15)], pa.timestamp("us"))}))
write_deltalake(out, pa.table({"t": pa.array([ts(2)], pa.timestamp("us"))}), mode="append")
claim(out, "minValues", "2024-01-01T01:00:00.000-05:00")
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestReview10NtzStatsNamingAnOffsetAreRefused: a timestamp_ntz column's
// stats claim naming an offset is read by DuckDB as the wall-clock time
// (the offset dropped: 01:00, which the data holds) and by delta-rs
// converted (06:00), by which it skips the file holding 01:00 for
// t = 01:00. lakewap compared DuckDB's reading and passed the table.
func TestReview10NtzStatsNamingAnOffsetAreRefused(t *testing.T) {
	src, dir := deltaRSTable(t, deltaRSNtzOffsetStats)
	deltaRSSkips(t, dir, `[("t", "=", __import__("datetime").datetime(2024, 1, 1, 1))]`)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(3), Max: f64(3)})
	wantRefused(t, rep, "offset")
}

// TestReview10DateStatsWithATimeAreRefused: a date column's stats claim
// with a time and an offset ("2024-01-02T23:00:00-05:00") is the date
// 2024-01-02 to DuckDB's CAST, which the data holds, and a later day to
// delta-rs, which skipped the file holding 2024-01-02 for t = 2024-01-02.
func TestReview10DateStatsWithATimeAreRefused(t *testing.T) {
	script := strings.NewReplacer(`ts = lambda h: datetime.datetime(2024, 1, 1, h)`, `ts = lambda h: datetime.date(2024, 1, h)`,
		`pa.timestamp("us")`, `pa.date32()`, `[ts(1), ts(15)]`, `[ts(2), ts(5)]`, `[ts(2)]`, `[ts(3)]`, `"2024-01-01T01:00:00.000-05:00"`, `"2024-01-02T23:00:00-05:00"`).Replace(deltaRSNtzOffsetStats)
	src, dir := deltaRSTable(t, script)
	deltaRSSkips(t, dir, `[("t", "=", __import__("datetime").date(2024, 1, 2))]`)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(3), Max: f64(3)})
	wantRefused(t, rep, "date")
}

// TestReview10TimestampStatsWithoutSecondsAreRefused: a timestamp
// column's stats claim of a time without seconds ("2024-01-01T01:00") is
// 01:00 to DuckDB's CAST, which the data holds, and delta-rs skipped the
// file holding 01:00 for t = 01:00 by it, UTC or timestamp_ntz alike.
func TestReview10TimestampStatsWithoutSecondsAreRefused(t *testing.T) {
	for _, c := range []struct{ name, arrow, tz, claim string }{
		{"utc", `pa.timestamp("us", "UTC")`, ", tzinfo=__import__(\"datetime\").timezone.utc", "2024-01-01T01:00"},
		{"ntz", `pa.timestamp("us")`, "", "2024-01-01T01:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := strings.NewReplacer(`datetime.datetime(2024, 1, 1, h)`, `datetime.datetime(2024, 1, 1, h`+c.tz+`)`,
				`pa.timestamp("us")`, c.arrow, `"2024-01-01T01:00:00.000-05:00"`, `"`+c.claim+`"`).Replace(deltaRSNtzOffsetStats)
			src, dir := deltaRSTable(t, script)
			deltaRSSkips(t, dir, `[("t", "=", __import__("datetime").datetime(2024, 1, 1, 1`+c.tz+`))]`)
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(3), Max: f64(3)})
			wantRefused(t, rep, "seconds")
		})
	}
}
