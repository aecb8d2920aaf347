package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// cdfCharMeta is a metaData action of deltaSchema with the change data
// feed on and region declared decl (__CHAR_VARCHAR_TYPE_STRING), or
// declared nothing when decl is "".
func cdfCharMeta(t *testing.T, decl string) string {
	t.Helper()
	var schema struct {
		Type   string           `json:"type"`
		Fields []map[string]any `json:"fields"`
	}
	if err := json.Unmarshal([]byte(deltaSchema), &schema); err != nil {
		t.Fatal(err)
	}
	if decl != "" {
		schema.Fields[2]["metadata"] = map[string]string{sparkCharKey: decl}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{"delta.enableChangeDataFeed":"true"},"createdTime":1}}`, b)
}

// TestReader61ChangeDataOfACharTableIsJudgedByItsData: Spark's
// table_changes reads a Delta table's change data files with the table's
// schema, and so pads a column the schema declares char(5) there as in
// the data files (`ab` as `ab   `), where delta-rs's load_cdf and DuckDB
// read `ab`. The change data's insert and update_postimage rows are rows
// of the files their version adds (deltacdf.go), which are the batch's or
// the interim view's, scanned for short values (deltaSparkChars): an
// insert the batch's file holds short is refused by that file. But its
// delete and update_preimage rows are rows of files the batch removes,
// which no view of the audit holds: a batch declaring region char(5) and
// removing main's file of `ab` passed, its feed telling Spark's readers
// of a delete of `ab   ` and delta-rs's of `ab` (failed before). The
// change data files are now scanned with the data under every CHAR
// declaration, and that one is refused naming the change data file.
func TestReader61ChangeDataOfACharTableIsJudgedByItsData(t *testing.T) {
	rows := func(from, n int, region, typ string) string {
		s := fmt.Sprintf("SELECT i::BIGINT AS id, (i %% 100)::DOUBLE AS amount, %s AS region", quoteLiteral(region))
		if typ != "" {
			s += ", " + quoteLiteral(typ) + " AS _change_type"
		}
		return s + fmt.Sprintf(" FROM range(%d, %d) r(i)", from, from+n)
	}
	for _, c := range []struct {
		name                    string
		mainDecl, batchDecl     string // "" for none; batchDecl: a metaData in version 1
		mainRegion, batchRegion string
		refusal                 string // "" for a pass
	}{
		{name: "full length", mainDecl: "char(5)", mainRegion: "abcde", batchRegion: "fghij"},
		{name: "short insert", mainDecl: "char(5)", mainRegion: "abcde", batchRegion: "ab", refusal: "file gold/events/part-c.parquet: column \"region\" holds values shorter than their CHAR's length"},
		{name: "short delete under the batch's char", batchDecl: "char(5)", mainRegion: "ab", batchRegion: "fghij", refusal: "file gold/events/_change_data/c1.parquet: column \"region\" holds values shorter than their CHAR's length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", rows(0, 10, c.mainRegion, ""))
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), cdfCharMeta(t, c.mainDecl), deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-c.parquet", rows(200, 5, c.batchRegion, ""))
			src.write(t, "b1", "gold/events/_change_data/c1.parquet",
				"SELECT * FROM ("+rows(200, 5, c.batchRegion, "insert")+" UNION ALL "+rows(0, 10, c.mainRegion, "delete")+")")
			actions := []string{deltaRemove("part-a.parquet"), deltaAdd("part-c.parquet"), deltaCDC("_change_data/c1.parquet")}
			if c.batchDecl != "" {
				actions = append([]string{cdfCharMeta(t, c.batchDecl)}, actions...)
			}
			writeDeltaCommit(t, src, "b1", "gold/events", 1, actions...)
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"abcde", "fghij", "ab"}})
			if c.refusal == "" {
				if !rep.Passed {
					t.Fatalf("%s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, c.refusal)
			if !strings.Contains(rep.Checks[0].Message, "char(5)") {
				t.Errorf("refusal %q names no declaration", rep.Checks[0].Message)
			}
		})
	}
}
