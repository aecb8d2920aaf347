package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Delta Lake tables. lakewap reads a table's _delta_log itself: the JSON
// commits are decoded here and Parquet checkpoints are read by the engine's
// DuckDB (as JSON rows of the fields that decide the file set, so both go
// through one decoder), and the actions are applied as the protocol and
// delta-kernel apply them: from the newest complete checkpoint, then the
// commits after it, one version at a time. No Go Delta library is used: the
// one lakeFS itself uses is a fork that is not on the module proxy's
// checksum database and brings a storage layer of its own, and DuckDB's
// delta extension cannot be installed offline; what the audit needs — the
// active file set and its partition values — is a small part of the
// protocol.
//
// Where two valid readers could read different rows the table is refused
// (its checks error, never pass): a checkpoint that disagrees with the
// commits it sums up, a path added and removed (or added twice) in one
// version, two spellings of one file, a remove or add with a deletion
// vector, V2 checkpoints, sidecars and log compaction files, a
// _last_checkpoint that names another checkpoint than the newest, a reader
// version above 3 or a reader feature not listed below, column mapping,
// absolute file paths, a gap in the log that no checkpoint covers, a key in
// another case than the protocol's (exactCase; in a schema,
// deltaSchemaKeysExact), partition values delta-rs
// cannot parse, a checkpoint's stats_parsed that is not its JSON stats.

// deltaReaderFeatures are the table features (protocol reader version 3)
// that do not change which rows the active Parquet files hold.
var deltaReaderFeatures = map[string]bool{
	"timestampNtz":         true, // a column type DuckDB reads
	"vacuumProtocolCheck":  true, // only about vacuum
	"v2Checkpoint":         true, // V2 checkpoint files are refused where they appear; classic ones and JSON commits still work
	"checkpointProtection": true, // only about log cleanup
}

// ErrDeltaUnsupported is a Delta log this reader does not understand, or
// one that two valid readers could read differently.
var ErrDeltaUnsupported = errors.New("delta table not supported by lakewap's reader")

// deltaMaxActionBytes bounds one action (a line of a commit, a row of a
// checkpoint, without its statistics).
const deltaMaxActionBytes = 1 << 20

var (
	deltaCommit       = regexp.MustCompile(`^(\d{20})\.json$`)
	deltaCheckpoint   = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
	deltaMultipart    = regexp.MustCompile(`^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$`)
	deltaV2Checkpoint = regexp.MustCompile(`^(\d{20})\.checkpoint\.[0-9A-Fa-f-]{36}\.(json|parquet)$`)
	deltaCompacted    = regexp.MustCompile(`^(\d{20})\.(\d{20})\.compacted\.json$`)
	// deltaScheme is the start of an absolute URI (s3://..., file:...).
	deltaScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// deltaSnapshot is a Delta table at a ref.
type deltaSnapshot struct {
	active    map[string]deltaFile // by the path the log names it with
	partition []ColumnType         // partition columns, DuckDB types
	schema    []ColumnType         // the table's top-level columns as the log declares them
	// materialized are the (lower-case) names of the row tracking columns
	// writers may keep in data files beside the schema's.
	materialized map[string]bool
	// leaves are the schema's columns of primitive types and the fields
	// of its structs, at any depth, whose stats are compared.
	leaves []deltaLeaf
	named  map[string]bool // object paths the log names, active or removed
	log    []Object        // the objects under _delta_log/, as listed
	// version is the table's version (-1: no table at the ref); base is
	// the base's, at the batch's ref (-1: none, or not known).
	version, base int64
	// addedIn is, for the files commits add, the last version adding
	// each (files only a checkpoint adds are not in it), by object path.
	addedIn map[string]int64
	// changes are the replayed versions with cdc actions (deltacdf.go);
	// changeData the change data files deltaChangeData compared with
	// the data, by object path.
	changes    []deltaVersion
	changeData map[string]Object
	// changeLocal are the local copies of the change data files, with
	// their columns and object paths: Spark's table_changes pads their
	// CHAR columns as the data's (deltaSparkChars).
	changeLocal []string
	changeCols  map[string][]fileColumn
	changePath  map[string]string
	// gone are the files commits removed (their objects as listed, where
	// the ref has them), metaAt the metaData actions by version and meta
	// the last version's; interim the files the batch's versions added
	// and removed, which readers of those versions read (deltainterim.go),
	// by object path.
	gone    []deltaGone
	metaAt  []deltaMetaAt
	meta    *deltaMetaData
	interim map[string]deltaFile
}

type deltaFile struct {
	obj   Object
	parts map[string]*string
	// size is the file's size as the log states it, if it does.
	size *int64
	// lits are the partition values as SQL literals, in partition column order.
	lits []string
	// records is the file's row count as the log's stats state it
	// (numRecords), if they do: delta-rs answers count(*) from it.
	records *int64
	// claims are the stats' minValues, maxValues and nullCount, which
	// readers skip the file by (deltaClaimsDisagreement); kept from
	// commits only, a checkpoint's by their digest alone (claimsSum, ""
	// without claims), so that the heap does not grow with a checkpoint.
	claims    *deltaClaims
	claimsSum string
	// interim are the versions adding and removing a file the batch's
	// versions added and removed (deltainterim.go); schema is the schema
	// of the version adding it when it is not the last version's (one the
	// last version only adds columns to: deltaSchemaWithin).
	interim [2]int64
	schema  string
}

// deltaClaims are what an add action's stats claim of its file's columns.
type deltaClaims struct {
	Min   map[string]json.RawMessage `json:"minValues"`
	Max   map[string]json.RawMessage `json:"maxValues"`
	Nulls map[string]json.RawMessage `json:"nullCount"`
}

// deltaAction is one line of a commit (or one row of a checkpoint).
type deltaAction struct {
	Add *struct {
		Path            string             `json:"path"`
		PartitionValues map[string]*string `json:"partitionValues"`
		Size            *int64             `json:"size"`
		DeletionVector  json.RawMessage    `json:"deletionVector"`
		Stats           *string            `json:"stats"`
		// StatsParsed is a checkpoint's add.stats_parsed where it differs
		// from its JSON stats (checkpointSQL).
		StatsParsed json.RawMessage `json:"statsParsed"`
	} `json:"add"`
	Remove *struct {
		Path           string          `json:"path"`
		DeletionVector json.RawMessage `json:"deletionVector"`
	} `json:"remove"`
	// Cdc names a change data file (deltacdf.go).
	Cdc *struct {
		Path            string             `json:"path"`
		PartitionValues map[string]*string `json:"partitionValues"`
		Size            *int64             `json:"size"`
	} `json:"cdc"`
	MetaData *deltaMetaData       `json:"metaData"`
	Protocol *deltaProtocolAction `json:"protocol"`
	// V2 checkpoint actions: lakewap does not read sidecars.
	CheckpointMetadata json.RawMessage `json:"checkpointMetadata"`
	Sidecar            json.RawMessage `json:"sidecar"`
}

type deltaMetaData struct {
	Format struct {
		Provider string `json:"provider"`
	} `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
}

type deltaProtocolAction struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	ReaderFeatures   []string `json:"readerFeatures"`
}

func present(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && string(b) != "null" && string(b) != "false"
}

// deltaLog is a table's listing split into log files and data objects.
type deltaLog struct {
	dir         string // the table's _delta_log/ prefix
	commits     map[int64]Object
	checkpoints map[int64][]Object // complete checkpoints only
	last        *Object            // _last_checkpoint
	files       map[string]Object  // every object under _delta_log/
	objects     map[string]Object  // every object under the table path, by path
	unsupported []string           // log files lakewap does not read
}

// deltaLogDir is the _delta_log/ prefix of a table at prefix.
func deltaLogDir(prefix string) string {
	return strings.TrimPrefix(strings.TrimSuffix(prefix, "/")+"/_delta_log/", "/")
}

func splitDeltaLog(prefix string, objs []Object) deltaLog {
	l := deltaLog{dir: deltaLogDir(prefix), commits: map[int64]Object{}, checkpoints: map[int64][]Object{},
		files: map[string]Object{}, objects: map[string]Object{}}
	type multipart struct{ version, total int64 }
	parts := map[multipart]map[int64]Object{}
	for _, o := range objs {
		l.objects[o.Path] = o
		name, ok := strings.CutPrefix(o.Path, l.dir)
		if !ok {
			continue
		}
		l.files[o.Path] = o
		if strings.HasPrefix(name, "_sidecars/") {
			l.unsupported = append(l.unsupported, "sidecar file "+name+" (V2 checkpoints)")
			continue
		}
		if strings.Contains(name, "/") {
			continue
		}
		if m := deltaCommit.FindStringSubmatch(name); m != nil {
			l.commits[atoi64(m[1])] = o
		} else if m := deltaCheckpoint.FindStringSubmatch(name); m != nil {
			l.addCheckpoint(atoi64(m[1]), []Object{o})
		} else if m := deltaMultipart.FindStringSubmatch(name); m != nil {
			k := multipart{atoi64(m[1]), atoi64(m[3])}
			if parts[k] == nil {
				parts[k] = map[int64]Object{}
			}
			parts[k][atoi64(m[2])] = o
		} else if deltaV2Checkpoint.MatchString(name) {
			l.unsupported = append(l.unsupported, "V2 checkpoint "+name)
		} else if deltaCompacted.MatchString(name) {
			l.unsupported = append(l.unsupported, "log compaction file "+name)
		} else if name == "_last_checkpoint" {
			l.last = &o
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(parts), func(a, b multipart) int { return int(a.total - b.total) }) {
		var objs []Object
		for i := int64(1); i <= k.total; i++ {
			o, ok := parts[k][i]
			if !ok {
				break // an incomplete checkpoint is not usable
			}
			objs = append(objs, o)
		}
		if int64(len(objs)) == k.total && int64(len(parts[k])) == k.total {
			l.addCheckpoint(k.version, objs)
		}
	}
	slices.Sort(l.unsupported)
	return l
}

// addCheckpoint records a complete checkpoint; a second one of the same
// version is a reading lakewap cannot choose between.
func (l *deltaLog) addCheckpoint(v int64, objs []Object) {
	if _, ok := l.checkpoints[v]; ok {
		l.unsupported = append(l.unsupported, fmt.Sprintf("two checkpoints of version %d", v))
		return
	}
	l.checkpoints[v] = objs
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// deltaPlan is which log files rebuild the latest version: the newest
// complete checkpoint (version -1: none) and the commits after it.
type deltaPlan struct {
	checkpoint int64
	commits    []int64
}

func (p deltaPlan) version() int64 {
	if len(p.commits) > 0 {
		return p.commits[len(p.commits)-1]
	}
	return p.checkpoint
}

// contiguous are the commits from..to, if the log has every one.
func (l deltaLog) contiguous(from, to int64) ([]int64, bool) {
	var out []int64
	for v := from; v <= to; v++ {
		if _, ok := l.commits[v]; !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// plan is how Delta readers rebuild the latest version: the newest complete
// checkpoint, then the commits after it. verify, when the log allows it, is
// a second reading of the checkpoint's version from older log files (the
// checkpoint before it, or none, and the commits in between), which must
// give the same table. It starts at or before version floor (the base's
// version for a batch's table, math.MaxInt64 else): the batch's versions
// before its checkpoints are replayed too (deltainterim.go), and a batch
// whose checkpoint no such reading reaches is refused.
func (l deltaLog) plan(floor int64) (read deltaPlan, verify *deltaPlan, err error) {
	read.checkpoint = -1
	if len(l.unsupported) > 0 {
		return read, nil, fmt.Errorf("%w: %s", ErrDeltaUnsupported, strings.Join(l.unsupported, "; "))
	}
	cps := slices.Sorted(maps.Keys(l.checkpoints))
	cp := int64(-1)
	if len(cps) > 0 {
		cp = cps[len(cps)-1]
	}
	latest := max(cp, slices.Max(append(slices.Collect(maps.Keys(l.commits)), -1)))
	if latest < 0 {
		return read, nil, nil
	}
	commits, ok := l.contiguous(cp+1, latest)
	if !ok {
		missing := cp + 1
		for ; l.commits[missing].Path != ""; missing++ {
		}
		if cp < 0 {
			return read, nil, fmt.Errorf("%w: the log is missing commit %d (of %d) and has no checkpoint after it", ErrDeltaUnsupported, missing, latest)
		}
		return read, nil, fmt.Errorf("%w: the log is missing commit %d (of %d), after checkpoint %d", ErrDeltaUnsupported, missing, latest, cp)
	}
	read = deltaPlan{checkpoint: cp, commits: commits}
	if cp < 0 {
		return read, nil, nil
	}
	// The checkpoint before it (or none) and the commits up to it.
	for i := len(cps) - 2; i >= -1; i-- {
		from := int64(-1)
		if i >= 0 {
			from = cps[i]
		}
		if from > floor {
			continue // a checkpoint of the batch: the versions before it would not be replayed
		}
		if between, ok := l.contiguous(from+1, cp); ok {
			return read, &deltaPlan{checkpoint: from, commits: between}, nil
		}
	}
	if cp > floor {
		return read, nil, fmt.Errorf("%w: the log has no checkpoint at or before the base's version %d (or none) followed by every commit up to checkpoint %d: the batch's versions before the checkpoint, which readers of main read, cannot be replayed", ErrDeltaUnsupported, floor, cp)
	}
	return read, nil, nil
}

// deltaLoad reads the table's log at ref and returns its snapshot. An
// error wrapping ErrDeltaUnsupported (or a malformed log) is the table's
// problem; any other error is lakeFS or local I/O failing.
func (r *run) deltaLoad(ctx context.Context, dl downloader, ref string, t Table) (*deltaSnapshot, error) {
	key := ref + "\x00" + strings.ToLower(t.Name)
	s, ok := r.deltaSnaps[key]
	if !ok {
		batch := ref == r.req.Ref && r.req.BaseRef != "" && r.req.BaseRef != ref
		floor := int64(math.MaxInt64)
		if batch {
			floor, s.err = r.deltaBaseVersion(ctx, dl, t)
		}
		if s.err == nil {
			s.snap, s.err = r.deltaRead(ctx, dl, ref, t, floor)
		}
		if s.err == nil && batch {
			s.snap.base = floor
			s.err = r.deltaLogOnlyGrows(ctx, t)
			if s.err == nil {
				s.err = r.deltaChangeData(ctx, dl, t, s.snap)
			}
			if s.err == nil {
				s.err = s.snap.deltaInterim(t)
			}
		}
		r.deltaSnaps[key] = s
	}
	return s.snap, s.err
}

type deltaResult struct {
	snap *deltaSnapshot
	err  error
}

// errDeltaTable marks a problem of the table (its log), not of reaching it.
type errDeltaTable struct{ error }

func (e errDeltaTable) Unwrap() error { return e.error }

func tableErr(format string, args ...any) error { return errDeltaTable{fmt.Errorf(format, args...)} }

// list lists prefix at ref within the listing budget: a listing over it is
// the table's problem.
func (r *run) list(ctx context.Context, ref, prefix string) ([]Object, error) {
	list := func(ctx context.Context, ref, prefix string) ([]Object, error) {
		return r.e.opts.Source.List(ctx, r.req.Repository, ref, prefix)
	}
	if IsCommitID(ref) {
		list = r.listCommit // a commit's listing never changes (listcache.go)
	}
	objs, err := list(ctx, ref, prefix)
	if errors.Is(err, ErrOverBudget) {
		return nil, errOverBudget{r.onBase(ctx, err)} // the Source stopped a listing over its limit
	}
	if err != nil {
		return nil, err
	}
	if n := r.e.opts.MaxListObjects; len(objs) > n {
		return nil, errOverBudget{fmt.Errorf("%w: %d objects under %s at %s, over the listing budget of %d (audit.max_list_objects)",
			ErrOverBudget, len(objs), prefix, ref, n)}
	}
	return objs, nil
}

// EntryRefuser is a Source whose listings refuse an entry past a
// per-entry limit (a path, address, checksum or content type no block
// adapter makes): RefusedAt reports whether err is such a refusal whose
// entry ref holds too, refused the same, and names its path.
type EntryRefuser interface {
	RefusedAt(ctx context.Context, repo, ref string, err error) (path string, held bool, _ error)
}

// onBase is err, a listing over its limit, saying so when the entry it
// refuses is on the base already: not the batch's doing, but every audit
// listing it is refused until it is removed from the target, and the
// operator must know which object that is and where
// (TestLimits63EntryAlreadyOnTheTargetIsNamedAsTheTargets).
func (r *run) onBase(ctx context.Context, err error) error {
	er, ok := r.e.opts.Source.(EntryRefuser)
	if !ok || r.req.BaseRef == "" {
		return err
	}
	p, held, herr := er.RefusedAt(ctx, r.req.Repository, r.req.BaseRef, err)
	if herr != nil || !held {
		return err
	}
	r.hold(p)
	return fmt.Errorf("%w; the object %q is already on %s (%s), not this batch's: every batch whose audit lists it is refused until you remove it from %s (delete it on that branch and commit, or revert the commit that brought it)",
		err, clipPath(p), r.baseName(), short(r.req.BaseRef), r.baseName())
}

// clipPath is p as an error names it: at most 256 bytes.
func clipPath(p string) string {
	if len(p) <= 256 {
		return p
	}
	return p[:256] + fmt.Sprintf("... (%d bytes)", len(p))
}

// tableListing is tableFiles(t.Path, the listing of t at ref) for a
// caller that only reads it (changes no object in it, appends nothing): of
// a kept listing of a commit, filtered once and not copied.
func (r *run) tableListing(ctx context.Context, ref string, t Table) ([]Object, error) {
	objs, err := r.listRead(ctx, ref, t.Path)
	if err != nil {
		return nil, err
	}
	if IsCommitID(ref) {
		if files, ok := r.e.listings.tableFiles(r.req.Repository, ref, t.Path); ok {
			return files, nil
		}
	}
	return tableFiles(t.Path, objs), nil
}

// listRead is list for a caller that only reads the listing (changes no
// object in it, appends nothing): a kept listing of a commit is not copied.
func (r *run) listRead(ctx context.Context, ref, prefix string) ([]Object, error) {
	if IsCommitID(ref) {
		if objs, ok := r.e.listings.shared(r.req.Repository, ref, prefix); ok {
			if n := r.e.opts.MaxListObjects; len(objs) > n {
				return nil, errOverBudget{fmt.Errorf("%w: %d objects under %s at %s, over the listing budget of %d (audit.max_list_objects)",
					ErrOverBudget, len(objs), prefix, ref, n)}
			}
			return objs, nil
		}
	}
	return r.list(ctx, ref, prefix)
}

// pathIndex finds objects of a listing by path: by binary search when the
// listing is in strict path order (as lakeFS and the derived listings give
// it), else through a map (the last of a path twice, as a map built from
// it keeps).
type pathIndex struct {
	objs []Object
	m    map[string]Object
}

func indexPaths(objs []Object) pathIndex {
	if pathOrdered(objs) {
		return pathIndex{objs: objs}
	}
	m := make(map[string]Object, len(objs))
	for _, o := range objs {
		m[o.Path] = o
	}
	return pathIndex{m: m}
}

func (x pathIndex) get(p string) (Object, bool) {
	if x.m != nil {
		o, ok := x.m[p]
		return o, ok
	}
	i, ok := slices.BinarySearchFunc(x.objs, p, func(o Object, p string) int { return strings.Compare(o.Path, p) })
	if !ok {
		return Object{}, false
	}
	return x.objs[i], true
}

func (r *run) deltaRead(ctx context.Context, dl downloader, ref string, t Table, floor int64) (*deltaSnapshot, error) {
	objs, err := r.list(ctx, ref, t.Path)
	if err != nil {
		if errors.As(err, new(errOverBudget)) {
			return nil, errDeltaTable{err}
		}
		return nil, fmt.Errorf("list table %s at %s: %w", t.Name, ref, err)
	}
	if len(objs) == 0 {
		return &deltaSnapshot{active: map[string]deltaFile{}, version: -1, base: -1}, nil // no table at this ref
	}
	l := splitDeltaLog(t.Path, objs)
	read, verify, err := l.plan(floor)
	if err != nil {
		return nil, errDeltaTable{err}
	}
	if read.version() < 0 {
		return nil, tableErr("not a Delta table: no _delta_log/ commits under %s", t.Path)
	}
	if err := r.deltaLastCheckpoint(ctx, dl, ref, l, read.checkpoint); err != nil {
		return nil, err
	}
	st, err := r.deltaReplay(ctx, dl, ref, t, l, read)
	if err != nil {
		return nil, err
	}
	if verify != nil {
		other, err := r.deltaReplay(ctx, dl, ref, t, l, *verify)
		if err != nil {
			return nil, err
		}
		at, err := r.deltaReplay(ctx, dl, ref, t, l, deltaPlan{checkpoint: read.checkpoint})
		if err != nil {
			return nil, err
		}
		if diff := at.differs(other); diff != "" {
			return nil, tableErr("%w: checkpoint %d disagrees with the log before it (%s): %s",
				ErrDeltaUnsupported, read.checkpoint, verify, diff)
		}
		// The batch's older checkpoints too: time travel to a version
		// reads the newest checkpoint at or before it
		// (TestDeltaOlderCheckpointsOfTheBatchAreVerified). Each is
		// compared with the one before it and the commits in between.
		prev := verify.checkpoint
		for _, c := range slices.Sorted(maps.Keys(l.checkpoints)) {
			if c <= prev || c <= floor || c >= read.checkpoint {
				continue
			}
			commits, _ := l.contiguous(prev+1, c) // within verify's commits
			before := deltaPlan{checkpoint: prev, commits: commits}
			chain, err := r.deltaReplay(ctx, dl, ref, t, l, before)
			if err != nil {
				return nil, err
			}
			at, err := r.deltaReplay(ctx, dl, ref, t, l, deltaPlan{checkpoint: c})
			if err != nil {
				return nil, err
			}
			if diff := at.differs(chain); diff != "" {
				return nil, tableErr("%w: checkpoint %d disagrees with the log before it (%s): %s", ErrDeltaUnsupported, c, before, diff)
			}
			prev = c
		}
		st.changes = append(other.changes, st.changes...) // the versions up to the checkpoint, then those after it
		for o, v := range other.addedIn {
			st.addedIn[o] = max(st.addedIn[o], v)
		}
		for o := range other.named {
			st.named[o] = true // a file the commits before the checkpoint name (a checkpoint may hold no tombstones)
		}
		// The files removed after the checkpoint that a commit before it
		// added, then those removed before it (deltainterim.go).
		for i, g := range st.gone {
			if v, ok := other.addedIn[g.file.obj.Path]; ok && g.added < 0 {
				st.gone[i].added = v
			}
		}
		st.gone = append(other.gone, st.gone...)
		st.metaAt = append(other.metaAt, st.metaAt...)
		// The claims of the checkpoint's files, known there by digest, as
		// the commits before it state them (deltaClaimsDisagreement).
		for p, f := range st.active {
			if g, ok := other.active[p]; ok && f.claims == nil && g.claims != nil && f.claimsSum == g.claimsSum {
				f.claims = g.claims
				st.active[p] = f
			}
		}
	}
	snap, err := st.snapshot(l.objects)
	if err == nil {
		for i, g := range snap.gone {
			snap.gone[i].listed = false
			if o, ok := l.objects[g.file.obj.Path]; ok {
				snap.gone[i].file.obj, snap.gone[i].listed = o, true
			}
		}
		snap.log = slices.Collect(maps.Values(l.files))
		snap.version = read.version()
		snap.base = -1
	}
	return snap, err
}

func (p deltaPlan) String() string {
	var from string
	if p.checkpoint >= 0 {
		from = fmt.Sprintf("checkpoint %d and ", p.checkpoint)
	}
	if len(p.commits) == 0 {
		return strings.TrimSuffix(from, " and ")
	}
	return fmt.Sprintf("%scommits %d to %d", from, p.commits[0], p.commits[len(p.commits)-1])
}

// deltaLastCheckpoint: _last_checkpoint, when there is one, must name the
// newest complete checkpoint. A reader that trusts it starts there, one
// that lists the log starts from the newest; they must be the same.
func (r *run) deltaLastCheckpoint(ctx context.Context, dl downloader, ref string, l deltaLog, cp int64) error {
	if l.last == nil {
		return nil
	}
	if l.last.Size > 1<<20 {
		return tableErr("%w: _last_checkpoint of %d bytes", ErrDeltaUnsupported, l.last.Size)
	}
	local, err := dl.fetchAll(ctx, []fetch{{ref: ref, obj: *l.last}})
	if err != nil {
		return fmt.Errorf("delta log at %s: %w", ref, err)
	}
	b, err := os.ReadFile(local[0])
	if err != nil {
		return err
	}
	var last struct {
		Version *int64 `json:"version"`
	}
	if err := json.Unmarshal(b, &last); err != nil || last.Version == nil {
		return tableErr("%w: _last_checkpoint is not a JSON object with a version", ErrDeltaUnsupported)
	}
	if *last.Version != cp {
		if cp < 0 {
			return tableErr("%w: _last_checkpoint names checkpoint %d, and the log has no complete checkpoint", ErrDeltaUnsupported, *last.Version)
		}
		return tableErr("%w: _last_checkpoint names checkpoint %d, the newest complete checkpoint is %d", ErrDeltaUnsupported, *last.Version, cp)
	}
	return nil
}

// logFile downloads one log file within the budget of a log file's bytes.
func (r *run) logFile(ctx context.Context, dl downloader, ref string, objs []Object) ([]string, error) {
	for _, o := range objs {
		if n := r.e.opts.MaxLogFileBytes; o.Size > n {
			return nil, errDeltaTable{fmt.Errorf("%w: Delta log file %s is %d bytes, over the budget of %d (audit.max_log_file_bytes)",
				ErrOverBudget, o.Path, o.Size, n)}
		}
	}
	local, err := dl.fetchAll(ctx, each(objs, func(o Object) fetch { return fetch{ref: ref, obj: o} }))
	if err != nil {
		return nil, fmt.Errorf("delta log at %s: %w", ref, err)
	}
	return local, nil
}

// deltaReplay applies the plan's checkpoint and commits.
func (r *run) deltaReplay(ctx context.Context, dl downloader, ref string, t Table, l deltaLog, p deltaPlan) (*deltaState, error) {
	st := newDeltaState(t)
	if p.checkpoint >= 0 {
		local, err := r.logFile(ctx, dl, ref, l.checkpoints[p.checkpoint])
		if err != nil {
			return nil, err
		}
		st.begin(p.checkpoint)
		st.inCheckpoint = true
		st.statsParsed, err = r.deltaCheckpointRows(ctx, local, st.apply)
		st.inCheckpoint = false
		if err != nil {
			if errors.As(err, new(errDeltaTable)) {
				return nil, tableErr("checkpoint %d of %s: %w", p.checkpoint, t.Name, err)
			}
			return nil, err
		}
	}
	for _, v := range p.commits {
		local, err := r.logFile(ctx, dl, ref, []Object{l.commits[v]})
		if err != nil {
			return nil, err
		}
		if err := st.endVersion(); err != nil {
			return nil, tableErr("commit %d of %s: %w", st.version, t.Name, err)
		}
		st.begin(v)
		if err := r.deltaCommitLines(local[0], st.apply); err != nil {
			if errors.As(err, new(errDeltaTable)) {
				return nil, tableErr("commit %d of %s: %w", v, t.Name, err)
			}
			return nil, err
		}
	}
	if err := st.endVersion(); err != nil {
		return nil, tableErr("commit %d of %s: %w", st.version, t.Name, err)
	}
	if st.protocol == nil || st.meta == nil {
		return nil, tableErr("the Delta log of %s has no protocol or metaData action", t.Name)
	}
	if st.statsParsed != "" {
		if err := statsParsedTypes(st.statsParsed, deltaLeaves(st.meta.SchemaString)); err != nil {
			return nil, tableErr("checkpoint %d of %s: %w", p.checkpoint, t.Name, err)
		}
	}
	return st, nil
}

// deltaCommitLines applies each action line of a commit file, streaming.
func (r *run) deltaCommitLines(file string, apply func([]byte) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := newLineReader(f, deltaMaxActionBytes)
	for {
		line, err := rd.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errDeltaTable{err}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := apply(line); err != nil {
			return errDeltaTable{err}
		}
	}
}

// lineReader reads lines of at most max bytes.
type lineReader struct {
	r   io.Reader
	buf []byte
	max int
	eof bool
}

func newLineReader(r io.Reader, max int) *lineReader { return &lineReader{r: r, max: max} }

func (l *lineReader) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
			line := l.buf[:i]
			l.buf = l.buf[i+1:]
			return line, nil
		}
		if l.eof {
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			line := l.buf
			l.buf = nil
			return line, nil
		}
		if len(l.buf) > l.max {
			return nil, fmt.Errorf("%w: an action of more than %d bytes", ErrDeltaUnsupported, l.max)
		}
		chunk := make([]byte, 64<<10)
		n, err := l.r.Read(chunk)
		l.buf = append(l.buf, chunk[:n]...)
		if errors.Is(err, io.EOF) {
			l.eof = true
		} else if err != nil {
			return nil, err
		}
	}
}

// deltaCheckpointRows applies each action of a checkpoint's parts,
// streaming: the rows come from DuckDB one vector at a time, with only
// the fields that decide the file set (not the statistics), each row at
// most deltaMaxActionBytes and all of them at most the log file budget.
// parsed is the structure of the checkpoint's add.stats_parsed, "" for
// none (statsParsedTypes checks it against the schema).
func (r *run) deltaCheckpointRows(ctx context.Context, files []string, apply func([]byte) error) (parsed string, err error) {
	fields, err := r.parquetFields(ctx, files)
	if err != nil {
		return "", errDeltaTable{err}
	}
	if fields["add"]["stats_parsed"] {
		if parsed, err = r.statsParsedStructure(ctx, files); err != nil {
			if ctx.Err() != nil {
				return parsed, ctx.Err()
			}
			return parsed, errDeltaTable{err}
		}
	}
	q, err := checkpointSQL(files, fields, parsed)
	if err != nil {
		return parsed, errDeltaTable{err}
	}
	rows, err := r.pool().QueryContext(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return parsed, ctx.Err()
		}
		return parsed, errDeltaTable{err}
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var (
			row  sql.RawBytes // valid until the next row: apply copies what it keeps
			size int64
		)
		if err := rows.Scan(&row, &size); err != nil {
			return parsed, errDeltaTable{err}
		}
		if size > deltaMaxActionBytes {
			return parsed, errDeltaTable{fmt.Errorf("%w: an action of %d bytes (more than %d)", ErrDeltaUnsupported, size, deltaMaxActionBytes)}
		}
		if total += size; total > r.e.opts.MaxLogFileBytes {
			return parsed, errDeltaTable{fmt.Errorf("%w: the checkpoint's actions are over %d bytes (audit.max_log_file_bytes)", ErrOverBudget, r.e.opts.MaxLogFileBytes)}
		}
		if err := apply(row); err != nil {
			return parsed, errDeltaTable{err}
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return parsed, ctx.Err()
		}
		return parsed, errDeltaTable{err}
	}
	return parsed, nil
}

// parquetFields are the top-level columns of Parquet files and, for each,
// its child fields, as the files' footers name them (union of the files).
func (r *run) parquetFields(ctx context.Context, files []string) (map[string]map[string]bool, error) {
	cols, err := r.parquetColumns(ctx, files)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, fc := range cols {
		for _, c := range fc {
			if out[c.name] == nil {
				out[c.name] = map[string]bool{}
			}
			for _, ch := range c.children {
				out[c.name][ch] = true
			}
		}
	}
	return out, nil
}

// statsParsedStructure is the type of the checkpoint's add.stats_parsed
// as a JSON structure of DuckDB's from_json (duckdbStructure).
func (r *run) statsParsedStructure(ctx context.Context, files []string) (string, error) {
	var typ string
	err := r.pool().QueryRowContext(ctx, fmt.Sprintf(`SELECT typeof(c."add".stats_parsed) FROM read_parquet(%s, union_by_name = true%s) c LIMIT 1`,
		literalList(files), noHive)).Scan(&typ)
	if err != nil {
		return "", err
	}
	st, err := duckdbStructure(typ)
	if err != nil {
		return "", fmt.Errorf("%w: the checkpoint's stats_parsed of type %.200s: %v", ErrDeltaUnsupported, typ, err)
	}
	return st, nil
}

// duckdbStructure turns a DuckDB STRUCT type, as typeof spells it, into
// the JSON structure from_json reads JSON into: an object per STRUCT, the
// type's name at each other field.
func duckdbStructure(typ string) (string, error) {
	v, rest, err := parseStructType(typ)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(rest) != "" {
		return "", fmt.Errorf("unexpected %.40q after the type", rest)
	}
	if _, ok := v.(map[string]any); !ok {
		return "", errors.New("not a STRUCT")
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// parseStructType reads one type from the start of s: a STRUCT as a map
// of its fields, any other type (a list of STRUCT too) as its text.
func parseStructType(s string) (any, string, error) {
	s = strings.TrimLeft(s, " ")
	if rest, ok := strings.CutPrefix(s, "STRUCT("); ok {
		fields := map[string]any{}
		for {
			rest = strings.TrimLeft(rest, " ")
			var name string
			if strings.HasPrefix(rest, `"`) {
				var ok bool
				if name, rest, ok = cutQuotedIdent(rest); !ok {
					return nil, "", errors.New("unterminated field name")
				}
			} else {
				i := strings.IndexByte(rest, ' ')
				if i <= 0 {
					return nil, "", errors.New("a STRUCT field without a type")
				}
				name, rest = rest[:i], rest[i:]
			}
			t, r, err := parseStructType(rest)
			if err != nil {
				return nil, "", err
			}
			if _, dup := fields[name]; dup {
				return nil, "", fmt.Errorf("field %q twice", name)
			}
			fields[name] = t
			r = strings.TrimLeft(r, " ")
			switch {
			case strings.HasPrefix(r, ","):
				rest = r[1:]
				continue
			case strings.HasPrefix(r, ")"):
				r = r[1:]
				if !strings.HasPrefix(r, "[") {
					return fields, r, nil
				}
				for strings.HasPrefix(r, "[") { // a list of STRUCT: its text
					j := strings.IndexByte(r, ']')
					if j < 0 {
						return nil, "", errors.New("unterminated list type")
					}
					r = r[j+1:]
				}
				return s[:len(s)-len(r)], r, nil
			}
			return nil, "", errors.New("unterminated STRUCT")
		}
	}
	// Any other type: up to the next comma or closing parenthesis outside
	// parentheses and quotes.
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case depth == 0 && (c == ')' || c == ','):
			if strings.TrimSpace(s[:i]) == "" {
				return nil, "", errors.New("an empty type")
			}
			return strings.TrimSpace(s[:i]), s[i:], nil
		case c == ')':
			depth--
		}
	}
	if strings.TrimSpace(s) == "" {
		return nil, "", errors.New("an empty type")
	}
	return strings.TrimSpace(s), "", nil
}

// checkpointSQL selects each checkpoint row's actions as one JSON object
// of the fields lakewap reads, and its size. An add's stats_parsed
// (parsed: its from_json structure, "" for none), which delta-rs reads
// before the JSON stats, stands for the JSON stats where they are absent;
// where both are there and they differ (the JSON read into stats_parsed's
// types), the row carries the stats_parsed as statsParsed, which apply
// refuses (TestDeltaCheckpointStatsParsed).
func checkpointSQL(files []string, fields map[string]map[string]bool, parsed string) (string, error) {
	var parts, nonNull []string
	file := func(action string, want ...string) {
		have := fields[action]
		if have == nil {
			return
		}
		col := "c." + quoteIdent(action)
		nonNull = append(nonNull, col+" IS NOT NULL")
		var kv []string
		for _, f := range want {
			if !have[f] {
				continue
			}
			e := col + "." + quoteIdent(f)
			if f == "deletionVector" {
				e = e + " IS NOT NULL"
			}
			kv = append(kv, quoteLiteral(f)+": "+e)
		}
		if action == "add" && parsed != "" && have["stats_parsed"] {
			sp := col + ".stats_parsed"
			js := "CAST(to_json(" + sp + ") AS VARCHAR)"
			if have["stats"] {
				st := col + ".stats"
				kv = slices.DeleteFunc(kv, func(e string) bool { return strings.HasPrefix(e, "'stats': ") })
				kv = append(kv, "'stats': coalesce("+st+", "+js+")",
					fmt.Sprintf("'statsParsed': CASE WHEN %s IS NOT NULL AND %s IS NOT NULL AND json_valid(%s) AND from_json(%s, %s) IS DISTINCT FROM %s THEN to_json(%s) END",
						st, sp, st, st, quoteLiteral(parsed), sp, sp))
			} else {
				kv = append(kv, "'stats': "+js)
			}
		}
		if len(kv) == 0 {
			kv = []string{"'path': NULL"}
		}
		parts = append(parts, fmt.Sprintf("%s: CASE WHEN %s IS NOT NULL THEN {%s} END", quoteLiteral(action), col, strings.Join(kv, ", ")))
	}
	file("add", "path", "partitionValues", "size", "deletionVector", "stats")
	file("remove", "path", "deletionVector")
	// A V2 checkpoint's actions are refused by apply; delta-rs writes a
	// classic checkpoint with a sidecar column, null in every row.
	for _, whole := range []string{"metaData", "protocol", "checkpointMetadata", "sidecar"} {
		if fields[whole] != nil {
			col := "c." + quoteIdent(whole)
			nonNull = append(nonNull, col+" IS NOT NULL")
			parts = append(parts, quoteLiteral(whole)+": "+col)
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: a checkpoint with no add, remove, metaData or protocol column", ErrDeltaUnsupported)
	}
	return fmt.Sprintf(`SELECT j, strlen(j) FROM (
		SELECT CAST(to_json({%s}) AS VARCHAR) AS j FROM read_parquet(%s, union_by_name = true%s) c WHERE %s)`,
		strings.Join(parts, ", "), literalList(files), noHive, strings.Join(nonNull, " OR ")), nil
}

// deltaState applies actions, one version at a time.
type deltaState struct {
	table    Table
	version  int64
	added    map[string]bool // paths added in this version
	removed  map[string]bool // paths removed in this version
	active   map[string]deltaFile
	byObject map[string]string // the object path of an active file -> the path the log names it with
	named    map[string]bool   // every object path the replay named
	protocol *deltaProtocolAction
	meta     *deltaMetaData
	// seen counts protocol and metaData actions of this version.
	protocols, metas int
	// inCheckpoint: the actions come from a checkpoint (deltaFile.claims).
	inCheckpoint bool
	// statsParsed is the checkpoint's add.stats_parsed as from_json's
	// structure (statsParsedStructure), "" for none.
	statsParsed string
	// cur is this commit's adds, removes and cdc actions; changes the
	// commits with cdc actions, kept by endVersion (deltacdf.go).
	cur     deltaVersion
	changes []deltaVersion
	cdcSeen map[string]int64 // change data files named, by object path, and the version naming them
	addedIn map[string]int64 // deltaSnapshot.addedIn
	// gone are the files commits removed (deltainterim.go), metaAt the
	// metaData actions by the version stating them.
	gone   []deltaGone
	metaAt []deltaMetaAt
}

func newDeltaState(t Table) *deltaState {
	return &deltaState{table: t, active: map[string]deltaFile{}, byObject: map[string]string{}, named: map[string]bool{}, cdcSeen: map[string]int64{}, addedIn: map[string]int64{}}
}

// begin starts the actions of version v.
func (s *deltaState) begin(v int64) {
	s.cur = deltaVersion{version: v}
	s.version, s.added, s.removed, s.protocols, s.metas = v, map[string]bool{}, map[string]bool{}, 0, 0
}

func (s *deltaState) apply(line []byte) error {
	var a deltaAction
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("not a Delta action: %v", err)
	}
	// A checkpoint's rows are the keys checkpointSQL spells, but for the
	// metaData and protocol it selects whole.
	if !s.inCheckpoint || a.MetaData != nil || a.Protocol != nil {
		if err := exactCase(line, reflect.TypeOf(a)); err != nil {
			return fmt.Errorf("%w: in version %d: %v", ErrDeltaUnsupported, s.version, err)
		}
	}
	if present(a.CheckpointMetadata) || present(a.Sidecar) {
		return fmt.Errorf("%w: a V2 checkpoint action (checkpointMetadata or sidecar)", ErrDeltaUnsupported)
	}
	if p := a.Protocol; p != nil {
		if s.protocols++; s.protocols > 1 {
			return fmt.Errorf("%w: two protocol actions in version %d", ErrDeltaUnsupported, s.version)
		}
		if p.MinReaderVersion > 3 {
			return fmt.Errorf("%w: protocol reader version %d (lakewap reads up to 3)", ErrDeltaUnsupported, p.MinReaderVersion)
		}
		for _, f := range p.ReaderFeatures {
			if !deltaReaderFeatures[f] {
				return fmt.Errorf("%w: reader feature %s", ErrDeltaUnsupported, f)
			}
		}
		s.protocol = p
	}
	if m := a.MetaData; m != nil {
		if s.metas++; s.metas > 1 {
			return fmt.Errorf("%w: two metaData actions in version %d", ErrDeltaUnsupported, s.version)
		}
		if p := strings.ToLower(m.Format.Provider); p != "" && p != "parquet" {
			return fmt.Errorf("%w: data files in format %s", ErrDeltaUnsupported, m.Format.Provider)
		}
		if mode := m.Configuration["delta.columnMapping.mode"]; mode != "" && mode != "none" {
			return fmt.Errorf("%w: column mapping mode %s", ErrDeltaUnsupported, mode)
		}
		if err := deltaSchemaKeysExact(m.SchemaString); err != nil {
			return fmt.Errorf("%w: the schema of version %d: %v", ErrDeltaUnsupported, s.version, err)
		}
		s.meta = m
		s.metaAt = append(s.metaAt, deltaMetaAt{s.version, m})
	}
	if a.Add != nil {
		if present(a.Add.StatsParsed) {
			var js string
			if a.Add.Stats != nil {
				js = *a.Add.Stats
			}
			return fmt.Errorf("%w: file %s: its stats_parsed %s and its stats %s differ: delta-rs skips files by the first, other readers by the second (readers disagree)",
				ErrDeltaUnsupported, a.Add.Path, clip(string(a.Add.StatsParsed), 300), clip(js, 300))
		}
		if err := s.add(a.Add.Path, a.Add.PartitionValues, a.Add.Size, a.Add.DeletionVector, a.Add.Stats); err != nil {
			return err
		}
	}
	if a.Remove != nil {
		if err := s.remove(a.Remove.Path, a.Remove.DeletionVector); err != nil {
			return err
		}
	}
	if c := a.Cdc; c != nil {
		if err := s.cdc(c.Path, c.PartitionValues, c.Size); err != nil {
			return err
		}
	}
	return nil
}

// add applies an add action. The protocol allows one action per path and
// version; readers differ on two (delta-kernel keeps a path added and
// removed in one commit), so lakewap refuses them.
func (s *deltaState) add(p string, parts map[string]*string, size *int64, dv json.RawMessage, stats *string) error {
	if present(dv) {
		return fmt.Errorf("%w: file %s has a deletion vector (reader feature deletionVectors)", ErrDeltaUnsupported, p)
	}
	var records *int64
	var claims *deltaClaims
	sum := ""
	if stats != nil && *stats != "" {
		var st struct {
			NumRecords *int64 `json:"numRecords"`
			deltaClaims
		}
		if err := json.Unmarshal([]byte(*stats), &st); err != nil {
			return fmt.Errorf("%w: the stats of file %s are not a JSON object: %v", ErrDeltaUnsupported, p, err)
		}
		if err := exactCase([]byte(*stats), reflect.TypeOf(st)); err != nil {
			return fmt.Errorf("%w: the stats of file %s: %v", ErrDeltaUnsupported, p, err)
		}
		records = st.NumRecords
		// A null is no claim: a stats_parsed holds one for each column
		// the JSON stats leave out.
		for _, m := range []map[string]json.RawMessage{st.Min, st.Max, st.Nulls} {
			dropNulls(m)
		}
		if len(st.Min)+len(st.Max)+len(st.Nulls) > 0 {
			b, _ := json.Marshal(st.deltaClaims) // maps marshal in key order
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:])
			if !s.inCheckpoint {
				claims = &st.deltaClaims
			}
		}
	}
	switch {
	case s.removed[p]:
		return fmt.Errorf("%w: path %s is added and removed in version %d", ErrDeltaUnsupported, p, s.version)
	case s.added[p]:
		return fmt.Errorf("%w: path %s is added twice in version %d", ErrDeltaUnsupported, p, s.version)
	}
	obj, err := s.objectPath(p)
	if err != nil {
		return err
	}
	if other, ok := s.byObject[obj]; ok && other != p {
		return fmt.Errorf("%w: the log names file %s as %s and as %s", ErrDeltaUnsupported, obj, other, p)
	}
	if old, ok := s.active[p]; ok && !s.inCheckpoint {
		// An add of an active path replaces its add (a stats update
		// writes one): readers of the versions before read the file by
		// the one replaced, which deltaInterim compares with the add the
		// audit reads it by, as a file removed and added again.
		added, ok := s.addedIn[old.obj.Path]
		if !ok {
			added = -1 // added by the checkpoint the replay started from
		}
		s.gone = append(s.gone, deltaGone{file: old, added: added, removed: s.version})
	}
	s.added[p] = true
	s.named[obj] = true
	s.active[p] = deltaFile{obj: Object{Path: obj}, parts: parts, size: size, records: records, claims: claims, claimsSum: sum}
	s.byObject[obj] = p
	if !s.inCheckpoint {
		s.cur.added = append(s.cur.added, deltaFile{obj: Object{Path: obj}, parts: parts, size: size})
		s.addedIn[obj] = s.version
	}
	return nil
}

func (s *deltaState) remove(p string, dv json.RawMessage) error {
	if present(dv) {
		return fmt.Errorf("%w: a remove of %s with a deletion vector (reader feature deletionVectors)", ErrDeltaUnsupported, p)
	}
	if s.added[p] {
		return fmt.Errorf("%w: path %s is added and removed in version %d", ErrDeltaUnsupported, p, s.version)
	}
	s.removed[p] = true
	if f, ok := s.active[p]; ok {
		delete(s.active, p)
		delete(s.byObject, f.obj.Path)
		if !s.inCheckpoint {
			s.cur.removed = append(s.cur.removed, deltaFile{obj: f.obj, parts: f.parts, size: f.size})
			added, ok := s.addedIn[f.obj.Path]
			if !ok {
				added = -1 // added by the checkpoint the replay started from
			}
			s.gone = append(s.gone, deltaGone{file: f, added: added, removed: s.version})
		}
		return nil
	}
	// A tombstone of a file no longer active; one that names an active
	// file in another spelling removes it for some readers only.
	obj, err := s.objectPath(p)
	if err != nil {
		return err
	}
	s.named[obj] = true
	if other, ok := s.byObject[obj]; ok {
		return fmt.Errorf("%w: a remove of %s names active file %s, which the log adds as %s", ErrDeltaUnsupported, p, obj, other)
	}
	return nil
}

// exactCase: every key of the JSON object raw that names a field of the
// struct type t (by its json tag, in any case, as encoding/json matches
// them) names it in the tag's case, in the objects of t's struct fields
// too. delta-rs (serde) and Spark (Jackson) match keys in one case and
// ignore the others: a commit's "Remove" action was a remove to lakewap
// and nothing to delta-rs, which read the file lakewap left out
// (TestDeltaProtocolFeaturesAsDeltaRSReadsThem). Not an object: nothing
// to check (Unmarshal reports it).
func exactCase(raw []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for _, it := range items {
			if err := exactCase(it, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	fields := jsonFields(t)
	for k, v := range obj {
		if ft, ok := fields[k]; ok {
			if err := exactCase(v, ft); err != nil {
				return err
			}
			continue
		}
		for name := range fields {
			if strings.EqualFold(k, name) {
				return fmt.Errorf("key %q is %q in another case: delta-rs and Spark ignore it, a case-blind reader takes it for %s (readers disagree)", k, name, name)
			}
		}
	}
	return nil
}

// deltaSchemaKeys are the keys of a Delta schema's objects (structs,
// their fields, arrays and maps) as the protocol spells them.
var deltaSchemaKeys = []string{"type", "fields", "name", "nullable", "metadata", "elementType", "containsNull", "keyType", "valueType", "valueContainsNull"}

// deltaSchemaKeysExact refuses a Delta schema (a metaData's schemaString)
// with a key, at any depth, that is one of the protocol's in another case:
// delta-rs ignores it, the audit's case-blind decoding of the schema's
// fields takes it for the protocol's key. A schema whose "fields" listed
// Region and whose "Fields" listed region was read by deltalake 1.6.6 at
// its version with every region NULL while the audit took it for the last
// version's schema (TestDeltaIntermediateMetadataIsRefused/key). A
// field's metadata (free keys) is not looked into.
func deltaSchemaKeysExact(schema string) error {
	var v any
	if json.Unmarshal([]byte(schema), &v) != nil {
		return nil // refused where it is read
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, e := range x {
				for _, want := range deltaSchemaKeys {
					if k != want && strings.EqualFold(k, want) {
						return fmt.Errorf("key %q is %q in another case: delta-rs ignores it, a case-blind reader takes it for %s (readers disagree)", k, want, want)
					}
				}
				if k == "metadata" {
					continue
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

var jsonFieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields are the fields of struct type t by their json names, those of
// embedded structs without a name among them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				collect(f.Type)
				continue
			}
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
	}
	collect(t)
	jsonFieldsOf.Store(t, fields)
	return fields
}

// dropNulls deletes the null claims of m, and of the objects in it (a
// nested column's), which are rewritten in key order.
func dropNulls(m map[string]json.RawMessage) {
	for k, v := range m {
		v = bytes.TrimSpace(v)
		switch {
		case string(v) == "null":
			delete(m, k)
		case len(v) > 0 && v[0] == '{':
			var sub map[string]json.RawMessage
			if json.Unmarshal(v, &sub) != nil {
				continue
			}
			dropNulls(sub)
			if len(sub) == 0 {
				delete(m, k)
				continue
			}
			b, _ := json.Marshal(sub)
			m[k] = b
		}
	}
}

// objectPath is the repository path of a file named in the log: a path
// relative to the table root, URL-encoded. Paths that readers could resolve
// differently (dot segments, empty segments) are refused.
func (s *deltaState) objectPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") || deltaScheme.MatchString(p) {
		return "", fmt.Errorf("%w: absolute file path %s", ErrDeltaUnsupported, p)
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("file path %q: %v", p, err)
	}
	if dec == "" || slices.ContainsFunc(strings.Split(dec, "/"), func(seg string) bool { return seg == "" || seg == "." || seg == ".." }) {
		return "", fmt.Errorf("%w: file path %q is not a plain relative path", ErrDeltaUnsupported, p)
	}
	return path.Join(s.table.Path, dec), nil
}

// sizeOf is a size a log states, for a message.
func sizeOf(n *int64) string {
	if n == nil {
		return "no size"
	}
	return fmt.Sprintf("%d bytes", *n)
}

// differs says how two readings of one version differ, or "".
func (s *deltaState) differs(o *deltaState) string {
	for p := range s.active {
		if _, ok := o.active[p]; !ok {
			return "the checkpoint has file " + p + " active, the commits do not"
		}
	}
	for p, f := range o.active {
		g, ok := s.active[p]
		if !ok {
			return "the commits have file " + p + " active, the checkpoint does not"
		}
		if !maps.EqualFunc(f.parts, g.parts, func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }) {
			return "file " + p + " has other partition values"
		}
		// Readers read a file's footer where its size puts it, each
		// version by the reading it starts from: the snapshot compares the
		// size of the newest checkpoint's reading with the object, and the
		// readings of one version must state the same
		// (TestDeltaCheckpointOfAnotherSizeThanTheCommitsIsRefused).
		if (f.size == nil) != (g.size == nil) || (f.size != nil && *f.size != *g.size) {
			return fmt.Sprintf("file %s has another size (%s, %s)", p, sizeOf(g.size), sizeOf(f.size))
		}
		// A count stated on one side only is the file's count for both:
		// the reader that uses it answers count(*) from it.
		switch {
		case f.records != nil && g.records != nil && *f.records != *g.records:
			return "file " + p + " has another numRecords"
		case f.records == nil && g.records != nil:
			f.records = g.records
			o.active[p] = f
		case g.records == nil && f.records != nil:
			g.records = f.records
			s.active[p] = g
		}
		// Claims likewise; those a checkpoint holds are known by digest.
		// Claims the checkpoint (s) states and the reading before it (o)
		// does not are refused: known by digest alone, they are compared
		// with no data, and readers skip the file by them. A batch's
		// checkpoint claimed maxValues id 1 of main's file holding 2 that
		// no commit stated, and the audit passed, delta-rs reading no row
		// of id = 2 after the merge (TestDeltaCheckpointClaimsOfABaseFileAreCompared).
		switch {
		case f.claimsSum != "" && g.claimsSum != "" && f.claimsSum != g.claimsSum:
			return "file " + p + " has other stats (minValues, maxValues or nullCount)"
		case f.claimsSum == "" && g.claimsSum != "" && g.claims == nil:
			return "the checkpoint states stats (minValues, maxValues or nullCount) of file " + p + " that the log before it does not: they cannot be compared with its data, and Delta readers skip the file by them"
		case f.claimsSum == "" && g.claimsSum != "":
			f.claims, f.claimsSum = g.claims, g.claimsSum
			o.active[p] = f
		case g.claimsSum == "" && f.claimsSum != "":
			g.claims, g.claimsSum = f.claims, f.claimsSum
			s.active[p] = g
		case f.claims == nil && g.claims != nil:
			f.claims = g.claims
			o.active[p] = f
		case g.claims == nil && f.claims != nil:
			g.claims = f.claims
			s.active[p] = g
		}
	}
	a, b := s.protocol, o.protocol
	if a.MinReaderVersion != b.MinReaderVersion || !slices.Equal(slices.Sorted(slices.Values(a.ReaderFeatures)), slices.Sorted(slices.Values(b.ReaderFeatures))) {
		return "the protocol differs"
	}
	m, n := s.meta, o.meta
	if m.SchemaString != n.SchemaString || !slices.Equal(m.PartitionColumns, n.PartitionColumns) ||
		!maps.Equal(m.Configuration, n.Configuration) || !strings.EqualFold(m.Format.Provider, n.Format.Provider) {
		return "the table's metadata (schema, partition columns or configuration) differs"
	}
	return ""
}

// snapshot attaches each active file's object, reads the schema and checks
// the partition values.
func (s *deltaState) snapshot(objects map[string]Object) (*deltaSnapshot, error) {
	snap := &deltaSnapshot{active: s.active, named: s.named, materialized: map[string]bool{}, changes: s.changes, addedIn: s.addedIn,
		gone: s.gone, metaAt: s.metaAt, meta: s.meta}
	for _, k := range []string{"delta.rowTracking.materializedRowIdColumnName", "delta.rowTracking.materializedRowCommitVersionColumnName"} {
		if c := s.meta.Configuration[k]; c != "" {
			snap.materialized[strings.ToLower(c)] = true
		}
	}
	fields, err := deltaColumnTypes(s.meta.SchemaString)
	if err != nil {
		return nil, tableErr("schema of %s: %v", s.table.Name, err)
	}
	snap.schema = fields
	snap.leaves = deltaLeaves(s.meta.SchemaString)
	if schemaHasType(s.meta.SchemaString, "timestamp_ntz") && !slices.Contains(s.protocol.ReaderFeatures, "timestampNtz") {
		// delta-rs refuses to read such a table; Spark too.
		return nil, tableErr("%w: the schema has a timestamp_ntz column and the protocol lacks reader feature timestampNtz", ErrDeltaUnsupported)
	}
	types := map[string]string{}
	for _, f := range fields {
		types[f.Name] = f.Type
	}
	for _, c := range s.meta.PartitionColumns {
		typ, ok := types[c]
		if !ok || typ == "" {
			return nil, tableErr("partition column %s is not in the schema, or of a type lakewap cannot read", c)
		}
		snap.partition = append(snap.partition, ColumnType{Name: c, Type: typ})
	}
	for p, f := range s.active {
		o, ok := objects[f.obj.Path]
		if !ok {
			return nil, tableErr("the Delta log names data file %s, which is not in the repository at this ref", f.obj.Path)
		}
		f.obj = o
		if f.size != nil && *f.size != o.Size {
			// delta-rs reads the footer where the log's size puts it.
			return nil, tableErr("%w: the log says data file %s has %d bytes, the repository has %d", ErrDeltaUnsupported, o.Path, *f.size, o.Size)
		}
		for k := range f.parts {
			if !slices.Contains(s.meta.PartitionColumns, k) {
				return nil, tableErr("%w: file %s has a value for %s, which is not a partition column", ErrDeltaUnsupported, p, k)
			}
		}
		f.lits = nil
		for _, pc := range snap.partition {
			v, ok := f.parts[pc.Name]
			if !ok {
				return nil, tableErr("%w: file %s has no value for partition column %s", ErrDeltaUnsupported, p, pc.Name)
			}
			lit, err := partitionLiteral(v, pc.Type)
			if err != nil {
				return nil, tableErr("%w: file %s: partition column %s: %v", ErrDeltaUnsupported, p, pc.Name, err)
			}
			f.lits = append(f.lits, lit)
		}
		s.active[p] = f
	}
	return snap, nil
}

var (
	deltaDecimal   = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)
	partInteger    = regexp.MustCompile(`^-?[0-9]+$`)
	partDecimal    = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	partDate       = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	partTimestamp  = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$`)
	partTimestampZ = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$`)
)

// partitionLiteral is a partition value as the protocol defines it, as a
// SQL literal of the column's type. An empty string is NULL for every
// type, as delta-kernel and delta-rs read it. Hive's
// __HIVE_DEFAULT_PARTITION__ is NULL to Hive-style readers and the text
// itself to delta-rs 1.6 (TestDeltaDifferentialAgainstDeltaRS): refused.
// A value that is not in the protocol's form for its type is refused
// rather than left to DuckDB's more lenient casts.
func partitionLiteral(v *string, typ string) (string, error) {
	if v == nil || *v == "" {
		return "CAST(NULL AS " + typ + ")", nil
	}
	if *v == "__HIVE_DEFAULT_PARTITION__" {
		return "", fmt.Errorf("%q is NULL to some readers and text to others", *v)
	}
	s := *v
	bad := func() (string, error) { return "", fmt.Errorf("%q is not a %s partition value", s, typ) }
	cast := func() (string, error) { return "CAST(" + quoteLiteral(s) + " AS " + typ + ")", nil }
	switch {
	case typ == "VARCHAR":
		return quoteLiteral(s), nil
	case typ == "BIGINT" || typ == "INTEGER" || typ == "SMALLINT" || typ == "TINYINT":
		bits := map[string]int{"BIGINT": 64, "INTEGER": 32, "SMALLINT": 16, "TINYINT": 8}[typ]
		if !partInteger.MatchString(s) {
			return bad()
		}
		if _, err := strconv.ParseInt(s, 10, bits); err != nil {
			return bad()
		}
		return cast()
	case typ == "DOUBLE" || typ == "FLOAT":
		if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, "xXpP_") {
			return bad()
		}
		return cast()
	case typ == "BOOLEAN":
		if s != "true" && s != "false" {
			return bad()
		}
		return s, nil
	case typ == "DATE":
		if !partDate.MatchString(s) {
			return bad()
		}
		return cast()
	case typ == "TIMESTAMPTZ":
		// The protocol's timestamps are UTC, in either form.
		if !partTimestamp.MatchString(s) && !partTimestampZ.MatchString(s) {
			return bad()
		}
		return "CAST(" + quoteLiteral(strings.TrimSuffix(strings.Replace(s, "T", " ", 1), "Z")+"+00") + " AS TIMESTAMPTZ)", nil
	case typ == "TIMESTAMP":
		if !partTimestamp.MatchString(s) {
			return bad()
		}
		return cast()
	case strings.HasPrefix(typ, "DECIMAL("):
		if !partDecimal.MatchString(s) {
			return bad()
		}
		// delta-rs 1.6.6 reads a decimal partition value only with as
		// many fraction digits as the scale, and none negative with a
		// fraction ("-1.50" fails as "-1.-50"); it fails to read the
		// table where Spark reads it (TestDeltaProtocolFeaturesAsDeltaRSReadsThem).
		var prec, scale int
		fmt.Sscanf(typ, "DECIMAL(%d,%d)", &prec, &scale)
		whole, frac, _ := strings.Cut(s, ".")
		if len(frac) != scale || scale > 0 && strings.HasPrefix(whole, "-") {
			return "", fmt.Errorf("%q is not read by delta-rs as a %s partition value (it reads %d fraction digits, none negative): readers disagree", s, typ, scale)
		}
		return cast()
	}
	return "", fmt.Errorf("partition columns of type %s are not read by lakewap", typ)
}

// schemaHasType says whether a Delta schema has a field, an array's
// element or a map's key or value of primitive type typ, at any depth.
func schemaHasType(schema, typ string) bool {
	var v any
	if json.Unmarshal([]byte(schema), &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if t, ok := c.(string); ok && t == typ && (k == "type" || k == "elementType" || k == "keyType" || k == "valueType") {
					return true
				}
				if walk(c) {
					return true
				}
			}
		case []any:
			return slices.ContainsFunc(x, walk)
		}
		return false
	}
	return walk(v)
}

// deltaLeaf is a primitive column or struct field of a Delta schema: its
// path (column, then fields) and DuckDB type.
type deltaLeaf struct {
	path []string
	typ  string
}

// deltaLeaves are the leaves of a Delta schema of a type lakewap maps,
// through structs (not arrays or maps: writers keep no stats of them).
func deltaLeaves(schema string) []deltaLeaf {
	type field struct {
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	var out []deltaLeaf
	var walk func(prefix []string, fields []field)
	walk = func(prefix []string, fields []field) {
		for _, f := range fields {
			path := append(slices.Clone(prefix), f.Name)
			var st struct {
				Type   string  `json:"type"`
				Fields []field `json:"fields"`
			}
			if json.Unmarshal(f.Type, &st) == nil && st.Type == "struct" {
				walk(path, st.Fields)
				continue
			}
			if t := deltaPrimitive(f.Type); t != "" {
				out = append(out, deltaLeaf{path, t})
			}
		}
	}
	var s struct {
		Fields []field `json:"fields"`
	}
	if json.Unmarshal([]byte(schema), &s) == nil {
		walk(nil, s.Fields)
	}
	return out
}

// deltaStructPaths are, by top-level column of a Delta schema, the paths
// of its struct fields at any depth below it (through structs only), names
// joined by "\x00" as fileColumn.nested joins them (fieldCase).
func deltaStructPaths(schema string) map[string][]string {
	type field struct {
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	out := map[string][]string{}
	var walk func(top, prefix string, fields []field)
	walk = func(top, prefix string, fields []field) {
		for _, f := range fields {
			p := f.Name
			if prefix != "" {
				p = prefix + "\x00" + f.Name
			}
			if top != "" {
				out[top] = append(out[top], p)
			}
			var st struct {
				Type   string  `json:"type"`
				Fields []field `json:"fields"`
			}
			if json.Unmarshal(f.Type, &st) != nil || st.Type != "struct" {
				continue
			}
			if top == "" {
				walk(f.Name, "", st.Fields)
			} else {
				walk(top, p, st.Fields)
			}
		}
	}
	var s struct {
		Fields []field `json:"fields"`
	}
	if json.Unmarshal([]byte(schema), &s) == nil {
		walk("", "", s.Fields)
	}
	return out
}

var deltaPrimitives = map[string]string{"string": "VARCHAR", "long": "BIGINT", "integer": "INTEGER", "short": "SMALLINT",
	"byte": "TINYINT", "float": "FLOAT", "double": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE",
	"timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP"}

// deltaPrimitive is the DuckDB type of a Delta primitive type, "" for any
// other.
func deltaPrimitive(raw json.RawMessage) string {
	var t string
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	if d, ok := deltaPrimitives[t]; ok {
		return d
	}
	if m := deltaDecimal.FindStringSubmatch(t); m != nil {
		return "DECIMAL(" + m[1] + "," + m[2] + ")"
	}
	return ""
}

// deltaColumnTypes maps the table's top-level columns to DuckDB types ("" for
// a struct, array or map, and for a type lakewap does not map).
func deltaColumnTypes(schema string) ([]ColumnType, error) {
	var s struct {
		Fields []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	if err := exactCase([]byte(schema), reflect.TypeOf(s)); err != nil {
		return nil, err
	}
	var out []ColumnType
	for _, f := range s.Fields {
		out = append(out, ColumnType{Name: f.Name, Type: deltaPrimitive(f.Type)})
	}
	return out, nil
}

// objects are the active files, in path order.
func (s *deltaSnapshot) objects() []Object {
	return s.select_(func(string, deltaFile) bool { return true })
}

// changedSince are the active files whose rows base does not have: those
// base has not active, and those whose bytes (physical address, checksum
// or size) or partition values differ from base's file of the same path. A
// file overwritten in place, with the log untouched, is one of them. So
// is a file of base's the batch adds again with other stats (numRecords,
// or claims: a stats update), which readers of main count and skip it by
// from the merge on: the batch view's stats comparisons read it
// (deltaRecordDisagreement, deltaClaimsDisagreement). A batch re-adding
// main's file with maxValues id 1 over a file holding 2 passed a suite of
// batch checks, and delta-rs read no row of id = 2 on main after
// (TestDeltaStatsUpdateOfABaseFileIsCompared).
func (s *deltaSnapshot) changedSince(base *deltaSnapshot) []Object {
	return s.select_(func(p string, f deltaFile) bool {
		b, had := base.active[p]
		return !had || !sameObject(b.obj, f.obj) || !slices.Equal(b.lits, f.lits) ||
			b.claimsSum != f.claimsSum || sizeOf(b.records) != sizeOf(f.records)
	})
}

// sameObject says whether two listings of an object name the same bytes.
func sameObject(a, b Object) bool {
	if a.Path != b.Path || a.Size != b.Size || a.Checksum != b.Checksum {
		return false
	}
	return a.Address == b.Address
}

func (s *deltaSnapshot) select_(keep func(string, deltaFile) bool) []Object {
	var out []Object
	for p, f := range s.active {
		if keep(p, f) {
			out = append(out, f.obj)
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// deltaLogOnlyGrows: a batch may change a Delta table's log only by adding
// versions. A reader that already read the base (a streaming reader, a
// cache) reads only the versions after it: an older commit rewritten or
// deleted, or a commit added at an old version, would give it other rows
// than the audit read. New checkpoints of the batch's versions and
// _last_checkpoint may come.
func (r *run) deltaLogOnlyGrows(ctx context.Context, t Table) error {
	dir := deltaLogDir(t.Path)
	base, err := r.list(ctx, r.req.BaseRef, dir)
	if err != nil {
		if errors.As(err, new(errOverBudget)) {
			return errDeltaTable{err}
		}
		return fmt.Errorf("list table %s at %s: %w", t.Name, r.req.BaseRef, err)
	}
	if len(base) == 0 {
		return nil
	}
	cur, err := r.list(ctx, r.req.Ref, dir)
	if err != nil {
		if errors.As(err, new(errOverBudget)) {
			return errDeltaTable{err}
		}
		return fmt.Errorf("list table %s at %s: %w", t.Name, r.req.Ref, err)
	}
	now := map[string]Object{}
	for _, o := range cur {
		now[o.Path] = o
	}
	latest := int64(-1)
	for _, o := range base {
		name := strings.TrimPrefix(o.Path, dir)
		if m := deltaCommit.FindStringSubmatch(name); m != nil {
			latest = max(latest, atoi64(m[1]))
		}
		if name == "_last_checkpoint" {
			continue
		}
		n, ok := now[o.Path]
		switch {
		case !ok:
			return tableErr("%w: the batch deletes %s from the Delta log (a batch may only add versions)", ErrDeltaUnsupported, o.Path)
		case !sameObject(n, o):
			return tableErr("%w: the batch rewrites %s in the Delta log (a batch may only add versions)", ErrDeltaUnsupported, o.Path)
		}
		delete(now, o.Path)
	}
	for p := range now {
		name := strings.TrimPrefix(p, dir)
		if m := deltaCommit.FindStringSubmatch(name); m != nil && atoi64(m[1]) <= latest {
			return tableErr("%w: the batch adds commit %s at or below the base's version %d", ErrDeltaUnsupported, p, latest)
		}
		// Time travel to a base's version reads the newest checkpoint at
		// or before it, which the audit (replaying the batch's versions)
		// does not compare with the base's log
		// (TestDeltaBatchCheckpointOfABaseVersionIsRefused).
		m := deltaCheckpoint.FindStringSubmatch(name)
		if m == nil {
			m = deltaMultipart.FindStringSubmatch(name)
		}
		if m != nil && atoi64(m[1]) <= latest {
			return tableErr("%w: the batch adds %s, a checkpoint of version %d, at or below the base's version %d: readers of that version would read it, the audit reads the batch's versions",
				ErrDeltaUnsupported, p, atoi64(m[1]), latest)
		}
	}
	return nil
}

// deltaViewSQL defines a Delta table's view. Partition values live in the
// log, not in the files: each group of files with the same values is read
// with those values added as columns.
func deltaViewSQL(schema, table string, snap *deltaSnapshot, objs []Object, files []string) string {
	if snap == nil || len(snap.partition) == 0 {
		if snap != nil && len(snap.materialized) > 0 {
			return fmt.Sprintf("CREATE VIEW %s AS %s", qualified(schema, table), snap.hideMaterialized("SELECT * FROM "+readSQL(FormatParquet, files)))
		}
		return viewSQL(schema, table, FormatParquet, files)
	}
	byObj := map[string]deltaFile{}
	for _, f := range snap.active {
		byObj[f.obj.Path] = f
	}
	groups := map[string][]string{}
	for i, o := range objs {
		f := byObj[o.Path]
		cols := make([]string, len(snap.partition))
		for j, pc := range snap.partition {
			cols[j] = fmt.Sprintf("%s AS %s", f.lits[j], quoteIdent(pc.Name))
		}
		k := strings.Join(cols, ", ")
		groups[k] = append(groups[k], files[i])
	}
	parts := each(slices.Sorted(maps.Keys(groups)), func(k string) string {
		return fmt.Sprintf("SELECT * , %s FROM read_parquet(%s, union_by_name = true%s)", k, literalList(groups[k]), noHive)
	})
	return fmt.Sprintf("CREATE VIEW %s AS %s", qualified(schema, table), snap.hideMaterialized(strings.Join(parts, " UNION ALL BY NAME ")))
}

// hideMaterialized leaves the row tracking columns writers keep in data
// files out of the rows of q, as Delta readers do (they read the schema's
// columns only; any other column is refused: deltaTypeDisagreement).
func (s *deltaSnapshot) hideMaterialized(q string) string {
	if len(s.materialized) == 0 {
		return q
	}
	return fmt.Sprintf("SELECT COLUMNS(lambda c: NOT list_contains(%s, lower(c))) FROM (%s)", literalList(slices.Sorted(maps.Keys(s.materialized))), q)
}

// deltaView fills a view of a Delta table: the active files at the ref
// (main, base) or those whose rows the base does not have (batch). A log
// the reader does not understand breaks the view, and the checks that use
// it report the error.
func (r *run) deltaView(ctx context.Context, dl downloader, k viewKey, v *view) error {
	ref := v.ref
	snap, err := r.deltaLoad(ctx, dl, ref, v.table)
	if err == nil && k.schema == schemaInterim {
		v.delta = snap.interimSnapshot()
		v.objects = v.delta.objects()
	} else if err == nil {
		v.delta, v.objects = snap, snap.objects()
		if k.schema == schemaBatch {
			var base *deltaSnapshot
			if base, err = r.deltaLoad(ctx, dl, r.req.BaseRef, v.table); err == nil {
				v.objects = snap.changedSince(base)
			} else {
				ref = r.req.BaseRef
			}
		}
	}
	if err == nil {
		return nil
	}
	if errors.As(err, new(errDeltaTable)) {
		v.broken = true
		v.colsErr = fmt.Errorf("delta table %s at %s: %w", v.table.Name, ref, refused(err))
		r.log.Warn("audit: delta log not readable", "table", v.table.Name, "ref", ref, "err", err)
		return nil
	}
	return fmt.Errorf("audit: %w", err)
}

// statsParsedTypes refuses a checkpoint's stats_parsed (its from_json
// structure) that claims a column's minValues or maxValues in another
// type than the schema's. checkpointSQL compares the JSON stats read into
// the stats_parsed's own types, and a narrower type makes them equal
// where the values differ: a DOUBLE column's JSON max 3.00000001 is the
// FLOAT 3.0, by which delta-rs skips the file for x = 3.00000001
// (TestReview10StatsParsedOfANarrowerTypeIsRefused). A TIMESTAMP claim
// of a UTC timestamp column likewise: from_json drops the offset a JSON
// claim names, and delta-rs casts the wall-clock time to UTC
// (TestReview10StatsParsedTimestampWithoutZoneIsRefused). A claim of a
// field the schema does not have is left: no reader skips by it.
func statsParsedTypes(structure string, leaves []deltaLeaf) error {
	var st map[string]any
	if err := json.Unmarshal([]byte(structure), &st); err != nil {
		return fmt.Errorf("%w: the checkpoint's stats_parsed structure: %v", ErrDeltaUnsupported, err)
	}
	want := map[string]string{}
	top := map[string]bool{}
	for _, l := range leaves {
		want[strings.Join(l.path, "\x00")] = l.typ
		top[l.path[0]] = true
	}
	norm := func(t string) string {
		t = strings.ToUpper(strings.ReplaceAll(t, " ", ""))
		if t == "TIMESTAMPWITHTIMEZONE" {
			t = "TIMESTAMPTZ"
		}
		return t // TIMESTAMP and TIMESTAMPTZ differ: from_json reads "10:00-05:00" as TIMESTAMP 10:00
	}
	for _, stat := range []string{"minValues", "maxValues"} {
		m, ok := st[stat].(map[string]any)
		if !ok {
			continue
		}
		var walk func(path []string, v any) error
		walk = func(path []string, v any) error {
			if o, ok := v.(map[string]any); ok {
				for k, c := range o {
					if err := walk(append(slices.Clone(path), k), c); err != nil {
						return err
					}
				}
				return nil
			}
			typ, _ := v.(string)
			w, ok := want[strings.Join(path, "\x00")]
			if !ok || norm(w) != norm(typ) {
				if !ok {
					w = "no primitive type"
				}
				return fmt.Errorf("%w: the checkpoint's stats_parsed claims %s of %s as %s, where the schema gives it %s: delta-rs skips files by it read as the column's type, its JSON stats read as its own equal it (readers disagree)",
					ErrDeltaUnsupported, stat, strings.Join(path, "."), typ, w)
			}
			return nil
		}
		for k, v := range m {
			if !top[k] {
				continue
			}
			if err := walk([]string{k}, v); err != nil {
				return err
			}
		}
	}
	return nil
}
