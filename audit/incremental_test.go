package audit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// lakeSim is a lakeFS stand-in with a commit graph: every ref is a
// directory of dirSource (a whole snapshot), and commits have parents and
// metadata. Changed is lakeFS's three-dot diff: ref against its merge-base
// with base.
type lakeSim struct {
	*dirSource
	commits map[string]CommitInfo
	n       int
	// ids makes next name commits by commit ids (cid).
	ids bool
	// own is lakewap's user as lakeFS names its merges' committer
	// (OwnCommitter); "" leaves committers uncompared.
	own string
}

// OwnCommitter is the lake's lakewap user (audit.OwnUser).
func (l *lakeSim) OwnCommitter(context.Context) (string, error) { return l.own, nil }

func newLakeSim(t *testing.T) *lakeSim {
	return &lakeSim{dirSource: newDirSource(t), commits: map[string]CommitInfo{}}
}

func (l *lakeSim) commit(ref string, parents []string, meta map[string]string) {
	l.commits[ref] = CommitInfo{ID: ref, Parents: parents, Metadata: meta}
}

func (l *lakeSim) next(prefix string) string {
	l.n++
	if l.ids {
		return cid(fmt.Sprintf("%s%03d", prefix, l.n))
	}
	return fmt.Sprintf("%s%03d", prefix, l.n)
}

func (l *lakeSim) ancestors(ref string) map[string]int {
	depth := map[string]int{ref: 0}
	queue := []string{ref}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, p := range l.commits[c].Parents {
			if _, ok := depth[p]; !ok {
				depth[p] = depth[c] + 1
				queue = append(queue, p)
			}
		}
	}
	return depth
}

func (l *lakeSim) MergeBase(_ context.Context, _, a, b string) (string, error) {
	da, db := l.ancestors(a), l.ancestors(b)
	best, bestDepth := "", -1
	for c, d := range db {
		if _, ok := da[c]; ok && (bestDepth < 0 || d < bestDepth) {
			best, bestDepth = c, d
		}
	}
	if best == "" {
		return "", errors.New("no merge-base")
	}
	return best, nil
}

func (l *lakeSim) Commit(_ context.Context, _, ref string) (CommitInfo, error) {
	c, ok := l.commits[ref]
	if !ok {
		return CommitInfo{}, fmt.Errorf("no commit %s", ref)
	}
	return c, nil
}

func (l *lakeSim) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	mb, err := l.MergeBase(ctx, repo, ref, base)
	if err != nil {
		return nil, err
	}
	return l.dirSource.Changed(ctx, repo, mb, ref, prefix)
}

// mergeDirs makes dst what merging sealed (made from foundation) into
// target leaves: the target's files with the sealed commit's changes.
func (l *lakeSim) mergeDirs(t testing.TB, foundation, sealed, target, dst string) {
	t.Helper()
	l.branch(t, target, dst)
	ctx := context.Background()
	f, _ := l.dirSource.List(ctx, "r", foundation, "")
	s, _ := l.dirSource.List(ctx, "r", sealed, "")
	inS := map[string]Object{}
	for _, o := range s {
		inS[o.Path] = o
	}
	for _, o := range f {
		if _, ok := inS[o.Path]; !ok {
			os.Remove(filepath.Join(l.root, dst, filepath.FromSlash(o.Path)))
		}
	}
	was := map[string]string{}
	for _, o := range f {
		was[o.Path] = o.Checksum
	}
	for _, o := range s {
		if was[o.Path] != o.Checksum {
			b, err := os.ReadFile(filepath.Join(l.root, sealed, filepath.FromSlash(o.Path)))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(l.root, dst, filepath.FromSlash(o.Path))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (l *lakeSim) files(t *testing.T, ref string) []string {
	objs, err := l.dirSource.List(context.Background(), "r", ref, "data/t/")
	if err != nil {
		t.Fatal(err)
	}
	return each(objs, func(o Object) string { return o.Path })
}

// diffSuite is the differential test's suite: every kind with an
// incremental plan, with and without where conditions, one that stays
// full (custom SQL, a volatile where) and a warning.
func diffSuite(variant int) Suite {
	checks := []Check{
		{Kind: KindNotNull, Table: "t", Column: "id"},
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Name: "region_id_unique", Kind: KindUnique, Table: "t", Columns: []string{"region", "id"}},
		{Kind: KindAcceptedValues, Table: "t", Column: "currency", Values: []string{"EUR", "USD"}, Severity: SeverityWarn},
		{Kind: KindRange, Table: "t", Column: "amount", Min: f64(0), Max: f64(1000)},
		{Name: "a_amount", Kind: KindRange, Table: "t", Column: "amount", Min: f64(1), Where: "region = 'a'", Severity: SeverityWarn},
		{Name: "max_amount", Kind: KindStat, Table: "t", Column: "amount", Stat: StatMax, Max: f64(990)},
		{Name: "min_amount", Kind: KindStat, Table: "t", Column: "amount", Stat: StatMin, Min: f64(0), Max: f64(400), Severity: SeverityWarn},
		{Kind: KindRowCount, Table: "t", Min: f64(1)},
		{Name: "b_rows", Kind: KindRowCount, Table: "t", Max: f64(5000), Where: "region = 'b'"},
		{Kind: KindVolumeChange, Table: "t", MaxGrowthPct: f64(900), Severity: SeverityWarn},
		{Kind: KindRegex, Table: "t", Column: "currency", Pattern: "^[A-Z]{3}$"},
		{Name: "recent_not_null", Kind: KindNotNull, Table: "t", Column: "region", Where: "now() > TIMESTAMP '2000-01-01' AND id % 7 = 0", Severity: SeverityWarn},
		// Files without region (review 53's steps) read it as the
		// table's VARCHAR NULLs, which typeof tells from untyped ones
		// (review 62).
		{Name: "typed_region", Kind: KindRowCount, Table: "t", Max: f64(100000), Where: "typeof(region) = 'VARCHAR'"},
	}
	switch variant % 3 {
	case 1:
		checks[4].Max = f64(995)
		checks = append(checks, Check{Name: "no_huge", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE amount > 999"})
	case 2:
		checks = slices.Delete(checks, 3, 4)
	}
	return Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: checks}
}

type diffHistory struct {
	t      *testing.T
	lake   *lakeSim
	rng    *rand.Rand
	head   string
	nextID int
	liveID []int
	suite  int
	file   int
	// steps, when set, draws the steps review 53 added (files without a
	// column, files moved, copied, or removed and added again at their
	// path), apart from rng so that the histories before them stay.
	steps *rand.Rand
	// removed are files batches removed, with their bytes, for a later
	// batch to add again at the same path.
	removed [][2]string
	// took counts the steps review 53 added that were taken, by name.
	took map[string]int
	// plain, when set, is an engine without the query memo: compare also
	// runs every audit on it and wants the same report, every figure,
	// message and sample, as the engine with the memo.
	plain *Engine
	// published is the report of the last publish merge made: what a
	// forger copies the checks of (handStep).
	published schemas.AuditReport
}

// rowsSQL is a file of n rows with new ids; sometimes (a file in four) one
// row is bad: an id already in the table (a duplicate), a NULL id, a
// negative or huge amount, a currency off the list.
func (h *diffHistory) rowsSQL(n int) string {
	var vals []string
	flaw, at := h.rng.IntN(20), h.rng.IntN(n)
	for i := range n {
		id := fmt.Sprint(h.nextID)
		h.liveID = append(h.liveID, h.nextID)
		h.nextID++
		amount := fmt.Sprintf("%d.5", 1+h.rng.IntN(980))
		cur := []string{"'EUR'", "'USD'"}[h.rng.IntN(2)]
		// A NULL of the column's type: a file whose regions are all NULL
		// would give the column another (INTEGER), and the table's audits
		// would be full (schemaagree.go).
		region := []string{"'a'", "'b'", "'c'", "NULL::VARCHAR"}[h.rng.IntN(4)]
		if i == at {
			switch flaw {
			case 0, 1:
				id = fmt.Sprint(h.liveID[h.rng.IntN(len(h.liveID))])
			case 2:
				id = "NULL"
			case 3:
				amount = "-3.0"
			case 4:
				amount = "999.5"
			case 5:
				cur = "'GBP'"
			case 6:
				cur = "'eu'"
			}
		}
		vals = append(vals, fmt.Sprintf("(%s::BIGINT, %s, %s, %s::DOUBLE)", id, region, cur, amount))
	}
	q := "SELECT * FROM (VALUES " + strings.Join(vals, ", ") + ") v(id, region, currency, amount)"
	if h.steps != nil && h.steps.IntN(10) == 0 {
		// A writer that does not write an optional column: the table
		// reads NULL there (review 53: the batch's view had no such
		// column and its incremental checks erred).
		q = "SELECT * EXCLUDE (" + []string{"region", "currency"}[h.steps.IntN(2)] + ") FROM (" + q + ")"
		h.took["without a column"]++
	}
	return q
}

func (h *diffHistory) newFile(ref string) {
	h.file++
	h.lake.write(h.t, ref, fmt.Sprintf("data/t/part-%04d.parquet", h.file), h.rowsSQL(1+h.rng.IntN(40)))
}

// batch makes a batch branch from the head: new files, and sometimes an
// old file overwritten or deleted.
func (h *diffHistory) batch() string {
	s := h.lake.next("s")
	h.lake.branch(h.t, h.head, s)
	h.lake.commit(s, []string{h.head}, nil)
	for range 1 + h.rng.IntN(2) {
		h.newFile(s)
	}
	old := h.lake.files(h.t, h.head)
	if len(old) > 0 && h.rng.IntN(5) == 0 {
		p := old[h.rng.IntN(len(old))]
		h.lake.write(h.t, s, p, h.rowsSQL(1+h.rng.IntN(20))) // overwritten
	}
	if len(old) > 1 && h.rng.IntN(6) == 0 {
		p := old[h.rng.IntN(len(old))]
		if slices.Contains(h.lake.files(h.t, s), p) {
			h.removed = append(h.removed, [2]string{p, string(h.read(s, p))})
			h.lake.remove(h.t, s, p)
		}
	}
	if h.steps == nil || len(old) == 0 {
		return s
	}
	// Review 53's steps: the same bytes at another path keep their
	// physical address (lakeFS's copy within a repository), so the
	// statistics and the download cache take them by address.
	p := old[h.steps.IntN(len(old))]
	switch x := h.steps.IntN(12); {
	case x == 0 && slices.Contains(h.lake.files(h.t, s), p):
		// moved into another folder (its rows are the batch's again)
		h.file++
		h.put(s, fmt.Sprintf("data/t/moved/part-%04d.parquet", h.file), h.read(s, p))
		h.lake.remove(h.t, s, p)
		h.took["moved"]++
	case x == 1 && slices.Contains(h.lake.files(h.t, s), p):
		// copied: every key of the file twice
		h.file++
		h.put(s, fmt.Sprintf("data/t/part-%04d.parquet", h.file), h.read(s, p))
		h.took["copied"]++
	case x == 2 && len(h.removed) > 0:
		// a file removed earlier added again at its path, with its bytes
		r := h.removed[h.steps.IntN(len(h.removed))]
		h.put(s, r[0], []byte(r[1]))
		h.took["added again"]++
	}
	return s
}

func (h *diffHistory) read(ref, path string) []byte {
	b, err := os.ReadFile(filepath.Join(h.lake.root, ref, filepath.FromSlash(path)))
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

func (h *diffHistory) put(ref, path string, b []byte) {
	p := filepath.Join(h.lake.root, ref, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// statsHistory is a history on a lake whose root commit holds files (path,
// then the query writing it, in pairs), and an engine over it that keeps
// statistics records and reads commit ids.
func statsHistory(t *testing.T, files ...string) (*Engine, *diffHistory) {
	lake := newLakeSim(t)
	lake.ids = true
	root := cid("c000")
	lake.commit(root, nil, nil)
	for i := 0; i+1 < len(files); i += 2 {
		lake.write(t, root, files[i], files[i+1])
	}
	e, err := New(Options{Source: lake, WorkDir: t.TempDir(), CacheDir: t.TempDir(), History: lake, StatsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, &diffHistory{t: t, lake: lake, rng: rand.New(rand.NewPCG(1, 2)), head: root, nextID: 1}
}

// audited audits, through compare, a batch of dataset on a branch of h's
// head that removes the paths of remove and writes query's rows at add
// (its "?" the branch's id). It returns the report and the branch's commit.
func (h *diffHistory) audited(e *Engine, dataset string, suite Suite, remove []string, add, query string) (schemas.AuditReport, string) {
	s := h.lake.next("s")
	h.lake.branch(h.t, h.head, s)
	for _, p := range remove {
		h.lake.remove(h.t, s, p)
	}
	h.lake.commit(s, []string{h.head}, nil)
	h.lake.write(h.t, s, strings.ReplaceAll(add, "?", s[:8]), query)
	return h.compare(e, Request{Dataset: dataset, Suite: suite, Repository: "r", Ref: s, BaseRef: h.head, BaseName: "main", BatchTime: batchTime}), s
}

// compare runs req full and as it comes, and fails the test when the
// verdicts or figures differ. It returns the report of the latter.
func (h *diffHistory) compare(e *Engine, req Request) schemas.AuditReport {
	h.t.Helper()
	ctx := context.Background()
	inc, err := e.Run(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	full := req
	full.Full = true
	want, err := e.Run(ctx, full)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.plain != nil {
		for _, pair := range [][2]Request{{req, req}, {full, full}} {
			memo := map[bool]schemas.AuditReport{false: inc, true: want}[pair[0].Full]
			plain, err := h.plain.Run(ctx, pair[1])
			if err != nil {
				h.t.Fatal(err)
			}
			sameReport(h.t, fmt.Sprintf("%s onto=%v full=%v", req.Ref, req.Onto, pair[0].Full), memo, plain)
		}
	}
	if want.Mode != ModeFull {
		h.t.Fatalf("a full audit ran %q", want.Mode)
	}
	if inc.Passed != want.Passed || len(inc.Checks) != len(want.Checks) {
		h.t.Fatalf("%s onto=%v: incremental passed=%v, full passed=%v\n%+v\n%+v", req.Ref, req.Onto, inc.Passed, want.Passed, inc.Checks, want.Checks)
	}
	for i := range want.Checks {
		a, b := inc.Checks[i], want.Checks[i]
		if a.Status != b.Status || a.Observed != b.Observed || a.Threshold != b.Threshold ||
			fmt.Sprint(deref(a.RowsChecked)) != fmt.Sprint(deref(b.RowsChecked)) || fmt.Sprint(deref(a.Failures)) != fmt.Sprint(deref(b.Failures)) {
			h.t.Fatalf("%s (%s, onto=%v) check %s: incremental %s %q (%s) rows %v failures %v, full %s %q (%s) rows %v failures %v\n%s", req.Ref, inc.Mode, req.Onto, b.Name,
				a.Status, a.Observed, a.Message, deref(a.RowsChecked), deref(a.Failures), b.Status, b.Observed, b.Message, deref(b.RowsChecked), deref(b.Failures), h.lake.files(h.t, req.Ref))
		}
		if a.Status == schemas.StatusFail && b.Kind == KindUnique && !slices.Equal(a.SampleRows, b.SampleRows) {
			h.t.Fatalf("check %s: incremental samples %v, full %v", b.Name, a.SampleRows, b.SampleRows)
		}
	}
	return inc
}

// sameReport fails the test unless the memoized engine's report a is the
// plain engine's b: mode, verdict, and every check's status, figures,
// message and sample rows.
func sameReport(t testing.TB, what string, a, b schemas.AuditReport) {
	t.Helper()
	if a.Mode != b.Mode || a.ModeReason != b.ModeReason || a.Passed != b.Passed || len(a.Checks) != len(b.Checks) {
		t.Fatalf("%s: with the memo %s %q passed=%v %d checks, without %s %q passed=%v %d checks", what,
			a.Mode, a.ModeReason, a.Passed, len(a.Checks), b.Mode, b.ModeReason, b.Passed, len(b.Checks))
	}
	for i := range a.Checks {
		x, y := a.Checks[i], b.Checks[i]
		show := func(c schemas.CheckResult) string {
			rows, failures := deref(c.RowsChecked), deref(c.Failures)
			c.DurationMs, c.RowsChecked, c.Failures = 0, nil, nil
			return fmt.Sprintf("%+v rows %v failures %v", c, rows, failures)
		}
		if show(x) != show(y) {
			t.Fatalf("%s: check %s with the memo %s, without %s", what, x.Name, show(x), show(y))
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// publish merges sealed (made from foundation) onto the head with the
// attestation of rep.
func (h *diffHistory) publish(foundation, sealed string, rep schemas.AuditReport) {
	h.merge(foundation, sealed, "d", diffSuite(h.suite), rep)
}

// merge merges sealed (made from foundation) onto the head with lakewap's
// attestation of rep, dataset's audit under suite, and moves the head to
// the merge.
func (h *diffHistory) merge(foundation, sealed, dataset string, suite Suite, rep schemas.AuditReport) {
	m := h.lake.next("c")
	h.lake.mergeDirs(h.t, foundation, sealed, h.head, m)
	text, err := NewAttestation(dataset, suite, rep, sealed, h.head).Encode(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.lake.commit(m, []string{h.head, sealed}, map[string]string{MetaAttestation: text})
	h.lake.commits[m] = withCommitter(h.lake.commits[m], h.lake.own)
	h.head = m
	if dataset == "d" {
		h.published = rep
	}
}

func withCommitter(c CommitInfo, who string) CommitInfo {
	c.Committer = who
	return c
}

// handStep is one of review 63's steps on h's target, taken by a person
// (committer "alice", not lakewap's user) and drawn from r: a lakectl-like
// revert of one of the last commits (one parent, the head; sometimes
// carrying the reverted commit's metadata), a hand merge of a side branch
// with a file of new rows (no attestation, or one forged in lakewap's form
// for the merge's own parents, which only the committer tells apart), or a
// hand merge carrying an attestation copied from an earlier publish. It
// returns the step's name and the paths it planted in the table.
func (h *diffHistory) handStep(r *rand.Rand, recent []string) (string, []string) {
	l, ctx := h.lake, context.Background()
	c := l.next("c")
	switch r.IntN(3) {
	case 0: // revert: the head with one recent commit's changes undone
		var picks []string
		for _, x := range recent {
			if len(l.commits[x].Parents) > 0 {
				picks = append(picks, x)
			}
		}
		if len(picks) == 0 {
			return "", nil
		}
		rv := picks[r.IntN(len(picks))]
		was := l.commits[rv]
		before, _ := l.dirSource.List(ctx, "r", was.Parents[0], "")
		after, _ := l.dirSource.List(ctx, "r", rv, "")
		now, _ := l.dirSource.List(ctx, "r", h.head, "")
		sums := func(objs []Object) map[string]string {
			m := map[string]string{}
			for _, o := range objs {
				m[o.Path] = o.Checksum
			}
			return m
		}
		b, a, n := sums(before), sums(after), sums(now)
		l.branch(h.t, h.head, c)
		for p := range union(a, b) {
			if a[p] == b[p] || n[p] != a[p] {
				continue // unchanged by the commit, or changed since: left as it is
			}
			if b[p] == "" {
				l.remove(h.t, c, p)
			} else {
				h.put(c, p, h.read(was.Parents[0], p))
			}
		}
		meta := map[string]string{}
		if r.IntN(2) == 0 {
			meta = was.Metadata
		}
		l.commit(c, []string{h.head}, meta)
		l.commits[c] = withCommitter(l.commits[c], "alice")
		h.head = c
		return "revert", nil
	default: // a hand merge of a side branch from a recent commit
		from := recent[r.IntN(len(recent))]
		side := l.next("s")
		l.branch(h.t, from, side)
		l.commit(side, []string{from}, nil)
		h.newFile(side) // may hold an id already in the table, or a bad row
		planted := []string{fmt.Sprintf("data/t/part-%04d.parquet", h.file)}
		foundation, err := l.MergeBase(ctx, "r", side, h.head)
		if err != nil {
			h.t.Fatal(err)
		}
		l.mergeDirs(h.t, foundation, side, h.head, c)
		meta, name := map[string]string{}, "hand merge"
		switch r.IntN(3) {
		case 0: // lakewap's form, for the merge's own parents, with a publish's checks
			text, err := NewAttestation("d", diffSuite(h.suite), h.published, side, h.head).Encode(nil)
			if err != nil {
				h.t.Fatal(err)
			}
			meta, name = map[string]string{MetaAttestation: text}, "forged attestation"
		case 1: // copied from an earlier publish
			for _, x := range slices.Backward(recent) {
				if m := l.commits[x].Metadata; m[MetaAttestation] != "" {
					meta, name = m, "copied attestation"
					break
				}
			}
		}
		l.commit(c, []string{h.head, side}, meta)
		l.commits[c] = withCommitter(l.commits[c], "alice")
		h.head = c
		return name, planted
	}
}

func union(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// TestIncrementalEqualsFull is the differential test of incremental audits:
// on randomized histories of one table (batches adding files, overwriting
// and deleting old ones; duplicates, NULLs and bad values in some batches;
// targets that move between a batch's audit and its merge; direct commits
// that plant duplicates or delete files, without an attestation or with one
// copied from another commit; other datasets' attested publishes into the
// same target, some of which also wrote this dataset's table; suite
// changes; an engine that starts with an empty statistics store; from seed
// 63 a person's lakectl-like reverts, hand merges without lakewap's
// committer, with an attestation forged in lakewap's form or copied from a
// publish, each followed by a batch audited on it, which must be full),
// every audit is run as it comes (incremental
// when the foundation's attestation allows) and full, and every check's
// status and figures must be the same.
//
// Commits are named by commit ids: the memo keys only files read at a
// commit. Seed 3 runs without a download cache: the memo then keys the
// files read at a commit by the addresses its listing gives.
func TestIncrementalEqualsFull(t *testing.T) {
	// Seeds past 3 take review 53's steps too (diffHistory.steps).
	// Seeds from 63 take review 63's too (handStep).
	for _, seed := range []uint64{0, 1, 2, 3, 6, 10, 64, 68, 71, 74} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			lake := newLakeSim(t)
			cacheDir := func() string { return t.TempDir() }
			lake.ids = true
			root := cid("c000")
			if seed == 3 {
				cacheDir = func() string { return "" }
			}
			h := &diffHistory{t: t, lake: lake, rng: rand.New(rand.NewPCG(seed, 21)), head: root, nextID: 1}
			if seed >= 4 {
				h.steps, h.took = rand.New(rand.NewPCG(seed, 53)), map[string]int{}
			}
			// Review 63's steps: a person's reverts and hand merges
			// (handStep), apart from rng so that the histories before them
			// stay; lakewap's merges are its user's.
			var hand *rand.Rand
			handTook := map[string]int{}
			if seed >= 63 {
				hand = rand.New(rand.NewPCG(seed, 63))
			}
			lake.own = "lakewap"
			var recent []string         // the target's last heads, newest last
			byHand := map[string]bool{} // a person's reverts and merges
			lake.commit(root, nil, nil)
			h.newFile(root)
			statsDir := t.TempDir()
			engine := func() *Engine {
				e, err := New(Options{Source: lake, WorkDir: t.TempDir(), CacheDir: cacheDir(), History: lake, StatsDir: statsDir})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Close() })
				return e
			}
			e := engine()
			// The reference: an engine without the query memo, with its
			// own statistics, asking each aggregate alone (unfused).
			plain, err := New(Options{Source: lake, WorkDir: t.TempDir(), CacheDir: cacheDir(), History: lake, StatsDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { plain.Close() })
			plain.memo, plain.unfused, plain.summaries = nil, true, nil
			h.plain = plain
			var hits, folded int64
			var incremental, full, onto, unattested, failing, afterForeign int
			foreign := map[string]bool{} // other datasets' publishes
			var planted []string
			for step := range 36 {
				if failing >= 3 {
					// A person mends the table: the files planted by hand go.
					c := lake.next("c")
					lake.branch(t, h.head, c)
					for _, p := range planted {
						if slices.Contains(lake.files(t, c), p) {
							lake.remove(t, c, p)
						}
					}
					lake.commit(c, []string{h.head}, nil)
					h.head, planted, failing = c, nil, 0
					unattested++
				}
				recent = append(recent, h.head)
				recent = recent[max(0, len(recent)-6):]
				handed := false
				if hand != nil && hand.IntN(10) == 0 {
					if name, p := h.handStep(hand, recent); name != "" {
						handTook[name]++
						planted = append(planted, p...)
						unattested++
						byHand[h.head], handed = true, true
					}
				}
				// After a person's step a batch is audited on it.
				switch x := h.rng.IntN(100); {
				case handed:
				case x < 8: // a direct commit: no attestation, or a copied one
					c := lake.next("c")
					lake.branch(t, h.head, c)
					meta := map[string]string{}
					if x < 3 {
						meta = lake.commits[h.head].Metadata
					}
					if old := lake.files(t, c); len(old) > 1 && h.rng.IntN(3) > 0 {
						lake.remove(t, c, old[h.rng.IntN(len(old))])
					} else {
						h.newFile(c) // may hold an id already in the table
						planted = append(planted, fmt.Sprintf("data/t/part-%04d.parquet", h.file))
					}
					lake.commit(c, []string{h.head}, meta)
					h.head = c
					unattested++
					continue
				case x < 16: // another dataset publishes into the same target
					sealed := lake.next("s")
					lake.branch(t, h.head, sealed)
					lake.commit(sealed, []string{h.head}, nil)
					lake.write(t, sealed, fmt.Sprintf("data/u/part-%04d.parquet", step), "SELECT 1::BIGINT AS id")
					if x < 10 {
						// ... and its batch also wrote into this dataset's table
						h.newFile(sealed)
						planted = append(planted, fmt.Sprintf("data/t/part-%04d.parquet", h.file))
					}
					other := Suite{Tables: []Table{{Name: "u", Path: "data/u/"}}, Checks: []Check{{Kind: KindRowCount, Table: "u", Min: f64(1)}}}
					text, err := NewAttestation("e", other, schemas.AuditReport{Passed: true}, sealed, h.head).Encode(nil)
					if err != nil {
						t.Fatal(err)
					}
					c := lake.next("c")
					lake.mergeDirs(t, h.head, sealed, h.head, c)
					lake.commit(c, []string{h.head, sealed}, map[string]string{MetaAttestation: text})
					lake.commits[c] = withCommitter(lake.commits[c], lake.own)
					h.head = c
					foreign[c] = true
					continue
				case x < 21:
					h.suite++
					continue
				case x < 24:
					statsDir = t.TempDir() // another instance, without the statistics
					n, _ := e.memo.stats()
					hits += n
					folded += e.foldedSummaries()
					checkKeptSummaries(t, e)
					e = engine()
				}
				s := h.batch()
				foundation := h.head
				if h.rng.IntN(4) == 0 {
					// Another batch publishes first: the target moves.
					p := h.batch()
					rep := h.compare(e, Request{Dataset: "d", Suite: diffSuite(h.suite), Repository: "r", Ref: p, BaseRef: h.head, BaseName: "main", BatchTime: batchTime})
					if rep.Passed {
						h.publish(foundation, p, rep)
					}
				}
				req := Request{Dataset: "d", Suite: diffSuite(h.suite), Repository: "r", Ref: s, BaseRef: h.head, BaseName: "main", BatchTime: batchTime}
				rep := h.compare(e, req)
				if rep.Mode == ModeIncremental && byHand[foundation] {
					t.Fatalf("step %d: the audit of a batch on a person's %s was incremental: only lakewap's attested publish is taken", step, foundation)
				}
				if rep.Mode == ModeIncremental {
					incremental++
					if foreign[req.BaseRef] {
						afterForeign++
					}
				} else {
					full++
					if rep.ModeReason == "" {
						t.Fatalf("step %d: a full audit without a reason", step)
					}
				}
				if !rep.Passed {
					failing++
					continue
				}
				failing = 0
				if foundation != h.head {
					// The recheck against the moved target.
					req.Onto = true
					rep = h.compare(e, req)
					onto++
					if !rep.Passed {
						continue
					}
				}
				h.publish(foundation, s, rep)
			}
			n, misses := e.memo.stats()
			hits += n
			folded += e.foldedSummaries()
			checkKeptSummaries(t, e)
			t.Logf("%d incremental and %d full audits compared, %d of them onto a moved target, %d onto another dataset's publish; %d direct commits; %d answers from the memo (%d misses on the last engine); %d summaries folded onto a kept one",
				incremental, full, onto, afterForeign, unattested, hits, misses, folded)
			t.Logf("review 63's steps taken: %v", handTook)
			if hand != nil && len(handTook) < 3 {
				t.Fatalf("only %v of review 63's steps were taken", handTook)
			}
			if h.steps != nil {
				t.Logf("review 53's steps taken: %v", h.took)
				if len(h.took) < 4 {
					t.Fatalf("only %v of review 53's four steps were taken", h.took)
				}
			}
			if hits == 0 {
				t.Fatal("no answer came from the query memo: the test compares nothing it memoized")
			}
			if folded == 0 {
				t.Fatal("no summary was folded onto a kept one: the test compares no summary it kept")
			}
			if afterForeign == 0 && hand == nil { // the seeds before 63 see to it
				t.Fatal("no audit onto another dataset's publish was incremental: two datasets sharing a target would make every audit full")
			}
			if incremental < full/2 {
				t.Fatalf("only %d of %d audits were incremental: the test compares too little", incremental, incremental+full)
			}
		})
	}
}

// TestReduceMinMaxOrdersAsDuckDB: the unchanged files' min and max picked
// in Go are the ones DuckDB's min() and max() would give over their
// statistics; types Go cannot order exactly, NaN and a mix of types are
// left to the query.
func TestReduceMinMaxOrdersAsDuckDB(t *testing.T) {
	cs := func(typ string, mm ...string) []colStats {
		var out []colStats
		for i := 0; i < len(mm); i += 2 {
			out = append(out, colStats{Type: typ, NonNull: 1, Min: mm[i], Max: mm[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		in     []colStats
		lo, hi string
		ok     bool
	}{
		{"bigint", cs("BIGINT", "10", "99", "-5", "7", "100", "100"), "-5", "100", true},
		{"hugeint past int64", cs("HUGEINT", "170141183460469231731687303715884105727", "170141183460469231731687303715884105727", "9", "9223372036854775808"), "9", "170141183460469231731687303715884105727", true},
		{"decimal", cs("DECIMAL(18,3)", "1.250", "9.100", "1.025", "10.000"), "1.025", "10.000", true},
		{"double, not lexical", cs("DOUBLE", "9.5", "10.5", "100.25", "2e3"), "9.5", "2e3", true},
		{"varchar bytes", cs("VARCHAR", "b", "zz", "B", "c"), "B", "zz", true},
		{"NaN", cs("DOUBLE", "1.0", "nan", "0.5", "2.0"), "", "", false},
		{"timestamp", cs("TIMESTAMP", "2026-01-01 00:00:00", "2026-01-02 00:00:00", "2025-12-31 00:00:00", "2026-01-01 00:00:00"), "", "", false},
		{"mixed", append(cs("INTEGER", "1", "2"), cs("BIGINT", "0", "5")...), "", "", false},
		{"one file", cs("BIGINT", "1", "2"), "", "", false},
	} {
		lo, hi, ok := reduceMinMax(tc.in)
		if ok != tc.ok || (ok && (lo.Min != tc.lo || hi.Max != tc.hi)) {
			t.Errorf("%s: %q %q %v, want %q %q %v", tc.name, lo.Min, hi.Max, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// checkKeptSummaries: each summary e keeps, folded or not, holds what one
// made from its files' statistics alone would: their bytes and each key
// column.
func checkKeptSummaries(t *testing.T, e *Engine) {
	t.Helper()
	e.summaries.mu.Lock()
	defer e.summaries.mu.Unlock()
	for el := e.summaries.lru.Front(); el != nil; el = el.Next() {
		s := el.Value.(*summaryEntry).s
		if want := summaryBytes(s.files, s.stats); s.statBytes != want {
			t.Fatalf("a summary of %d files counts %d bytes of statistics, its files' statistics take %d", len(s.files), s.statBytes, want)
		}
		for col, kc := range s.keys {
			fresh := keyColumnOf(col, s.stats, nil, nil)
			if !reflect.DeepEqual(kc.files, fresh.files) || kc.nonNull != fresh.nonNull || kc.wide != fresh.wide || !reflect.DeepEqual(kc.types, fresh.types) ||
				fmt.Sprint(kc.ints.lo, kc.ints.hi) != fmt.Sprint(fresh.ints.lo, fresh.ints.hi) {
				t.Fatalf("a summary of %d files holds key column %s %+v, its files' statistics give %+v", len(s.files), col, kc, fresh)
			}
		}
	}
}
