package audit

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGoSettledClaimsThatLieAreRefused: the claims of a batch's one file
// of one row group, for columns no check reads (customer_id and currency
// of the demo suite), are compared in Go from its pages (claimsgo.go), not
// in the fused statement. A footer that lies about them must still be
// refused, by either engine: a narrower max over dictionary-encoded
// values, a narrower min over PLAIN ones, no nulls claimed over a NULL.
// The test failed with the Go comparison disabled (every chunk the Go
// reader read taken as holding its claims); the honest batch's fused
// statement asks neither column's min (it did before the Go reading).
func TestGoSettledClaimsThatLieAreRefused(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	// Honest: passes, and the fused statement leaves the two columns to Go.
	_, fused, _ := r.audit(r.batch("b1", demoRows(300)))
	for _, q := range batchScans(fused) {
		for _, c := range []string{`min("customer_id")`, `min("currency")`} {
			if strings.Contains(q, c) {
				t.Errorf("the fused statement asks %s, which the Go reading settles:\n%s", c, q)
			}
		}
	}
	// currency NULL at one row: accepted_values lets it through.
	rows := `SELECT 'INV-' || lpad(i::VARCHAR, 7, '0') AS billing_id, 'CUST-' || (i % 97)::VARCHAR AS customer_id,
	(100 + i * 37 % 50000)::BIGINT AS amount_cents, CASE WHEN i = 405 THEN NULL ELSE ['EUR','USD','GBP'][1 + i % 3] END AS currency
	FROM range(400, 500) t(i)`
	for _, c := range []struct {
		name, options string
		dictionary    bool // the forged column's data pages are dictionary-encoded
		column        string
		forge         func(t *testing.T, b []byte, dst string) []byte
	}{
		{"narrower max, dictionary", "", true, "currency", func(t *testing.T, b []byte, dst string) []byte {
			return forgeBytes(t, b, "USD", "USC", dst)
		}},
		{"narrower min, plain", ", STRING_DICTIONARY_PAGE_SIZE_LIMIT 1", false, "customer_id", func(t *testing.T, b []byte, dst string) []byte {
			return forgeBytes(t, b, "CUST-0", "CUST-1", dst)
		}},
		{"no nulls claimed", "", true, "currency", func(t *testing.T, b []byte, dst string) []byte {
			return forgeNullCount(t, b, "currency", dst)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := cid("f-" + strings.ReplaceAll(c.name, " ", ""))
			r.lake.branch(t, cid("c001"), s)
			r.lake.commit(s, []string{cid("c001")}, nil)
			dst := filepath.Join(r.lake.root, s, "gold", "billing_fact", "f", "part-0.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, "COPY ("+rows+") TO "+quoteLiteral(dst)+" (FORMAT parquet"+c.options+")")
			if got := footerStat(t, dst, "string_agg(encodings, ',')", c.column); strings.Contains(got, "DICTIONARY") != c.dictionary {
				t.Fatalf("%s is written %s, want dictionary-encoded %v", c.column, got, c.dictionary)
			}
			honest, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			c.forge(t, honest, dst)
			for _, e := range []*Engine{r.fused, r.single} {
				rep, err := e.Run(context.Background(), r.request(s, cid("c001"), false))
				if err != nil {
					t.Fatal(err)
				}
				msg := ""
				for _, ch := range rep.Checks {
					msg += ch.Message + "\n"
				}
				if rep.Passed || !strings.Contains(msg, "f/part-0.parquet") || !strings.Contains(msg, `column "`+c.column+`"`) {
					t.Errorf("unfused %v: passed %v, want refused naming the file and column %q:\n%s", e.unfused, rep.Passed, c.column, msg)
				}
			}
		})
	}
}

// forgeBytes rewrites every copy of from in the footer of honest to to
// (of the same length), writes the file to dst and checks that its rows
// still read as before.
func forgeBytes(t *testing.T, honest []byte, from, to, dst string) []byte {
	t.Helper()
	f := bytes.Clone(honest)
	lo, hi := footer(t, f)
	if n := bytes.Count(f[lo:hi], []byte(from)); n == 0 {
		t.Fatalf("the footer holds no %q to forge", from)
	}
	copy(f[lo:hi], bytes.ReplaceAll(f[lo:hi], []byte(from), []byte(to)))
	return writeForged(t, honest, f, dst)
}

// BenchmarkClaimsInGo is BenchmarkFirstIncrementalAudit's first audit on
// the fused engine three ways, alternately, audit by audit: claims settled
// in Go where they can be (as every engine does), all left to DuckDB (as
// before claimsgo.go), and none checked (as before claims.go). It reports
// the medians of each way's process CPU (DuckDB's threads included) and
// wall time per audit.
func BenchmarkClaimsInGo(b *testing.B) {
	r, key, req := firstIncrementalAudit(b)
	ctx := context.Background()
	e := r.fused
	ways := []struct {
		name               string
		notInGo, unchecked bool
		wall, cp           []time.Duration
	}{{name: "go"}, {name: "duckdb", notInGo: true}, {name: "unchecked", unchecked: true}}
	rnd := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, k := range rnd.Perm(len(ways)) { // in an order drawn anew: none follows another always
			w := &ways[k]
			e.claimsNotInGo, e.claimsUnchecked = w.notInGo, w.unchecked
			e.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
			e.stats.mu.Lock()
			delete(e.stats.mem, key)
			e.stats.mu.Unlock()
			start, c0 := time.Now(), processCPU()
			rep, err := e.Run(ctx, req)
			w.wall, w.cp = append(w.wall, time.Since(start)), append(w.cp, processCPU()-c0)
			if err != nil || !rep.Passed || rep.Mode != ModeIncremental {
				b.Fatal(err, rep.Mode, rep.Checks)
			}
		}
	}
	e.claimsNotInGo, e.claimsUnchecked = false, false
	for _, w := range ways {
		b.ReportMetric(medianMs(w.cp), w.name+"-cpu-ms")
		b.ReportMetric(medianMs(w.wall), w.name+"-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPageClaimsInGo audits one file pyarrow wrote with its page
// statistics in its page headers (its default), 40 BIGINT columns of 8
// row groups of 50 rows, PLAIN (TestPageClaimsOfAColumnAmongManyAreCompared's
// honest file), on one engine two ways, audit by audit in an order drawn
// anew: claims settled in Go where they can be, and all left to DuckDB.
// The memo is dropped before each audit, so each reads the file's claims.
func BenchmarkPageClaimsInGo(b *testing.B) {
	python, err := testPython()
	if err != nil {
		b.Skipf("needs pyarrow (scripts/pyenv.sh): %v", err)
	}
	src := newDirSource(b)
	if err := os.MkdirAll(filepath.Join(src.root, "main"), 0o755); err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		b.Fatal(err)
	}
	script := `import sys, pyarrow as pa, pyarrow.parquet as pq
n = 8 * 50
pq.write_table(pa.table({f"c{j}": pa.array([i * 1000 + j for i in range(n)], pa.int64()) for j in range(40)}), sys.argv[1], row_group_size=50, use_dictionary=False)`
	if out, err := exec.Command(python, "-c", script, dst).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	e := newEngine(b, src, "")
	req := Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "c", Kind: KindNotNull, Table: "t", Column: "c0"}}}}
	ways := []struct {
		name     string
		notInGo  bool
		wall, cp []time.Duration
	}{{name: "go"}, {name: "duckdb", notInGo: true}}
	rnd := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, k := range rnd.Perm(len(ways)) {
			w := &ways[k]
			e.claimsNotInGo = w.notInGo
			if e.memo != nil {
				e.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
			}
			start, c0 := time.Now(), processCPU()
			rep, err := e.Run(context.Background(), req)
			w.wall, w.cp = append(w.wall, time.Since(start)), append(w.cp, processCPU()-c0)
			if err != nil || !rep.Passed {
				b.Fatal(err, rep.Checks)
			}
		}
	}
	e.claimsNotInGo = false
	for _, w := range ways {
		b.ReportMetric(medianMs(w.cp), w.name+"-cpu-ms")
		b.ReportMetric(medianMs(w.wall), w.name+"-ms")
	}
	b.ReportMetric(0, "ns/op")
}
