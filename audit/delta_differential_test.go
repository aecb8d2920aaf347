package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// testPython is the interpreter of the venv scripts/pyenv.sh fills (as
// cmd/lakewap's interop tests find it): $LAKEWAP_INTEROP_PYTHON, else the
// venv under $LAKEWAP_CACHE_DIR (default .cache) for the current
// tests/interop/requirements.txt, else a reason to skip.
func testPython() (string, error) {
	return venvPython("LAKEWAP_INTEROP_PYTHON", "pyvenv-", filepath.Join("tests", "interop", "requirements.txt"), "Python")
}

// venvPython is $env, else the interpreter of the venv a script of
// scripts/ fills under $LAKEWAP_CACHE_DIR (default .cache), named prefix
// and the first 12 hex digits of the sha256 of requirements (a path from
// the repository's root), when its stamp is that digest; else a reason to
// skip naming what (the venv's contents).
func venvPython(env, prefix, requirements, what string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	cache := os.Getenv("LAKEWAP_CACHE_DIR")
	if cache == "" {
		cache = filepath.Join("..", ".cache")
	}
	req, err := os.ReadFile(filepath.Join("..", requirements))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(req)
	venv := filepath.Join(cache, prefix+hex.EncodeToString(sum[:])[:12])
	stamp, err := os.ReadFile(filepath.Join(venv, ".requirements.sha256"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("no %s venv at %s", what, venv)
	case err != nil:
		return "", err
	case strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]):
		return "", fmt.Errorf("the %s venv at %s predates %s", what, venv, filepath.ToSlash(requirements))
	}
	return filepath.Abs(filepath.Join(venv, "bin", "python"))
}

// fuzzTable builds a random Delta log, honest or hostile, on ref "main" of
// a dirSource under prefix.
type fuzzTable struct {
	t       *testing.T
	rnd     *rand.Rand
	src     *dirSource
	prefix  string
	dir     string
	parted  bool
	extra   bool // the schema has gained column extra
	version int
	nextID  int
	files   int
	active  map[string]map[string]*string // path in the log -> partition values
	tricks  []string
}

func (f *fuzzTable) schema() string {
	fields := []string{`{"name":"id","type":"long","nullable":true,"metadata":{}}`}
	if f.parted {
		fields = append(fields, `{"name":"region","type":"string","nullable":true,"metadata":{}}`)
	}
	if f.extra {
		fields = append(fields, `{"name":"extra","type":"string","nullable":true,"metadata":{}}`)
	}
	return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
}

func (f *fuzzTable) meta() string {
	cols := "[]"
	if f.parted {
		cols = `["region"]`
	}
	return fmt.Sprintf(`{"metaData":{"id":"fuzz","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":%s,"configuration":{},"createdTime":1}}`,
		f.schema(), cols)
}

func (f *fuzzTable) region() map[string]*string {
	if !f.parted {
		return map[string]*string{}
	}
	v := []string{"eu", "us", "", "", "a b", "a b", "eu", "__HIVE_DEFAULT_PARTITION__"}[f.rnd.IntN(8)]
	return map[string]*string{"region": &v}
}

// newFile writes a data file of a few rows and returns its log path.
func (f *fuzzTable) newFile() string {
	f.files++
	name := fmt.Sprintf("part-%03d.parquet", f.files)
	if f.rnd.IntN(4) == 0 {
		name = fmt.Sprintf("sub dir/part %03d.parquet", f.files) // a path that needs escaping
	}
	n := 1 + f.rnd.IntN(4)
	id := "i::BIGINT"
	if f.rnd.IntN(3) == 0 {
		id = "CASE WHEN i % 2 = 0 THEN NULL ELSE i END::BIGINT"
	}
	cols := id + " AS id"
	if f.extra {
		cols += ", 'x' || i AS extra"
	}
	f.src.write(f.t, "main", f.prefix+name, fmt.Sprintf("SELECT %s FROM range(%d, %d) r(i)", cols, f.nextID, f.nextID+n))
	f.nextID += 100
	return strings.ReplaceAll(name, " ", "%20")
}

func (f *fuzzTable) size(logPath string) int64 {
	st, err := os.Stat(filepath.Join(f.src.root, "main", filepath.FromSlash(f.prefix), strings.ReplaceAll(logPath, "%20", " ")))
	if err != nil {
		return 1
	}
	return st.Size()
}

func (f *fuzzTable) add(p string, parts map[string]*string) string {
	b, _ := json.Marshal(map[string]any{"add": map[string]any{"path": p, "partitionValues": parts, "size": f.size(p),
		"modificationTime": 1, "dataChange": true}})
	return string(b)
}

func (f *fuzzTable) remove(p string) string {
	return fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":2,"dataChange":true}}`, p)
}

func (f *fuzzTable) commit(actions ...string) {
	writeDeltaCommit(f.t, f.src, "main", strings.TrimSuffix(f.prefix, "/"), f.version, actions...)
	f.version++
}

func (f *fuzzTable) pick() (string, bool) {
	if len(f.active) == 0 {
		return "", false
	}
	keys := slices.Sorted(mapsKeys(f.active))
	return keys[f.rnd.IntN(len(keys))], true
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkpoint writes a checkpoint of the latest version with these active files.
func (f *fuzzTable) checkpoint(active map[string]map[string]*string) {
	v := f.version - 1
	dst := filepath.Join(f.src.root, "main", filepath.FromSlash(f.prefix), "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", v))
	cols := "[]::VARCHAR[]"
	if f.parted {
		cols = "['region']"
	}
	rows := []string{
		`SELECT NULL::STRUCT(path VARCHAR, "partitionValues" MAP(VARCHAR, VARCHAR), size BIGINT, "modificationTime" BIGINT, "dataChange" BOOLEAN, stats VARCHAR, tags MAP(VARCHAR, VARCHAR)) AS add,
		 NULL::STRUCT(path VARCHAR, "deletionTimestamp" BIGINT, "dataChange" BOOLEAN) AS remove,
		 NULL::STRUCT(id VARCHAR, name VARCHAR, description VARCHAR, format STRUCT(provider VARCHAR, options MAP(VARCHAR, VARCHAR)), "schemaString" VARCHAR, "partitionColumns" VARCHAR[], configuration MAP(VARCHAR, VARCHAR), "createdTime" BIGINT) AS "metaData",
		 {'minReaderVersion': 1, 'minWriterVersion': 2}::STRUCT("minReaderVersion" INTEGER, "minWriterVersion" INTEGER) AS protocol`,
		fmt.Sprintf(`SELECT NULL, NULL, {'id': 'fuzz', 'name': NULL, 'description': NULL, 'format': {'provider': 'parquet', 'options': MAP {}}, 'schemaString': %s, 'partitionColumns': %s, 'configuration': MAP {}, 'createdTime': 1}, NULL`,
			quoteLiteral(f.schema()), cols),
	}
	for _, p := range slices.Sorted(mapsKeys(active)) {
		var kv []string
		for k, v := range active[p] {
			val := "NULL"
			if v != nil {
				val = quoteLiteral(*v)
			}
			kv = append(kv, quoteLiteral(k)+": "+val)
		}
		pv := "MAP {}::MAP(VARCHAR, VARCHAR)"
		if len(kv) > 0 {
			pv = "MAP {" + strings.Join(kv, ", ") + "}"
		}
		rows = append(rows, fmt.Sprintf("SELECT {'path': %s, 'partitionValues': %s, 'size': %d, 'modificationTime': 1, 'dataChange': false, 'stats': NULL, 'tags': NULL}, NULL, NULL, NULL",
			quoteLiteral(p), pv, f.size(p)))
	}
	copySQL(f.t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", strings.Join(rows, " UNION ALL "), quoteLiteral(dst)))
	writeLogFile(f.t, f.src, "main", strings.TrimSuffix(f.prefix, "/"), "_last_checkpoint", fmt.Sprintf(`{"version":%d,"size":%d}`, v, len(active)+2))
}

// build makes the table: versions of honest operations, and now and then
// a hostile one.
func (f *fuzzTable) build() {
	first, parts := f.newFile(), f.region()
	f.commit(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`, f.meta(), f.add(first, parts))
	f.active = map[string]map[string]*string{first: parts}
	versions := 2 + f.rnd.IntN(7)
	for range versions {
		switch op := f.rnd.IntN(16); op {
		case 0, 1, 2, 12, 13, 14, 15: // append
			var acts []string
			for range 1 + f.rnd.IntN(2) {
				p, parts := f.newFile(), f.region()
				acts = append(acts, f.add(p, parts))
				f.active[p] = parts
			}
			f.commit(acts...)
		case 3: // delete a file
			if p, ok := f.pick(); ok {
				delete(f.active, p)
				f.commit(f.remove(p))
			}
		case 4: // overwrite
			var acts []string
			for p := range f.active {
				acts = append(acts, f.remove(p))
			}
			f.active = map[string]map[string]*string{}
			p, parts := f.newFile(), f.region()
			f.active[p] = parts
			f.commit(append(acts, f.add(p, parts))...)
		case 5: // schema change: a new column
			if !f.extra {
				f.extra = true
				f.commit(f.meta())
			}
		case 6: // checkpoint (honest), sometimes with the commits before it cleaned up
			if f.version > 0 {
				f.checkpoint(f.active)
				if f.rnd.IntN(2) == 0 {
					for v := 0; v < f.version-1; v++ {
						os.Remove(filepath.Join(f.dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
					}
					f.tricks = append(f.tricks, "cleanup")
				}
			}
		case 7: // hostile: add and remove one path in one commit
			p := f.newFile()
			f.tricks = append(f.tricks, "add+remove")
			f.commit(f.add(p, f.region()), f.remove(p))
		case 8: // hostile: a checkpoint naming other files than the log
			if f.version > 0 {
				lie := map[string]map[string]*string{}
				p := f.newFile()
				lie[p] = f.region()
				f.tricks = append(f.tricks, "lying checkpoint")
				f.checkpoint(lie)
				f.active = lie // what a reader starting from the checkpoint has
			}
		case 9: // hostile: an active file overwritten in place
			if p, ok := f.pick(); ok {
				f.tricks = append(f.tricks, "overwrite in place")
				f.src.write(f.t, "main", f.prefix+strings.ReplaceAll(p, "%20", " "), "SELECT NULL::BIGINT AS id")
			}
		case 10: // re-adding an active path in a later version
			if p, ok := f.pick(); ok {
				f.commit(f.add(p, f.active[p]))
			}
		case 11: // a tombstone of a file that is not there
			f.commit(f.remove("never-there.parquet"))
		}
	}
}

func TestDeltaDifferentialAgainstDeltaRS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs deltalake (delta-rs) in Python; skipped with -short")
	}
	python, err := testPython()
	if err != nil {
		t.Skipf("differential test skipped: %v; scripts/pyenv.sh installs deltalake (./test.sh runs it)", err)
	}
	const tables = 60
	src := newDirSource(t)
	var builds []*fuzzTable
	var dirs []string
	for seed := range tables {
		prefix := fmt.Sprintf("t%02d/", seed)
		f := &fuzzTable{t: t, rnd: rand.New(rand.NewPCG(uint64(seed), 22)), src: src, prefix: prefix,
			dir: filepath.Join(src.root, "main", fmt.Sprintf("t%02d", seed)), parted: seed%2 == 1}
		f.build()
		builds = append(builds, f)
		dirs = append(dirs, f.dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "deltars_rows.py"))
	if err != nil {
		t.Fatal(err)
	}
	var answers []struct {
		Rows  []map[string]any `json:"rows"`
		Error string           `json:"error"`
	}
	// delta-rs (a Rust library under pyarrow) can abort the whole process on
	// a hostile log, or at interpreter exit. An abort after n answers makes
	// table n "unreadable by delta-rs" (a reader would fail, not read other
	// rows) and the script goes on from the table after it.
	for len(answers) < tables {
		cmd := exec.CommandContext(ctx, python, append([]string{script}, dirs[len(answers):]...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, runErr := cmd.Output()
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var a struct {
				Rows  []map[string]any `json:"rows"`
				Error string           `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			answers = append(answers, a)
		}
		if runErr == nil || len(answers) >= tables {
			break
		}
		var exit *exec.ExitError
		if ctx.Err() != nil || !errors.As(runErr, &exit) || exit.ProcessState.Exited() {
			// Not an abort by a signal: the script itself failed.
			t.Fatalf("deltars_rows.py: %v\n%s", runErr, stderr.String())
		}
		t.Logf("t%02d: deltars_rows.py aborted (%v): %s", len(answers), runErr, strings.TrimSpace(stderr.String()))
		answers = append(answers, struct {
			Rows  []map[string]any `json:"rows"`
			Error string           `json:"error"`
		}{Error: "delta-rs aborted the process: " + runErr.Error()})
	}
	if len(answers) != tables {
		t.Fatalf("%d answers for %d tables", len(answers), tables)
	}
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2, SampleRows: 10000, MaxReportBytes: 64 << 20,
		MaxSampleValueBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var refused, agreed, rsErrors int
	for i, f := range builds {
		name := fmt.Sprintf("t%02d", i)
		rep, err := e.Run(ctx, Request{Repository: "repo", Ref: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: name, Path: f.prefix, Format: FormatDelta}},
				Checks: []Check{{Name: "rows", Kind: KindSQL, Table: name, SQL: "SELECT * FROM " + name}}}})
		if err != nil {
			t.Fatal(err)
		}
		c := rep.Checks[0]
		rs := answers[i]
		if c.Status == schemas.StatusError {
			if !strings.Contains(c.Message, ErrDeltaUnsupported.Error()) && !strings.Contains(c.Message, "not in the repository") {
				t.Errorf("%s (tricks %v): lakewap errors, not as a refusal: %s", name, f.tricks, c.Message)
			}
			refused++
			t.Logf("%s (tricks %v): refused: %s", name, f.tricks, c.Message)
			continue
		}
		if rs.Error != "" {
			// delta-rs cannot read what lakewap reads: a reader would fail,
			// not read other rows. Counted, and shown.
			rsErrors++
			t.Logf("%s (tricks %v): delta-rs fails (%s); lakewap reads %s", name, f.tricks, rs.Error, c.Observed)
			continue
		}
		var ours []map[string]any
		for _, s := range c.SampleRows {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatal(err)
			}
			ours = append(ours, m)
		}
		if got, want := canonicalRows(ours), canonicalRows(rs.Rows); !slices.Equal(got, want) {
			t.Errorf("%s (tricks %v): lakewap reads %d rows %v, delta-rs %d rows %v", name, f.tricks, len(got), got, len(want), want)
			continue
		}
		agreed++
	}
	t.Logf("%d tables: %d read alike, %d refused by lakewap, %d unreadable by delta-rs", tables, agreed, refused, rsErrors)
	if agreed < tables/3 {
		t.Errorf("only %d of %d tables compared: the generator makes too few readable tables", agreed, tables)
	}
}

// canonicalRows are rows as sorted JSON texts, NULL columns left out (a
// column no active file has is absent for lakewap and NULL for delta-rs).
func canonicalRows(rows []map[string]any) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		for k, v := range r {
			if v == nil {
				delete(r, k)
			}
		}
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}
