package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// ARROW:schema values pyarrow 26.0.1 serialized (base64 of
// pa.schema(...).serialize()) for review 33.
const (
	// pa.schema([pa.field("a", pa.int64()).with_metadata(pa.KeyValueMetadata([
	//   ("ARROW:extension:name", "pandas.period"), ("ARROW:extension:metadata", '{"freq":"D"}'),
	//   ("ARROW:extension:name", "arrow.json")]))])
	arrowPeriodThenJSONA = "/////1ABAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAYAAAAAAASABgACAAGAAcADAAAABAAFAASAAAAAAABAhQAAADsAAAACAAAABAAAAAAAAAAAQAAAGEAAAADAAAAjAAAAEAAAAAEAAAAiP///xgAAAAEAAAACgAAAGFycm93Lmpzb24AABQAAABBUlJPVzpleHRlbnNpb246bmFtZQAAAADA////HAAAAAQAAAAMAAAAeyJmcmVxIjoiRCJ9AAAAABgAAABBUlJPVzpleHRlbnNpb246bWV0YWRhdGEAAAAACAAMAAQACAAIAAAAHAAAAAQAAAANAAAAcGFuZGFzLnBlcmlvZAAAABQAAABBUlJPVzpleHRlbnNpb246bmFtZQAAAAAIAAwACAAHAAgAAAAAAAABQAAAAAAAAAA="
	// pa.schema([pa.field("a", pa.duration("us")).with_metadata({"ARROW:extension:name": "arrow.json"})])
	arrowJSONOverDurationA = "/////8AAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAYAAAAAAASABgACAAGAAcADAAAABAAFAASAAAAAAABEhQAAABkAAAACAAAABAAAAAAAAAAAQAAAGEAAAABAAAADAAAAAgADAAEAAgACAAAABgAAAAEAAAACgAAAGFycm93Lmpzb24AABQAAABBUlJPVzpleHRlbnNpb246bmFtZQAABgAIAAYABgAAAAAAAgA="
)

// TestReview33ArrowSchemaAsPyarrowReadsIt: ARROW:schema values Go read
// otherwise than pyarrow 26.0.1, each passing a check pandas 3.1.1 fails.
// A field's custom metadata naming ARROW:extension:name twice: Arrow's
// IPC reader takes the first (KeyValueMetadata::FindKey), a pandas.period
// (pandas reads a Period, DuckDB 1000000), Go took the last, arrow.json,
// which it excuses. arrow.json over a duration: pyarrow fails the read
// (JsonExtensionType takes only strings; a pyarrow without the extension
// registered restores the duration), Go excused the extension's name
// without looking at the type under it.
func TestReview33ArrowSchemaAsPyarrowReadsIt(t *testing.T) {
	const ints = "SELECT CASE WHEN i = 0 THEN 1000000 ELSE 2 END::BIGINT AS a FROM range(2) r(i)"
	digits := Check{Kind: KindRegex, Column: "a", Pattern: `^[0-9]+$`}
	for name, schema := range map[string]string{"extension_name_twice": arrowPeriodThenJSONA, "json_over_a_duration": arrowJSONOverDurationA} {
		t.Run(name, func(t *testing.T) {
			src := newBatchSource(t)
			dst := filepath.Join(src.root, "b1", "t", "a.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, KV_METADATA {'ARROW:schema': %s})", ints, quoteLiteral(dst), quoteLiteral(schema)))
			// A file pandas cannot read counts as one whose every row fails.
			script := "import sys, pandas as pd\ntry:\n    c = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nexcept Exception:\n    print(1)\n    sys.exit()\n" +
				`print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, digits, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "readers disagree") || !strings.Contains(res.Message, "a.parquet") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the ARROW:schema", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview33WideArrowSchemaIsNotRefused: pyarrow 26.0.1 writes a table
// of 3,400 timestamp columns, each field with its PARQUET:field_id (as
// pyiceberg writes them), with an ARROW:schema of over 10,000 tables
// (each field's, its Timestamp type's, its metadata's), which pyarrow
// reads (its verifier takes up to a million tables). Go's decoder stopped
// at 10,000 tables, so the file was refused as one pyarrow fails on,
// whatever its checks read.
func TestReview33WideArrowSchemaIsNotRefused(t *testing.T) {
	if _, err := testPython(); err != nil || testing.Short() {
		t.Skipf("pandas writes the file: %v", err)
	}
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `import sys, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
n = 3400
schema = pa.schema([pa.field(f"c{i}", pa.timestamp("us"), metadata={"PARQUET:field_id": str(i + 1)}) for i in range(n)])
pq.write_table(pa.table([pa.array([0, 1], pa.timestamp("us"))] * n, schema=schema), sys.argv[1])
print(int(pd.read_parquet(sys.argv[1])["c0"].isna().sum()))`
	rep, res, _ := auditLikePandas(t, src, script, []string{dst}, FormatParquet, Check{Kind: KindNotNull, Column: "c0"}, false)
	if !rep.Passed || res.Status != schemas.StatusPass {
		t.Fatalf("%s %q: want the honest wide file to pass", res.Status, res.Message)
	}
}

// TestReview33ArrowSchemaPyarrowFailsOnIsRefused: ARROW:schema values of
// pa.schema([("a", pa.int64())]) (and of a time64) with one byte changed
// where the Go decoder did not look: pyarrow 26.0.1 fails the read
// (FlatBuffers' verifier finds the field's name without its NUL; Arrow
// reads no Int of 7 bits, no Time in microseconds of 32 bits), so
// pandas.read_parquet fails on a file DuckDB reads, and the audit passed
// it. Of 7,089 random mutations of pyarrow's schemas Go decoded, pyarrow
// failed on 3,430; with verifyArrowMessage 3 of 5,472 (an arrow.uuid over
// another type than 16 bytes).
func TestReview33ArrowSchemaPyarrowFailsOnIsRefused(t *testing.T) {
	const ints = "SELECT CASE WHEN i = 0 THEN 1000000 ELSE 2 END::BIGINT AS a FROM range(2) r(i)"
	for name, schema := range map[string]string{
		"name_without_nul": "/////3gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAECEAAAABwAAAAEAAAAAAAAAAEAAABhYgAACAAMAAgABwAIAAAAAAAAAUAAAAA=",
		"int_of_7_bits":    "/////3gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAECEAAAABwAAAAEAAAAAAAAAAEAAABhAAAACAAMAAgABwAIAAAAAAAAAQcAAAA=",
		// pa.schema([("a", pa.time64("us"))]) of 32 bits: "Time is 64 bits for micro/nano unit"
		"time_us_of_32_bits": "/////3gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAEJEAAAABwAAAAEAAAAAAAAAAEAAABhAAAACAAMAAYACAAIAAAAAAACACAAAAA=",
	} {
		t.Run(name, func(t *testing.T) {
			src := newBatchSource(t)
			dst := filepath.Join(src.root, "b1", "t", "a.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, KV_METADATA {'ARROW:schema': %s})", ints, quoteLiteral(dst), quoteLiteral(schema)))
			// A file pandas cannot read counts as one whose every row fails.
			script := "import sys, pandas as pd\ntry:\n    c = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nexcept Exception:\n    print(1)\n    sys.exit()\nprint(int(c.isna().sum()))"
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, Check{Kind: KindNotNull, Column: "a"}, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "ARROW:schema") || !strings.Contains(res.Message, "a.parquet") {
				t.Fatalf("%s %q (%s); pandas fails on the file: want it refused naming the file and the ARROW:schema", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
