package audit

import (
	"strings"
	"testing"
)

// TestDeltaChangeDataAddsUpToTheDataChange: each change row being a row
// of its version's added or removed files is not enough: a version that
// rewrites a file copies its unchanged rows into the file it adds, so an
// insert of a copied row, or a delete left out, is made only of rows of
// the data, while a CDF consumer applying the feed ends with another table
// than the data: a copied row twice (the unique key the batch was audited
// for, broken downstream), a deleted row kept. The feed must add up to
// the version's change: its inserts and post-images with the removed
// files' rows are its deletes and pre-images with the added files' rows
// (as multisets). Here version 1 deletes id 0: it removes part-a (ids
// 0..9) and adds part-d (ids 1..9, copied). delta-rs's load_cdf reads the
// forged insert of a copied row (TestDeltaChangeDataOfACopiedRowIsRefused).
// Before, both forgeries passed.
func TestDeltaChangeDataAddsUpToTheDataChange(t *testing.T) {
	del0 := changeRows(0, 1, "delete")
	for _, c := range []struct {
		name, rows, refusal string
	}{
		{"honest", del0, ""},
		{"an unchanged row updated to itself", "SELECT * FROM (" + del0 + " UNION ALL " + changeRows(5, 1, "update_preimage") + " UNION ALL " + changeRows(5, 1, "update_postimage") + ")", ""},
		{"a copied row inserted", "SELECT * FROM (" + del0 + " UNION ALL " + changeRows(5, 1, "insert") + ")", "do not add up"},
		{"a copied row deleted", "SELECT * FROM (" + del0 + " UNION ALL " + changeRows(5, 1, "delete") + ")", "do not add up"},
		{"the delete left out", changeRows(0, 0, "delete"), "do not add up"},
		{"a delete told as a pre-image alone", changeRows(0, 1, "update_preimage"), "another number of update_preimage rows than of update_postimage rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", deltaRows(0, 10, false))
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), cdfMeta(), deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-d.parquet", deltaRows(1, 9, false))
			src.write(t, "b1", "gold/events/_change_data/c1.parquet", c.rows)
			writeDeltaCommit(t, src, "b1", "gold/events", 1, deltaRemove("part-a.parquet"), deltaAdd("part-d.parquet"), deltaCDC("_change_data/c1.parquet"))
			rep := deltaAudit(t, src, "b1", FormatDelta, idsNotNull)
			if c.refusal == "" {
				if !rep.Passed {
					t.Fatalf("%s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, c.refusal)
		})
	}
}

// TestDeltaChangeDataOfACopiedRowIsRefused: delta-rs writes the batch
// (its UPDATE of id 2 to 20 rewrites region b's file, copying id 4); the
// writer then adds to that UPDATE's change data an insert of id 4, a row
// of the file the version adds. load_cdf reads it: a consumer applying the
// feed holds id 4 twice. Refused; before, it passed.
func TestDeltaChangeDataOfACopiedRowIsRefused(t *testing.T) {
	tamper := strings.Replace(strings.Replace(cdfTamper, "ROW", `{"id": 4, "amount": 4.0, "_change_type": "insert"}`, 1), `r["id"] == 7`, `r["id"] == 4`, 1)
	src, _, out := deltaCDFBatchOut(t, tamper)
	if !strings.Contains(out, "read by load_cdf: [(False, 'insert')]") {
		t.Fatalf("delta-rs does not read the forged insert: %s", out)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta, cdfChecks...)
	wantRefused(t, rep, "do not add up")
}
