package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// manyFilesRows is the rows of the batch and of each earlier file in
// BenchmarkAuditManyFiles: small files, so that what grows with the table
// is the audit's work per file, not its reading.
const manyFilesRows = 1000

// manyFilesLake is growingLake with files earlier files of manyFilesRows
// distinct ids each (written by one partitioned COPY), under commit ids,
// as lakeFS names them: the engine keeps their listings as it does in the
// daemon.
func manyFilesLake(b *testing.B, files int) (*lakeSim, Suite, string, string) {
	b.Helper()
	root := filepath.Join(os.TempDir(), "lakewap-manyfiles-bench-v2")
	lake := &lakeSim{dirSource: &dirSource{root: root, downloads: map[string]int{}, sums: map[string]string{}}, commits: map[string]CommitInfo{}}
	base, sealed, head, prev := cid(fmt.Sprint("b", files)), cid(fmt.Sprint("s", files)), cid(fmt.Sprint("c", files)), cid(fmt.Sprint("a", files))
	rows := func(from, to int) string {
		return fmt.Sprintf(`SELECT i AS id, (i %% 50000)::INTEGER AS customer_id, (hash(i) %% 10000) / 100.0 AS amount,
			CASE WHEN i %% 2 = 0 THEN 'open' ELSE 'paid' END AS status FROM range(%d, %d) r(i)`, from, to)
	}
	if _, err := os.Stat(filepath.Join(root, head, "done")); err != nil {
		for _, ref := range []string{base, sealed, head} {
			os.RemoveAll(filepath.Join(root, ref))
		}
		dir := filepath.Join(root, base, "gold", "billing")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		copySQL(b, fmt.Sprintf("COPY (SELECT *, id // %d AS part FROM (%s)) TO %s (FORMAT parquet, PARTITION_BY (part))",
			manyFilesRows, rows(0, files*manyFilesRows), quoteLiteral(dir)))
		lake.branch(b, base, sealed)
		lake.write(b, sealed, fmt.Sprintf("gold/billing/part=%d/batch.parquet", files), rows(files*manyFilesRows, (files+1)*manyFilesRows))
		lake.branch(b, base, head)
		os.WriteFile(filepath.Join(root, head, "done"), nil, 0o644)
	}
	suite := Suite{Tables: []Table{{Name: "billing", Path: "gold/billing/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "billing", Column: "id"},
		{Kind: KindUnique, Table: "billing", Column: "id"},
		{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(0), Max: f64(100)},
		{Kind: KindRowCount, Table: "billing", Min: f64(1)},
	}}
	lake.commit(prev, []string{base}, nil)
	lake.commit(base, nil, nil)
	text, err := NewAttestation("billing", suite, passingReport(suite), prev, base).Encode(nil)
	if err != nil {
		b.Fatal(err)
	}
	lake.commit(head, []string{base, prev}, map[string]string{MetaAttestation: text})
	lake.commit(sealed, []string{head}, nil)
	return lake, suite, sealed, head
}

// seqLake is a lake in memory for BenchmarkAuditManyFiles: commits with
// their listings (sorted by path), and the files' bytes in local files
// by address. Its answers cost next to nothing, so the benchmark measures
// the engine.
type seqLake struct {
	objs    map[string][]Object // commit -> listing
	commits map[string]CommitInfo
	local   map[string]string // address -> local file
	diffs   map[string][]Object
	bases   map[[2]string]string
	changed map[string]Object // commit -> the one object it changed against its first parent
}

func (l *seqLake) under(ref, prefix string) []Object {
	all := l.objs[ref]
	i := sort.Search(len(all), func(i int) bool { return all[i].Path >= prefix })
	j := i + sort.Search(len(all)-i, func(j int) bool { return !strings.HasPrefix(all[i+j].Path, prefix) })
	return all[i:j]
}

func (l *seqLake) List(_ context.Context, _, ref, prefix string) ([]Object, error) {
	return slices.Clone(l.under(ref, prefix)), nil
}

func (l *seqLake) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	key := base + "\x00" + ref + "\x00" + prefix
	if d, ok := l.diffs[key]; ok {
		return slices.Clone(d), nil
	}
	mb, err := l.MergeBase(ctx, repo, ref, base)
	if err != nil {
		return nil, err
	}
	if o, ok := l.changed[ref]; ok && len(l.commits[ref].Parents) > 0 && l.commits[ref].Parents[0] == mb {
		if strings.HasPrefix(o.Path, prefix) {
			return []Object{o}, nil
		}
		return nil, nil
	}
	was := map[string]string{}
	for _, o := range l.under(mb, prefix) {
		was[o.Path] = o.Checksum
	}
	var out []Object
	for _, o := range l.under(ref, prefix) {
		if was[o.Path] != o.Checksum {
			out = append(out, o)
		}
	}
	l.diffs[key] = out
	return slices.Clone(out), nil
}

func (l *seqLake) Download(_ context.Context, _, ref, path string, w io.Writer) error {
	objs := l.objs[ref]
	i := sort.Search(len(objs), func(i int) bool { return objs[i].Path >= path })
	if i == len(objs) || objs[i].Path != path {
		return fmt.Errorf("%s not at %s", path, ref)
	}
	f, err := os.Open(l.local[objs[i].Address])
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func (l *seqLake) MergeBase(ctx context.Context, repo, a, b string) (string, error) {
	if mb, ok := l.bases[[2]string{a, b}]; ok {
		return mb, nil
	}
	mb, err := l.mergeBase(a, b)
	if err == nil {
		l.bases[[2]string{a, b}] = mb
	}
	return mb, err
}

func (l *seqLake) mergeBase(a, b string) (string, error) {
	walk := func(from string, visit func(string) bool) {
		seen := map[string]bool{from: true}
		for q := []string{from}; len(q) > 0; q = q[1:] {
			if visit(q[0]) {
				return
			}
			for _, p := range l.commits[q[0]].Parents {
				if !seen[p] {
					seen[p] = true
					q = append(q, p)
				}
			}
		}
	}
	ofA := map[string]bool{}
	walk(a, func(c string) bool { ofA[c] = true; return false })
	base := ""
	walk(b, func(c string) bool { base = c; return ofA[c] })
	if ofA[base] {
		return base, nil
	}
	return "", fmt.Errorf("no merge-base of %s and %s", a, b)
}

func (l *seqLake) Commit(_ context.Context, _, ref string) (CommitInfo, error) {
	c, ok := l.commits[ref]
	if !ok {
		return CommitInfo{}, fmt.Errorf("no commit %s", ref)
	}
	return c, nil
}

// with is ref's listing with o added (or replacing its path), as a new
// commit id of parents.
func (l *seqLake) with(name string, ref string, o Object, parents []string, meta map[string]string) string {
	id := cid(name)
	objs := slices.Clone(l.objs[ref])
	i, found := sort.Find(len(objs), func(i int) int { return strings.Compare(o.Path, objs[i].Path) })
	if found {
		objs[i] = o
	} else {
		objs = slices.Insert(objs, i, o)
	}
	l.objs[id] = objs
	l.changed[id] = o
	l.commits[id] = CommitInfo{ID: id, Parents: parents, Metadata: meta}
	return id
}

// manyFilesFiles writes n files of manyFilesRows distinct ids each (file i
// ids from from+i*manyFilesRows), once, kept in the temp dir: by one
// partitioned COPY, part=<i>/data_0.parquet.
func manyFilesFiles(b *testing.B, n, from int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lakewap-manyfiles-bench-v3-%d-%d", n, from))
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		copySQL(b, fmt.Sprintf(`COPY (SELECT *, (id - %d) // %d AS part FROM (%s)) TO %s (FORMAT parquet, PARTITION_BY (part))`,
			from, manyFilesRows, growingBillingRows(from, from+n*manyFilesRows), quoteLiteral(dir)))
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	}
	return dir
}

// BenchmarkAuditManyFiles is the audit work of a stream of batches into
// one table of 64, 1,024 or 4,096 earlier files, as the daemon does it at
// 8 in flight: each batch (one new file of 1,000 new rows) branches from
// the target one publish behind its head, is audited against that
// foundation (incremental: the foundation is an attested publish) and
// checked again onto the head before its merge (Request.Onto), and its
// merge, attested with that verdict, is the next head. Four checks over
// the whole table: not_null, unique, range and row_count. Files are small
// (1,000 rows), so that what grows with the table is the audit's work per
// file of the table, not its reading. The lake is in memory (seqLake):
// the engine is what is measured. p50-ms is one batch's two audits; its
// cost should follow the batch, not the table: p50 at 4,096 files near
// p50 at 64.
func BenchmarkAuditManyFiles(b *testing.B) {
	const maxBatches = 400
	batches := manyFilesFiles(b, maxBatches, 1<<30) // ids beyond every table's
	for _, files := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			dir := manyFilesFiles(b, files, 0)
			lake := &seqLake{objs: map[string][]Object{}, commits: map[string]CommitInfo{}, local: map[string]string{}, diffs: map[string][]Object{},
				bases: map[[2]string]string{}, changed: map[string]Object{}}
			object := func(local, path string) Object {
				st, err := os.Stat(local)
				if err != nil {
					b.Fatal(err)
				}
				addr := "local://" + local
				lake.local[addr] = local
				return Object{Path: path, Checksum: cid(local)[:32], Address: addr, Size: st.Size()}
			}
			suite := billingSuite()
			// The table's first head: the files, an attested publish.
			var table []Object
			for i := range files {
				table = append(table, object(filepath.Join(dir, fmt.Sprintf("part=%d", i), "data_0.parquet"), fmt.Sprintf("gold/billing/part=%d/data_0.parquet", i)))
			}
			slices.SortFunc(table, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
			root, prev := cid("root"), cid("prev")
			lake.objs[root], lake.commits[root] = nil, CommitInfo{ID: root}
			lake.objs[prev], lake.commits[prev] = table, CommitInfo{ID: prev, Parents: []string{root}}
			text, err := NewAttestation("billing", suite, passingReport(suite), prev, root).Encode(nil)
			if err != nil {
				b.Fatal(err)
			}
			head := cid("h0")
			lake.objs[head], lake.commits[head] = table, CommitInfo{ID: head, Parents: []string{root, prev}, Metadata: map[string]string{MetaAttestation: text}}
			heads := []string{head}

			e, err := New(Options{Source: lake, WorkDir: b.TempDir(), CacheDir: b.TempDir(), History: lake})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			k := 0
			// batch audits batch k (its file is the k-th of batches, at
			// part=<files+k>) and publishes it.
			batch := func() time.Duration {
				if k == maxBatches {
					b.Fatalf("more than %d batches", maxBatches)
				}
				h := heads[len(heads)-1]
				f := heads[max(0, len(heads)-2)] // one publish behind
				path := fmt.Sprintf("gold/billing/part=%d/data_0.parquet", files+k)
				o := object(filepath.Join(batches, fmt.Sprintf("part=%d", k), "data_0.parquet"), path)
				sealed := lake.with(fmt.Sprint("s", files, "-", k), f, o, []string{f}, nil)
				req := Request{Dataset: "billing", Suite: suite, Repository: "r", Ref: sealed, BaseRef: f, BaseName: "main", BatchTime: batchTime}
				start := time.Now()
				rep, err := e.Run(ctx, req)
				if err == nil && rep.Passed && f != h {
					req.BaseRef, req.Onto = h, true
					rep, err = e.Run(ctx, req)
				}
				took := time.Since(start)
				if err != nil || !rep.Passed {
					b.Fatal(err, rep.Failed())
				}
				if k > 1 && rep.Mode != ModeIncremental {
					b.Fatalf("batch %d: mode %s (%s)", k, rep.Mode, rep.ModeReason)
				}
				text, err := NewAttestation("billing", suite, rep, sealed, h).Encode(nil)
				if err != nil {
					b.Fatal(err)
				}
				heads = append(heads, lake.with(fmt.Sprint("h", files, "-", k), h, o, []string{h, sealed}, map[string]string{MetaAttestation: text}))
				k++
				return took
			}
			for range 3 { // the first reads every file for its statistics
				batch()
			}
			var took []time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				took = append(took, batch())
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			want := fmt.Sprintf("%d rows", (files+k)*manyFilesRows)
			if got := lake.objs[heads[len(heads)-1]]; len(got) != files+k {
				b.Fatalf("head holds %d files, want %d (%s)", len(got), files+k, want)
			}
		})
	}
}
