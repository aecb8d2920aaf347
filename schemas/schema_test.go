package schemas

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// ms returns a UTC time with millisecond precision, as Avro timestamp-millis
// carries it.
func ms(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC().Truncate(time.Millisecond)
}

func ptr[T any](v T) *T { return &v }

func sampleReport() AuditReport {
	return AuditReport{
		Dataset: "orders", Ref: "wap-orders-b1", Passed: false, DurationMs: 1234,
		Checks: []CheckResult{
			{Name: "ids_not_null", Kind: "not_null", Table: "orders", Severity: "error", Status: StatusPass,
				Observed: "0", Threshold: "0", SampleRows: []string{}, DurationMs: 12},
			{Name: "amount_range", Kind: "range", Table: "orders", Severity: "error", Status: StatusFail,
				Observed: "3", Threshold: "0", SampleRows: []string{`{"id":1,"amount":-5}`}, Message: "3 rows out of range", DurationMs: 40,
				RowsChecked: ptr(int64(1000)), Failures: ptr(int64(3))},
		},
	}
}

// sampleEvents returns one fully populated event of every type.
func sampleEvents() []Event {
	rep := sampleReport()
	return []Event{
		BatchLanded{BatchID: "2024-05-01T00:00:00Z.run-7", Dataset: "orders", SourceRef: "main",
			ExpectedWrites: []string{"orders", "order_lines"}, WriteDeadline: ptr(ms("2024-05-01T01:00:00.123Z")),
			Attributes: map[string]string{"airflow_dag": "ingest", "team": "sales"}, Producer: "airflow",
			OccurredAt: ms("2024-05-01T00:00:01.5Z")},
		WriteComplete{BatchID: "b1", Dataset: "orders", Write: "orders", Paths: []string{"orders/part-0.parquet"},
			RowCount: ptr(int64(42)), OccurredAt: ms("2024-05-01T00:10:00Z")},
		BatchCancelled{BatchID: "b1", Dataset: "orders", Reason: "operator request", OccurredAt: ms("2024-05-01T00:11:00Z"),
			RequestID: "req-1", RequestedBy: "ana"},
		RetryRequested{RequestID: "req-2", BatchID: "b1", Dataset: "orders", RequestedBy: "ana", OccurredAt: ms("2024-05-01T00:12:00Z")},
		RevertRequested{RequestID: "req-3", BatchID: "b1", Dataset: "orders", Reason: "wrong currency", RequestedBy: "ana",
			OccurredAt: ms("2024-05-02T08:59:00Z")},
		BranchReady{EventID: "e-1", BatchID: "b1", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b1",
			LakeFSURI: "lakefs://lake/wap-orders-b1/", S3URI: "s3://lake/wap-orders-b1/", ExpectedWrites: []string{"orders"},
			WriteDeadline: ptr(ms("2024-05-01T01:00:00Z")), OccurredAt: ms("2024-05-01T00:00:02Z")},
		BatchPublished{EventID: "e-2", BatchID: "b1", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b1",
			TargetRef: "main", CommitID: "c0ffee", Report: rep, LandedAt: ms("2024-05-01T00:00:01Z"),
			PublishedAt: ms("2024-05-01T00:20:00Z"), DurationMs: 1199000},
		BatchAborted{EventID: "e-3", BatchID: "b1", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b1",
			Reason: ReasonAuditFailed, Detail: "amount_range failed", Report: &rep, BranchKept: true,
			OccurredAt: ms("2024-05-01T00:20:00Z"), DurationMs: 5, TargetRef: "main"},
		BatchFailed{EventID: "e-4", BatchID: "b1", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b1",
			State: "Publishing", Error: "lakefs: 503", Attempts: 7, BranchKept: true, OccurredAt: ms("2024-05-01T00:30:00Z"), TargetRef: "main"},
		BatchReverted{EventID: "e-5", BatchID: "b1", Dataset: "orders", Repository: "lake", TargetRef: "main",
			PublishedCommitID: "c0ffee", CommitID: "decaf", Reason: "wrong currency", RevertedBy: "ana", OccurredAt: ms("2024-05-02T09:00:00Z")},
		RequestRefused{EventID: "e-6", RequestID: "req-2", RequestType: TypeRetryRequested, BatchID: "b1", Dataset: "orders",
			State: "published", Reason: RefusedWrongState, Detail: "batch b1 is published", OccurredAt: ms("2024-05-02T09:01:00Z")},
		UnattestedChange{EventID: "e-7", Kind: ChangeUnattestedCommit, BatchID: "b2", Dataset: "orders", Repository: "lake", TargetRef: "main",
			CommitID: "d1rec7", Committer: "ana", Message: "fix by hand", Detail: "no lakewap attestation", Suite: "5a1e",
			PublishedCommitID: "c0ffee2", OccurredAt: ms("2024-05-02T09:02:00Z")},
	}
}

// minimalEvents has every optional part empty or nil, the other edge of
// what must round-trip.
func minimalEvents() []Event {
	t0 := ms("2024-05-01T00:00:00Z")
	return []Event{
		BatchLanded{BatchID: "b", Dataset: "d", ExpectedWrites: []string{}, Attributes: map[string]string{}, OccurredAt: t0},
		WriteComplete{BatchID: "b", Dataset: "d", Write: "w", Paths: []string{}, OccurredAt: t0},
		BatchCancelled{BatchID: "b", Dataset: "d", OccurredAt: t0},
		BranchReady{BatchID: "b", Dataset: "d", ExpectedWrites: []string{}, OccurredAt: t0},
		BatchPublished{BatchID: "b", Dataset: "d", Report: AuditReport{Checks: []CheckResult{}}, LandedAt: t0, PublishedAt: t0},
		BatchAborted{BatchID: "b", Dataset: "d", Reason: ReasonInvalid, OccurredAt: t0},
		BatchFailed{BatchID: "b", Dataset: "d", OccurredAt: t0},
		BatchReverted{BatchID: "b", Dataset: "d", OccurredAt: t0},
		RetryRequested{BatchID: "b", Dataset: "d", OccurredAt: t0},
		RevertRequested{BatchID: "b", Dataset: "d", OccurredAt: t0},
		RequestRefused{BatchID: "b", Dataset: "d", OccurredAt: t0},
		UnattestedChange{BatchID: "b", Dataset: "d", OccurredAt: t0},
	}
}

func TestEveryEventTypeHasASampleAndASchema(t *testing.T) {
	var got []string
	for _, ev := range sampleEvents() {
		got = append(got, ev.EventType())
	}
	if want := EventTypes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("samples cover %v, event types are %v", got, want)
	}
	for _, n := range EventTypes() {
		if _, err := fs.Stat(files, n+".avsc"); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestSchemaFilesFollowConventions checks the rules of the contract on the
// raw .avsc files: namespace, a doc on every record and field, nullable
// unions defaulting to null, timestamps as timestamp-millis longs and empty
// defaults for arrays and maps.
func TestSchemaFilesFollowConventions(t *testing.T) {
	names, err := fs.Glob(files, "*.avsc")
	if err != nil || len(names) != len(EventTypes())+1 {
		t.Fatalf("want %d schema files (events + AuditReport), got %v (%v)", len(EventTypes())+1, names, err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc["namespace"] != Namespace {
			t.Errorf("%s: namespace %v, want %s", name, doc["namespace"], Namespace)
		}
		checkRecord(t, name, doc)
	}
}

func checkRecord(t *testing.T, where string, rec map[string]any) {
	t.Helper()
	if d, _ := rec["doc"].(string); d == "" {
		t.Errorf("%s: record %v has no doc", where, rec["name"])
	}
	fields, _ := rec["fields"].([]any)
	for _, f := range fields {
		f := f.(map[string]any)
		at := fmt.Sprintf("%s: %v.%v", where, rec["name"], f["name"])
		if d, _ := f["doc"].(string); d == "" {
			t.Errorf("%s has no doc", at)
		}
		def, hasDef := f["default"]
		switch typ := f["type"].(type) {
		case []any:
			if typ[0] != "null" || !hasDef || def != nil {
				t.Errorf("%s: optional fields are [\"null\", T] with default null", at)
			}
		case map[string]any:
			switch typ["type"] {
			case "array":
				if l, ok := def.([]any); !ok || len(l) != 0 {
					t.Errorf("%s: arrays default to []", at)
				}
				if item, ok := typ["items"].(map[string]any); ok && item["type"] == "record" {
					checkRecord(t, where, item)
				}
			case "map":
				if m, ok := def.(map[string]any); !ok || len(m) != 0 {
					t.Errorf("%s: maps default to {}", at)
				}
			case "long":
				if typ["logicalType"] != "timestamp-millis" {
					t.Errorf("%s: unexpected logical long %v", at, typ)
				}
			}
		}
		if strings.HasSuffix(fmt.Sprint(f["name"]), "_at") || strings.HasSuffix(fmt.Sprint(f["name"]), "_deadline") {
			if !strings.Contains(fmt.Sprint(f["type"]), "timestamp-millis") {
				t.Errorf("%s: timestamps are long timestamp-millis, got %v", at, f["type"])
			}
		}
	}
}

// TestGoTypesMatchSchemas guards against a field added to a Go type but not
// to its schema (or the reverse): hamba would silently drop it.
func TestGoTypesMatchSchemas(t *testing.T) {
	set, err := defaultSchemaSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sampleEvents() {
		k := set.kinds[ev.EventType()]
		compareFields(t, reflect.TypeOf(ev), k.schema)
	}
}

func compareFields(t *testing.T, typ reflect.Type, s avro.Schema) {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	rec := s.(*avro.RecordSchema)
	var schemaFields, goFields []string
	for _, f := range rec.Fields() {
		schemaFields = append(schemaFields, f.Name())
	}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag := sf.Tag.Get("avro")
		goFields = append(goFields, tag)
		for _, f := range rec.Fields() {
			if f.Name() != tag {
				continue
			}
			inner := f.Type()
			if u, ok := inner.(*avro.UnionSchema); ok {
				inner = u.Types()[len(u.Types())-1]
			}
			if a, ok := inner.(*avro.ArraySchema); ok {
				inner = a.Items()
			}
			if inner.Type() == avro.Record || inner.Type() == avro.Ref {
				compareFields(t, sf.Type, inner)
			}
		}
	}
	if !reflect.DeepEqual(schemaFields, goFields) {
		t.Errorf("%s: schema fields %v, Go avro tags %v", rec.FullName(), schemaFields, goFields)
	}
}

// Vectors from the Avro specification's test suite and the Java
// implementation: logicalType and doc are not part of the canonical form.
func TestCanonicalFormAndFingerprint(t *testing.T) {
	for _, tc := range []struct {
		schema, canonical string
		fp                uint64
	}{
		{`"null"`, `"null"`, 7195948357588979594},
		{`{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, 0},
		{`{"type":"record","name":"B","namespace":"a","doc":"x","fields":[` +
			`{"name":"t","doc":"y","type":{"type":"long","logicalType":"timestamp-millis"},"default":0},` +
			`{"name":"u","type":["null",{"type":"enum","name":"E","symbols":["X","Y"]}],"default":null},` +
			`{"name":"v","type":{"type":"map","values":{"type":"fixed","name":"F","size":2}}},` +
			`{"name":"w","type":{"type":"array","items":"a.E"}}]}`,
			`{"name":"a.B","type":"record","fields":[{"name":"t","type":"long"},` +
				`{"name":"u","type":["null",{"name":"a.E","type":"enum","symbols":["X","Y"]}]},` +
				`{"name":"v","type":{"type":"map","values":{"name":"a.F","type":"fixed","size":2}}},` +
				`{"name":"w","type":{"type":"array","items":"a.E"}}]}`, 0},
	} {
		s, err := parseSchema(tc.schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := CanonicalForm(s); got != tc.canonical {
			t.Errorf("canonical form of %s:\n got %s\nwant %s", tc.schema, got, tc.canonical)
		}
		if tc.fp != 0 && Fingerprint(s) != tc.fp {
			t.Errorf("fingerprint of %s = %d, want %d", tc.schema, Fingerprint(s), tc.fp)
		}
	}
}

func readGolden(t *testing.T) map[string][]uint64 {
	t.Helper()
	f, err := os.Open("testdata/fingerprints.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name string
		var fp uint64
		if _, err := fmt.Sscanf(line, "%s %x", &name, &fp); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		out[name] = append(out[name], fp)
	}
	return out
}

// TestGoldenFingerprints makes schema changes deliberate: every fingerprint
// ever shipped (listed in the golden file, the first ones cross-checked with
// fastavro) must still be decodable, and every current one must be listed.
func TestGoldenFingerprints(t *testing.T) {
	golden := readGolden(t)
	set, err := defaultSchemaSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range set.kinds {
		found := false
		for _, fp := range golden[name] {
			found = found || fp == k.fp
		}
		if !found {
			t.Errorf("current %s schema has fingerprint %016x, not in testdata/fingerprints.golden: "+
				"if you changed it, copy the old one to history/ and add the line \"%s %016x\"", name, k.fp, name, k.fp)
		}
	}
	for name, fps := range golden {
		for _, fp := range fps {
			p, ok := set.writers[fp]
			if !ok {
				t.Errorf("%s %016x was shipped but is no longer decodable: restore it in history/", name, fp)
			} else if p.kind.name != name {
				t.Errorf("fingerprint %016x decodes as %s, golden says %s", fp, p.kind.name, name)
			}
		}
	}
}

func TestSchemaTextIsSelfContained(t *testing.T) {
	for _, n := range EventTypes() {
		text, err := SchemaText(n)
		if err != nil {
			t.Fatal(err)
		}
		// A fresh cache proves no definition comes from elsewhere.
		s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if s.(avro.NamedSchema).FullName() != Namespace+"."+n {
			t.Errorf("%s: schema names %s", n, s.(avro.NamedSchema).FullName())
		}
		if !strings.Contains(text, `"doc"`) {
			t.Errorf("%s: registered text lost its docs", n)
		}
	}
	if _, err := SchemaText("Nope"); err == nil {
		t.Error("SchemaText of an unknown type succeeded")
	}
}
