package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// deltaProbe is one table built to try a Delta protocol feature, read by
// delta-rs and by lakewap: lakewap must read the rows delta-rs reads, or
// refuse the table naming why (refusal).
type deltaProbe struct {
	name    string
	build   func(t *testing.T, p *probeTable)
	refusal string // "" when lakewap must read what delta-rs reads
	// check, when set, is run too: its status must be want.
	check *Check
	want  string
}

// probeTable builds a table under main/<prefix>.
type probeTable struct {
	src    *dirSource
	prefix string
}

func (p *probeTable) dir() string { return filepath.Join(p.src.root, "main", p.prefix) }

// file writes a data file (name as stored) of query's rows.
func (p *probeTable) file(t *testing.T, name, query string) {
	p.src.write(t, "main", p.prefix+"/"+name, query)
}

// add is an add action of the stored file name, named in the log as path,
// with its size; extra fields are merged into the action.
func (p *probeTable) add(t *testing.T, path, name string, parts map[string]any, extra map[string]any) string {
	st, err := os.Stat(filepath.Join(p.dir(), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	if parts == nil {
		parts = map[string]any{}
	}
	a := map[string]any{"path": path, "partitionValues": parts, "size": st.Size(), "modificationTime": 1, "dataChange": true}
	for k, v := range extra {
		a[k] = v
	}
	b, _ := json.Marshal(map[string]any{"add": a})
	return string(b)
}

func (p *probeTable) commit(t *testing.T, version int, actions ...string) {
	writeDeltaCommit(t, p.src, "main", p.prefix, version, actions...)
}

// probeMeta is a metaData action of schema fields (JSON texts), partition
// columns and configuration.
func probeMeta(fields []string, partitions []string, conf map[string]string) string {
	schema := `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
	if partitions == nil {
		partitions = []string{}
	}
	if conf == nil {
		conf = map[string]string{}
	}
	b, _ := json.Marshal(map[string]any{"metaData": map[string]any{"id": "t1", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": schema, "partitionColumns": partitions, "configuration": conf, "createdTime": 1}})
	return string(b)
}

func probeField(name, typ string) string {
	return fmt.Sprintf(`{"name":%q,"type":%q,"nullable":true,"metadata":{}}`, name, typ)
}

var probeIDRegion = []string{probeField("id", "long"), probeField("region", "string")}

// runDeltaProbes builds every probe, reads each with delta-rs (the
// interop Python's deltalake) and with lakewap, and compares.
func runDeltaProbes(t *testing.T, probes []deltaProbe) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newDirSource(t)
	var dirs []string
	for _, pr := range probes {
		p := &probeTable{src: src, prefix: "p_" + pr.name}
		pr.build(t, p)
		dirs = append(dirs, p.dir())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	answers := scriptAnswers[struct {
		Rows  []map[string]any `json:"rows"`
		Error string           `json:"error"`
	}](t, ctx, python, "deltars_rows.py", dirs)
	for i, pr := range probes {
		t.Run(pr.name, func(t *testing.T) {
			name := "p_" + pr.name
			checks := []Check{{Name: "rows", Kind: KindSQL, Table: name, SQL: "SELECT * FROM " + name}}
			if pr.check != nil {
				c := *pr.check
				c.Table = name
				checks = append(checks, c)
			}
			e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2, SampleRows: 1000, MaxReportBytes: 16 << 20,
				MaxSampleValueBytes: 1 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			rep, err := e.Run(context.Background(), Request{Repository: "repo", Ref: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: name, Path: name + "/", Format: FormatDelta}}, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			c, rs := rep.Checks[0], answers[i]
			if rs.Error != "" {
				t.Logf("delta-rs: %s", rs.Error)
			} else {
				t.Logf("delta-rs reads %d rows: %v", len(rs.Rows), canonicalRows(rs.Rows))
			}
			if pr.refusal != "" {
				if c.Status != schemas.StatusError || !strings.Contains(c.Message, pr.refusal) {
					t.Fatalf("lakewap: %s %q %q, want refused naming %q", c.Status, c.Observed, c.Message, pr.refusal)
				}
				t.Logf("refused: %s", c.Message)
				return
			}
			if c.Status == schemas.StatusError {
				t.Fatalf("lakewap refuses (%s) what delta-rs reads", c.Message)
			}
			if rs.Error != "" {
				t.Fatalf("delta-rs fails (%s) where lakewap reads %s", rs.Error, c.Observed)
			}
			var ours []map[string]any
			for _, s := range c.SampleRows {
				var m map[string]any
				if err := json.Unmarshal([]byte(s), &m); err != nil {
					t.Fatal(err)
				}
				ours = append(ours, m)
			}
			if got, want := canonicalRows(sameForms(ours)), canonicalRows(sameForms(rs.Rows)); !slices.Equal(got, want) {
				t.Fatalf("lakewap reads %d rows %v, delta-rs %d rows %v", len(got), got, len(want), want)
			}
			if pr.check != nil {
				if got := rep.Checks[1]; got.Status != pr.want {
					t.Errorf("check %s: %s %q %q, want %s", got.Name, got.Status, got.Observed, got.Message, pr.want)
				}
			}
		})
	}
}

// sameForms writes the timestamps of rows (DuckDB's "2024-01-02
// 03:04:05+00", Python's "2024-01-02T03:04:05+00:00") in one form, and
// decimals (Python's "1.50", DuckDB's 1.5) as numbers.
func sameForms(rows []map[string]any) []map[string]any {
	for _, r := range rows {
		for k, v := range r {
			s, ok := v.(string)
			if !ok {
				continue
			}
			if regexp.MustCompile(`^-?[0-9]+\.[0-9]+$`).MatchString(s) {
				r[k], _ = strconv.ParseFloat(s, 64)
				continue
			}
			for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02T15:04:05.999999-07:00"} {
				if ts, err := time.Parse(layout, s); err == nil {
					r[k] = ts.UTC().Format(time.RFC3339Nano)
				}
			}
			for _, layout := range []string{"2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999"} {
				if ts, err := time.Parse(layout, s); err == nil {
					r[k] = ts.Format("2006-01-02T15:04:05.999999") + " (no zone)"
				}
			}
		}
	}
	return rows
}

// TestDeltaProtocolFeaturesAsDeltaRSReadsThem: Delta protocol features
// and log shapes, each read by delta-rs (deltalake 1.6.6) and lakewap.
// Where lakewap reads the table, it reads delta-rs's rows; otherwise it
// refuses, naming why.
func TestDeltaProtocolFeaturesAsDeltaRSReadsThem(t *testing.T) {
	rows := "SELECT * FROM (VALUES (1::BIGINT, 'xx'), (2, NULL)) v(id, region)"
	ids := "SELECT * FROM (VALUES (1::BIGINT), (2)) v(id)"
	runDeltaProbes(t, []deltaProbe{
		{name: "partition_column_in_file", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", rows)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion, []string{"region"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"region": "eu"}, nil))
		}, refusal: `has a column "region", and "region" is a partition column of the table`},
		{name: "partition_column_in_file_null", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", rows)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion, []string{"region"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"region": nil}, nil))
		}, refusal: `has a column "region", and "region" is a partition column of the table`},
		{name: "column_outside_the_schema", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", rows)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil), p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: `data file p_column_outside_the_schema/a.parquet holds column "region", which is not in the log's schema`},
		{name: "row_tracking_materialized", build: func(t *testing.T, p *probeTable) {
			// Row tracking (a writer feature) keeps row ids in a column of
			// the files that the schema does not have; readers leave it out.
			p.file(t, "a.parquet", `SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT), (2, 11)) v(id, "_row-id-col-1")`)
			p.file(t, "b.parquet", `SELECT 3::BIGINT AS id`)
			p.commit(t, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["rowTracking","domainMetadata"]}}`,
				probeMeta(probeIDRegion[:1], nil, map[string]string{"delta.enableRowTracking": "true",
					"delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1", "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-1"}),
				p.add(t, "a.parquet", "a.parquet", nil, map[string]any{"baseRowId": 10, "defaultRowCommitVersion": 0}),
				p.add(t, "b.parquet", "b.parquet", nil, map[string]any{"baseRowId": 12, "defaultRowCommitVersion": 0}))
		}},
		{name: "row_tracking_materialized_partitioned", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", `SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT), (2, 11)) v(id, "_row-id-col-1")`)
			p.commit(t, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["rowTracking","domainMetadata"]}}`,
				probeMeta(probeIDRegion, []string{"region"}, map[string]string{"delta.enableRowTracking": "true",
					"delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1"}),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"region": "eu"}, map[string]any{"baseRowId": 10, "defaultRowCommitVersion": 0}))
		}},
		{name: "deletion_vectors_enabled_unused", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(3, "deletionVectors"), probeMeta(probeIDRegion[:1], nil, map[string]string{"delta.enableDeletionVectors": "true"}),
				p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: "reader feature deletionVectors"}, // delta-rs 1.6.6 cannot read it either
		{name: "readded_after_remove", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil), p.add(t, "a.parquet", "a.parquet", nil, nil))
			p.commit(t, 1, deltaRemove("a.parquet"))
			p.commit(t, 2, p.add(t, "a.parquet", "a.parquet", nil, nil))
		}},
		{name: "added_again_with_other_partition_value", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion, []string{"region"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"region": "eu"}, nil))
			p.commit(t, 1, p.add(t, "a.parquet", "a.parquet", map[string]any{"region": "us"}, nil))
		}},
		{name: "data_change_false", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT 1::BIGINT AS id")
			p.file(t, "b.parquet", "SELECT 2::BIGINT AS id")
			p.file(t, "c.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, nil), p.add(t, "b.parquet", "b.parquet", nil, nil))
			p.commit(t, 1, `{"remove":{"path":"a.parquet","deletionTimestamp":2,"dataChange":false}}`,
				`{"remove":{"path":"b.parquet","deletionTimestamp":2,"dataChange":false}}`,
				p.add(t, "c.parquet", "c.parquet", nil, map[string]any{"dataChange": false}))
		}},
		{name: "writer_features_only", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 2::BIGINT), (2, 4)) v(id, twice)")
			gen := `{"name":"twice","type":"long","nullable":true,"metadata":{"delta.generationExpression":"id * 2"}}`
			p.commit(t, 0, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":["generatedColumns","checkConstraints","invariants","appendOnly"]}}`,
				probeMeta([]string{probeField("id", "long"), gen}, nil, map[string]string{"delta.constraints.positive": "id > 0", "delta.appendOnly": "true"}),
				p.add(t, "a.parquet", "a.parquet", nil, nil))
		}},
		{name: "column_mapping_none_with_physical_names", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			f := `{"name":"id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}}`
			p.commit(t, 0, deltaProtocol(2), probeMeta([]string{f}, nil, map[string]string{"delta.columnMapping.mode": "none"}),
				p.add(t, "a.parquet", "a.parquet", nil, nil))
		}},
		{name: "column_mapping_name", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 7::BIGINT), (2, 8)) v(id, \"col-1\")")
			f := `{"name":"id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}}`
			p.commit(t, 0, deltaProtocol(2), probeMeta([]string{f}, nil, map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}),
				p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: "column mapping mode name"},
		{name: "type_widening", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT * FROM (VALUES (1::INTEGER), (2)) v(id)")
			f := `{"name":"id","type":"long","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"integer","toType":"long"}]}}`
			p.commit(t, 0, deltaProtocol(3, "typeWidening"), probeMeta([]string{f}, nil, nil), p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: "reader feature typeWidening"},
		{name: "path_with_plus", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a+b.parquet", ids)
			p.file(t, "c d.parquet", "SELECT 3::BIGINT AS id")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a+b.parquet", "a+b.parquet", nil, nil), p.add(t, "c%20d.parquet", "c d.parquet", nil, nil))
		}},
		{name: "path_with_encoded_plus", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a+b.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil), p.add(t, "a%2Bb.parquet", "a+b.parquet", nil, nil))
		}},
		{name: "deltalake_partitions", build: func(t *testing.T, p *probeTable) {
			deltaRSWrites(t, p.dir(), `
write_deltalake(out, pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()),
    "region": pa.array(["a/b c", None, "eu", "ü%=x", ""])}), partition_by=["region"],
    configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
write_deltalake(out, pa.table({"id": pa.array([6], pa.int64()), "region": pa.array(["eu"])}), partition_by=["region"], mode="append")
DeltaTable(out).create_checkpoint()
`)
		}, check: &Check{Name: "region", Kind: KindNotNull, Column: "region"}, want: schemas.StatusFail},
		{name: "deltalake_partitionvalues_parsed_forged", build: func(t *testing.T, p *probeTable) {
			// delta-rs reads partitionValues, not partitionValues_parsed.
			deltaRSWrites(t, p.dir(), `
write_deltalake(out, pa.table({"id": pa.array([1, 2], pa.int64()), "region": pa.array(["eu", "us"])}), partition_by=["region"],
    configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
DeltaTable(out).create_checkpoint()
cp = glob.glob(os.path.join(out, "_delta_log", "*.checkpoint.parquet"))[0]
t = pq.read_table(cp)
add = t.column("add").combine_chunks()
names = [add.type.field(i).name for i in range(add.type.num_fields)]
i = names.index("partitionValues_parsed")
forged = pa.array([None if x is None else {"region": "zz"} for x in add.field(i).to_pylist()], add.type.field(i).type)
fields = [forged if n == "partitionValues_parsed" else add.field(j) for j, n in enumerate(names)]
pq.write_table(t.set_column(t.schema.get_field_index("add"), "add", pa.StructArray.from_arrays(fields, names=names, mask=add.is_null())), cp)
`)
		}},
		{name: "action_name_in_other_case", build: func(t *testing.T, p *probeTable) {
			// Go's encoding/json matches keys in any case, serde (delta-rs)
			// in one: "Remove" is an unknown action to delta-rs.
			p.file(t, "a.parquet", ids)
			p.file(t, "b.parquet", "SELECT NULL::BIGINT AS id")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, nil), p.add(t, "b.parquet", "b.parquet", nil, nil))
			p.commit(t, 1, `{"Remove":{"path":"b.parquet","deletionTimestamp":2,"dataChange":true}}`)
		}, refusal: `key "Remove" is "remove" in another case`},
		{name: "field_name_in_other_case", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.file(t, "b.parquet", "SELECT NULL::BIGINT AS id")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, nil), p.add(t, "b.parquet", "b.parquet", nil, nil))
			p.commit(t, 1, `{"remove":{"path":"a.parquet","PATH":"b.parquet","deletionTimestamp":2,"dataChange":true}}`)
		}, refusal: `key "PATH" is "path" in another case`},
		{name: "duplicate_action_key", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.file(t, "b.parquet", "SELECT NULL::BIGINT AS id")
			a, b := p.add(t, "a.parquet", "a.parquet", nil, nil), p.add(t, "b.parquet", "b.parquet", nil, nil)
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				`{"add":`+strings.TrimSuffix(strings.TrimPrefix(b, `{"add":`), "}")+`,"add":`+strings.TrimPrefix(a, `{"add":`))
		}},
		{name: "stats_key_in_other_case", build: func(t *testing.T, p *probeTable) {
			// delta-rs skips the file by maxValues 3 (filter id = 4), a
			// case-blind reader takes the later MaxValues 4.
			p.file(t, "a.parquet", "SELECT * FROM (VALUES (3::BIGINT), (4)) v(id)")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, map[string]any{"stats": `{"numRecords":2,"maxValues":{"id":3},"MaxValues":{"id":4}}`}))
			deltaRSSkips(t, p.dir(), `[("id", "=", 4)]`)
		}, refusal: `key "MaxValues" is "maxValues" in another case`},
		{name: "stats_column_in_other_case", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT * FROM (VALUES (3::BIGINT), (4)) v(id)")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, map[string]any{"stats": `{"numRecords":2,"maxValues":{"ID":3}}`}))
			deltaRSSkips(t, p.dir(), `[("id", "=", 4)]`)
		}, refusal: `the log's stats claim maxValues of "ID", which is column "id" in another case`},
		{name: "duplicate_key", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.file(t, "b.parquet", "SELECT NULL::BIGINT AS id")
			p.commit(t, 0, deltaProtocol(1), probeMeta(probeIDRegion[:1], nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, nil), p.add(t, "b.parquet", "b.parquet", nil, nil))
			p.commit(t, 1, `{"remove":{"path":"a.parquet","path":"b.parquet","deletionTimestamp":2,"dataChange":true}}`)
		}},
		{name: "timestamp_partition_values", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT 1::BIGINT AS id")
			p.file(t, "b.parquet", "SELECT 2::BIGINT AS id")
			p.file(t, "c.parquet", "SELECT 3::BIGINT AS id")
			fields := []string{probeField("id", "long"), probeField("ts", "timestamp"), probeField("ntz", "timestamp_ntz"), probeField("day", "date")}
			p.commit(t, 0, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["timestampNtz"],"writerFeatures":["timestampNtz"]}}`,
				probeMeta(fields, []string{"ts", "ntz", "day"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"ts": "2024-01-02 03:04:05", "ntz": "2024-01-02 03:04:05.123456", "day": "2024-02-29"}, nil),
				p.add(t, "b.parquet", "b.parquet", map[string]any{"ts": "2024-01-02T03:04:05.5Z", "ntz": "1969-12-31 23:59:59", "day": "1900-01-01"}, nil),
				p.add(t, "c.parquet", "c.parquet", map[string]any{"ts": nil, "ntz": "", "day": nil}, nil))
		}},
		{name: "number_partition_values", build: func(t *testing.T, p *probeTable) {
			fields := []string{probeField("id", "long"), probeField("f", "double"), probeField("n", "integer"), probeField("d", "decimal(9,2)"), probeField("b", "boolean")}
			var adds []string
			for i, v := range [][4]any{{"1e3", "-7", "1.50", "true"}, {"-0.0", "0", "0.01", "false"}, {".5", "2147483647", "1234567.89", nil}, {"5.", "-2147483648", "0.00", ""}} {
				name := fmt.Sprintf("f%d.parquet", i)
				p.file(t, name, fmt.Sprintf("SELECT %d::BIGINT AS id", i))
				adds = append(adds, p.add(t, name, name, map[string]any{"f": v[0], "n": v[1], "d": v[2], "b": v[3]}, nil))
			}
			p.commit(t, 0, append([]string{deltaProtocol(1), probeMeta(fields, []string{"f", "n", "d", "b"}, nil)}, adds...)...)
		}},
		{name: "decimal_partition_value_of_other_scale", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta([]string{probeField("id", "long"), probeField("d", "decimal(9,2)")}, []string{"d"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"d": "1.5"}, nil))
		}, refusal: `"1.5" is not read by delta-rs as a DECIMAL(9,2) partition value`},
		{name: "decimal_partition_value_negative", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(1), probeMeta([]string{probeField("id", "long"), probeField("d", "decimal(9,2)")}, []string{"d"}, nil),
				p.add(t, "a.parquet", "a.parquet", map[string]any{"d": "-1.50"}, nil))
		}, refusal: `"-1.50" is not read by delta-rs as a DECIMAL(9,2) partition value`},
		{name: "timestamp_ntz_without_the_feature", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", "SELECT 1::BIGINT AS id, TIMESTAMP '2024-01-02 03:04:05' AS ntz")
			p.commit(t, 0, deltaProtocol(1), probeMeta([]string{probeField("id", "long"), probeField("ntz", "timestamp_ntz")}, nil, nil),
				p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: "lacks reader feature timestampNtz"},
		{name: "multipart_checkpoint", build: func(t *testing.T, p *probeTable) {
			multipartProbe(t, p, 2, 2)
		}},
		{name: "multipart_checkpoint_incomplete", build: func(t *testing.T, p *probeTable) {
			multipartProbe(t, p, 2, 1)
		}},
		{name: "reader_version_3_unknown_feature", build: func(t *testing.T, p *probeTable) {
			p.file(t, "a.parquet", ids)
			p.commit(t, 0, deltaProtocol(3, "someFutureFeature"), probeMeta(probeIDRegion[:1], nil, nil), p.add(t, "a.parquet", "a.parquet", nil, nil))
		}, refusal: "reader feature someFutureFeature"},
	})
}

// deltaRSRun runs script as deltaRSWrites does and returns its output.
func deltaRSRun(t *testing.T, out, script string) string {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	prelude := "import sys, os, glob\nimport pyarrow as pa, pyarrow.parquet as pq\nfrom deltalake import DeltaTable, write_deltalake\nout = sys.argv[1]\n"
	b, err := exec.Command(python, "-c", prelude+script+"\nos._exit(0)\n", out).CombinedOutput()
	if err != nil {
		t.Fatalf("deltalake: %v\n%s", err, b)
	}
	return strings.TrimSpace(string(b))
}

// deltaRSWrites runs script with deltalake, pyarrow and the table's
// directory as out.
func deltaRSWrites(t *testing.T, out, script string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	prelude := "import sys, os, glob\nimport pyarrow as pa, pyarrow.parquet as pq\nfrom deltalake import DeltaTable, write_deltalake\nout = sys.argv[1]\n"
	if b, err := exec.Command(python, "-c", prelude+script+"\nos._exit(0)\n", out).CombinedOutput(); err != nil {
		t.Fatalf("deltalake: %v\n%s", err, b)
	}
}

// TestDeltaRefusedTableErrsCustomSQL: a Delta table refused once its view
// is made (a file in another type than the log's, another row count than
// its stats, stats its data does not hold, a column outside the log's
// schema) errs every check, custom SQL too. A custom SQL check read the
// view of such a table and passed.
func TestDeltaRefusedTableErrsCustomSQL(t *testing.T) {
	for _, c := range []struct{ name, data, stats, refusal string }{
		{"other_type", "SELECT * FROM (VALUES ('3', 1.0::DOUBLE), ('4', 2.0)) v(id, amount)", `{"numRecords":2}`, "where the log's schema says BIGINT"},
		{"other_count", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE), (4, 2.0)) v(id, amount)", `{"numRecords":5}`, "has 5 records, the file has 2"},
		{"lying_stats", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE), (4, 2.0)) v(id, amount)", `{"numRecords":2,"maxValues":{"id":3}}`, "claim maxValues 3"},
		{"outside_the_schema", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE, 'x'), (4, 2.0, 'y')) v(id, amount, secret)", `{"numRecords":2}`, `holds column "secret"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 1.0::DOUBLE), (2, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", c.data)
			st, err := os.Stat(filepath.Join(src.root, "b1", "gold", "events", "part-b.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			writeDeltaCommit(t, src, "b1", "gold/events", 1,
				fmt.Sprintf(`{"add":{"path":"part-b.parquet","partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"stats":%q}}`, st.Size(), c.stats))
			wantRefused(t, deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "none_negative", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE id < 0"},
				Check{Name: "cross", Kind: KindCrossTable, SQL: "SELECT * FROM events WHERE id < 0"},
				Check{Name: "rows", Kind: KindRowCount, Table: "events", Max: f64(10)}), c.refusal)
		})
	}
}

// TestDeltaSchemaKeysInOtherCase: a schemaString field spelled "NAME"
// beside "name" is another column to a case-blind reader than to delta-rs
// and Spark: refused.
func TestDeltaSchemaKeysInOtherCase(t *testing.T) {
	if _, err := deltaColumnTypes(`{"type":"struct","fields":[{"name":"id","NAME":"x","type":"long"}]}`); err == nil || !strings.Contains(err.Error(), `key "NAME" is "name" in another case`) {
		t.Errorf("err %v, want the key in another case named", err)
	}
	if _, err := deltaColumnTypes(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{"Name":"x"}}]}`); err != nil {
		t.Errorf("metadata is not read: %v", err)
	}
}

// multipartProbe: deltalake writes three commits (the second an
// overwrite) and a checkpoint of version 2, split here into parts parts of
// which the first keep are kept; then a fourth commit.
func multipartProbe(t *testing.T, p *probeTable, parts, keep int) {
	deltaRSWrites(t, p.dir(), fmt.Sprintf(`
parts, keep = %d, %d
write_deltalake(out, pa.table({"id": pa.array([1, 2], pa.int64())}))
write_deltalake(out, pa.table({"id": pa.array([3], pa.int64())}), mode="overwrite")
write_deltalake(out, pa.table({"id": pa.array([4, 5], pa.int64())}), mode="append")
DeltaTable(out).create_checkpoint()
single = os.path.join(out, "_delta_log", "%%020d.checkpoint.parquet" %% 2)
t = pq.read_table(single)
for i in range(1, keep + 1):
    pq.write_table(t.take([j for j in range(t.num_rows) if j %% parts == i - 1]),
        os.path.join(out, "_delta_log", "%%020d.checkpoint.%%010d.%%010d.parquet" %% (2, i, parts)))
os.remove(single)
last = os.path.join(out, "_delta_log", "_last_checkpoint")
if os.path.exists(last):
    os.remove(last)
write_deltalake(out, pa.table({"id": pa.array([6], pa.int64())}), mode="append")
`, parts, keep))
}
