package audit

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRecheck is the recheck of BenchmarkWAPCycle's publish turn:
// batch S (one 100-row Parquet file) passed its first audit onto c001,
// then batch P published (c002), and S is rechecked onto c002 (Onto), its
// batch's scans answered by the query memo, as in steady state. It
// reports the medians of wall time and of the process's CPU time, and the
// downloads of a recheck.
func BenchmarkRecheck(b *testing.B) {
	r := newFuseRig(b)
	s := r.batch("s1", demoRows(300))
	r.audit(s)
	p := r.batch("p1", demoRows(200))
	rep, _, _ := r.audit(p)
	c1, c2 := cid("c001"), cid("c002")
	r.lake.mergeDirs(b, c1, p, c1, c2)
	text, err := NewAttestation("billing", fuseSuite(), rep, p, c1).Encode(nil)
	if err != nil {
		b.Fatal(err)
	}
	r.lake.commit(c2, []string{c1, p}, map[string]string{MetaAttestation: text})
	req := r.request(s, c2, false)
	req.Onto = true
	ctx := context.Background()
	var wall, cp []time.Duration
	downloads := r.lake.totalDownloads()
	n := 0
	for b.Loop() {
		start, c0 := time.Now(), processCPU()
		rep, err := r.fused.Run(ctx, req)
		wall, cp = append(wall, time.Since(start)), append(cp, processCPU()-c0)
		if err != nil || !rep.Passed || rep.Mode != ModeIncremental {
			b.Fatal(err, rep.Mode, rep.ModeReason, rep.Checks)
		}
		n++
	}
	b.ReportMetric(medianMs(wall), "recheck-ms")
	b.ReportMetric(medianMs(cp), "cpu-ms")
	b.ReportMetric(float64(r.lake.totalDownloads()-downloads)/float64(n), "downloads/op")
	b.ReportMetric(0, "ns/op")
}
