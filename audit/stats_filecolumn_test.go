package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestStatsOfFileWithLakewapFileColumn: a batch file with a column named
// __lakewap_file, the name computeStats's grouped scan gives DuckDB's
// filename column. DuckDB refuses that scan (Binder Error: Option filename
// adds column "__lakewap_file", but a column with this name is also in the
// file), so the engine that asks each query alone stores no statistics
// for the file, while the fused first audit takes them from the batch view
// and stores them: the two engines' stores differ. Once the file is
// published, every later incremental audit needs its statistics and the
// grouped scan fails again: each check errors (unfused; fused too when the
// file came in a batch of two or more files, or the store lost it). Both
// assertions failed on main (85fd0c8..c635e79).
func TestStatsOfFileWithLakewapFileColumn(t *testing.T) {
	for _, two := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "with_another_file"}[two], func(t *testing.T) {
			statsOfFileWithLakewapFileColumn(t, two)
		})
	}
}

func statsOfFileWithLakewapFileColumn(t *testing.T, two bool) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	rows := strings.Replace(demoRows(300), "AS currency", "AS currency, 'x' AS __lakewap_file", 1)
	s := r.batch("lf", rows)
	if two {
		r.lake.write(t, s, "gold/billing_fact/lf/part-1.parquet", demoRows(700))
	}
	rep, _, _ := r.audit(s)
	objs, err := r.lake.List(context.Background(), "r", s, "gold/billing_fact/lf/part-0")
	if err != nil || len(objs) != 1 {
		t.Fatal(err, objs)
	}
	key := statsKey("r", objs[0])
	got, ok1 := r.fused.stats.get(key)
	want, ok2 := r.single.stats.get(key)
	if ok1 != ok2 || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("statistics of the batch's file: fused %v %+v, unfused %v %+v", ok1, got, ok2, want)
	}
	// Publish it, then audit the next batch on both engines.
	c1, c2 := cid("c001"), cid("c002")
	r.lake.mergeDirs(t, c1, s, c1, c2)
	text, err := NewAttestation("billing", fuseSuite(), rep, s, c1).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.lake.commit(c2, []string{c1, s}, map[string]string{MetaAttestation: text})
	n := cid("next")
	r.lake.branch(t, c2, n)
	r.lake.commit(n, []string{c2}, nil)
	r.lake.write(t, n, "gold/billing_fact/next/part-0.parquet", demoRows(600))
	for _, e := range []*Engine{r.fused, r.single} {
		name := map[bool]string{true: "fused", false: "unfused"}[e == r.fused]
		next, err := e.Run(context.Background(), r.request(n, c2, false))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range next.Checks {
			if c.Status == schemas.StatusError {
				t.Errorf("next audit (%s, %s): check %s errored: %.160s", name, next.Mode, c.Name, c.Message)
			}
		}
	}
}
