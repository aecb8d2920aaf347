package audit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestSummaryBytesCountsWhatItKeeps: a summary keeps each file's
// statistics (their maps and min and max text) alive; its estimate counts
// at least the text it holds. The old estimate (about 100 bytes a
// figure) was 1.8x short of it here.
func TestSummaryBytesCountsWhatItKeeps(t *testing.T) {
	need := statsNeed{cols: []colNeed{{name: "k"}}}
	long := func(c byte) string { return strings.Repeat(string(c), maxStatValueBytes) }
	var files []summaryFile
	var stats []fileStats
	var held int64
	for i := range 1000 {
		f := summaryFile{path: fmt.Sprintf("data/t/part-%04d.parquet", i), address: fmt.Sprintf("local://ns/data/g%04d", i), size: 1000}
		st := fileStats{Rows: 10, Cols: map[string]colStats{need.cols[0].key(): {Type: "VARCHAR", NonNull: 10, Min: long('a'), Max: long('z')}}}
		files, stats = append(files, f), append(stats, st)
		held += int64(len(f.path) + len(f.address))
		for k, cs := range st.Cols {
			held += int64(len(k) + len(cs.Type) + len(cs.Min) + len(cs.Max))
		}
	}
	if est := summaryBytes(files, stats); est < held {
		t.Errorf("summaryBytes says %d bytes; the summary keeps at least %d bytes of text alive (%.1fx the estimate)", est, held, float64(held)/float64(est))
	}
}

// unaddressedLake lists path at ref one byte larger than it is read.
type unaddressedLake struct {
	elsewhereLake
	ref, path string
}

func (l unaddressedLake) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	objs, err := l.elsewhereLake.List(ctx, repo, ref, prefix)
	if ref != l.ref {
		return objs, err
	}
	out := objs[:0:0]
	for _, o := range objs {
		if o.Path == l.path {
			o.Size++
		}
		out = append(out, o)
	}
	return out, err
}

// TestForeignAddressesFailClosedOnAnUnaddressedFile: a file the audit read
// that the listing of the same commit does not hold as read (another
// size) has no address to judge; foreign_addresses must not pass the
// batch for it. It passed (the file was left out) before readAtRef failed
// closed.
func TestForeignAddressesFailClosedOnAnUnaddressedFile(t *testing.T) {
	r := newMemoRig(t, false, map[string][]string{"data/t/e.parquet": {"1000", "2000"}})
	const path = "data/t/s1/part-0.parquet"
	s := r.batch("c001", "s1", path, "100")
	e, err := New(Options{Source: unaddressedLake{elsewhereLake{r.lake}, s, path}, WorkDir: t.TempDir(), History: r.lake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Suite: memoSuite(), Repository: "r", Ref: s, BaseRef: cid("c001"), BaseName: "main", BatchTime: batchTime})
	if err != nil {
		return // the audit could not run: nothing is published
	}
	c := check(rep, KindForeignAddress)
	if rep.Passed || c.Status == "" || c.Status == schemas.StatusPass {
		t.Errorf("%s audit of a batch whose read file has no address to judge: passed %v, foreign_addresses %q %q", rep.Mode, rep.Passed, c.Status, c.Observed)
	}
}

// TestConcurrentRechecksShareSummariesAndListings: audits and rechecks at
// once on one engine (kept summaries, listings, memo) give each the
// report of an engine that keeps nothing.
func TestConcurrentRechecksShareSummariesAndListings(t *testing.T) {
	eachCache(t, testConcurrentRechecks)
}

func testConcurrentRechecks(t *testing.T, cache bool) {
	old := map[string][]string{}
	for i := range 6 {
		old[fmt.Sprintf("data/t/d%d.parquet", i)] = []string{fmt.Sprint(1000 + 10*i), fmt.Sprint(1005 + 10*i)}
	}
	r := newMemoRig(t, cache, old)
	head := "c001"
	for i := range 5 {
		p := r.batch(head, fmt.Sprintf("p%d", i), fmt.Sprintf("data/t/p%d/part-0.parquet", i), fmt.Sprint(5000+10*i))
		next := fmt.Sprintf("c1%02d", i)
		r.publish(head, fmt.Sprintf("p%d", i), head, next, r.audit(Request{Ref: p, BaseRef: cid(head)}))
		head = next
	}
	var reqs []Request
	for i := range 12 {
		from := []string{"c001", "c100", "c102", "c104"}[i%4]
		id := fmt.Sprint(100 + i)
		if i%5 == 0 {
			id = "5010" // a key a publish brought: fails unique onto the head
		}
		s := r.batch(from, fmt.Sprintf("x%d", i), fmt.Sprintf("data/t/x%d/part-0.parquet", i), id)
		reqs = append(reqs, Request{Ref: s, BaseRef: cid(from)}, Request{Ref: s, BaseRef: cid(head), Onto: from != head})
	}
	for i := range reqs {
		reqs[i].Dataset, reqs[i].Suite, reqs[i].Repository, reqs[i].BatchTime, reqs[i].BaseName = "d", memoSuite(), "r", batchTime, "main"
	}
	want := make([]schemas.AuditReport, len(reqs))
	for i, req := range reqs {
		var err error
		if want[i], err = r.plain.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	failing := 0
	for _, w := range want {
		if w.Mode != ModeIncremental {
			t.Fatalf("a %s audit: %s", w.Mode, w.ModeReason)
		}
		if !w.Passed {
			failing++
		}
	}
	if failing == 0 || failing == len(want) {
		t.Fatalf("%d of %d audits fail: the test shows little", failing, len(want))
	}
	for round := range 3 {
		got := make([]schemas.AuditReport, len(reqs))
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = r.memo.Run(context.Background(), req)
			}()
		}
		wg.Wait()
		for i := range reqs {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			sameReport(t, fmt.Sprintf("round %d, request %d (onto=%v)", round, i, reqs[i].Onto), got[i], want[i])
		}
	}
	r.memo.summaries.mu.Lock()
	defer r.memo.summaries.mu.Unlock()
	if r.memo.summaries.lru.Len() == 0 {
		t.Fatal("no summary kept: the test shares none")
	}
}
