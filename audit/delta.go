package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Delta Lake tables. lakewap reads a table's _delta_log itself: the JSON
// commits are decoded here and Parquet checkpoints are read by the engine's
// DuckDB (as JSON rows, so both go through one decoder), and the actions
// are applied in version order to find the table's active files at the
// ref. No Go Delta library is used: the one lakeFS itself uses is a fork
// that is not on the module proxy's checksum database and brings a storage
// layer of its own, and DuckDB's delta extension cannot be installed
// offline; what the audit needs — the active file set and the files each
// commit added — is a small part of the protocol.
//
// What the reader does not understand is an error of the table's checks
// (status error), never a silent pass: a reader version above 3, a reader
// feature other than those below, column mapping, deletion vectors on a
// file, absolute file paths, a gap in the log that no checkpoint covers.

// deltaReaderFeatures are the table features (protocol reader version 3)
// that do not change which rows the active Parquet files hold.
var deltaReaderFeatures = map[string]bool{
	"timestampNtz":         true, // a column type DuckDB reads
	"vacuumProtocolCheck":  true, // only about vacuum
	"v2Checkpoint":         true, // checkpoints of that form are refused below; JSON commits still work
	"checkpointProtection": true, // only about log cleanup
}

// ErrDeltaUnsupported is a Delta log this reader does not understand.
var ErrDeltaUnsupported = errors.New("delta table not supported by lakewap's reader")

var (
	deltaCommit       = regexp.MustCompile(`^(\d{20})\.json$`)
	deltaCheckpoint   = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
	deltaMultipart    = regexp.MustCompile(`^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$`)
	deltaV2Checkpoint = regexp.MustCompile(`^(\d{20})\.checkpoint\.[0-9A-Fa-f-]{36}\.(json|parquet)$`)
)

// deltaSnapshot is a Delta table at a ref.
type deltaSnapshot struct {
	active    map[string]deltaFile // by object path in the repository
	partition []ColumnType         // partition columns, DuckDB types
}

type deltaFile struct {
	obj   Object
	parts map[string]*string
}

// deltaAction is one line of a commit (or one row of a checkpoint).
type deltaAction struct {
	Add *struct {
		Path            string             `json:"path"`
		PartitionValues map[string]*string `json:"partitionValues"`
		DeletionVector  json.RawMessage    `json:"deletionVector"`
	} `json:"add"`
	Remove *struct {
		Path string `json:"path"`
	} `json:"remove"`
	MetaData *struct {
		Format struct {
			Provider string `json:"provider"`
		} `json:"format"`
		SchemaString     string            `json:"schemaString"`
		PartitionColumns []string          `json:"partitionColumns"`
		Configuration    map[string]string `json:"configuration"`
	} `json:"metaData"`
	Protocol *struct {
		MinReaderVersion int      `json:"minReaderVersion"`
		ReaderFeatures   []string `json:"readerFeatures"`
	} `json:"protocol"`
}

// deltaLog is a table's listing split into log files and data objects.
type deltaLog struct {
	commits     map[int64]Object
	checkpoints map[int64][]Object // complete checkpoints only
	v2          map[int64]bool
	objects     map[string]Object // every object under the table path, by path
}

func splitDeltaLog(prefix string, objs []Object) deltaLog {
	l := deltaLog{commits: map[int64]Object{}, checkpoints: map[int64][]Object{}, v2: map[int64]bool{}, objects: map[string]Object{}}
	parts := map[int64]map[int]Object{}
	partTotal := map[int64]int{}
	logDir := strings.TrimPrefix(strings.TrimSuffix(prefix, "/")+"/_delta_log/", "/")
	for _, o := range objs {
		l.objects[o.Path] = o
		name, ok := strings.CutPrefix(o.Path, logDir)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		if m := deltaCommit.FindStringSubmatch(name); m != nil {
			l.commits[atoi64(m[1])] = o
		} else if m := deltaCheckpoint.FindStringSubmatch(name); m != nil {
			l.checkpoints[atoi64(m[1])] = []Object{o}
		} else if m := deltaMultipart.FindStringSubmatch(name); m != nil {
			v := atoi64(m[1])
			if parts[v] == nil {
				parts[v] = map[int]Object{}
			}
			parts[v][int(atoi64(m[2]))] = o
			partTotal[v] = int(atoi64(m[3]))
		} else if m := deltaV2Checkpoint.FindStringSubmatch(name); m != nil {
			l.v2[atoi64(m[1])] = true
		}
	}
	for v, ps := range parts {
		var objs []Object
		for i := 1; i <= partTotal[v] && ps[i].Path != ""; i++ {
			objs = append(objs, ps[i])
		}
		if len(ps) == partTotal[v] && len(objs) == partTotal[v] { // an incomplete one is not usable
			l.checkpoints[v] = objs
		}
	}
	return l
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// plan is which log files rebuild the latest version: all commits from 0,
// or the newest complete checkpoint and the commits after it.
func (l deltaLog) plan() (checkpoint []Object, commits []int64, latest int64, err error) {
	cp := slices.Max(append(slices.Collect(maps.Keys(l.checkpoints)), -1))
	if latest = max(cp, slices.Max(append(slices.Collect(maps.Keys(l.commits)), -1))); latest < 0 {
		if len(l.v2) > 0 {
			return nil, nil, -1, fmt.Errorf("%w: only V2 checkpoints (reader feature v2Checkpoint) and no JSON commits", ErrDeltaUnsupported)
		}
		return nil, nil, -1, nil
	}
	from := int64(0)
	for v := int64(0); v <= latest; v++ {
		if _, ok := l.commits[v]; !ok { // a gap: start from the newest checkpoint, after it
			if cp < v {
				return nil, nil, -1, fmt.Errorf("%w: the log is missing commit %d and has no usable checkpoint after it (cleaned up, or V2 checkpoints)",
					ErrDeltaUnsupported, v)
			}
			checkpoint, from = l.checkpoints[cp], cp+1
			break
		}
	}
	for v := from; v <= latest; v++ {
		if _, ok := l.commits[v]; !ok {
			return nil, nil, -1, fmt.Errorf("%w: the log is missing commit %d (of %d)", ErrDeltaUnsupported, v, latest)
		}
		commits = append(commits, v)
	}
	return checkpoint, commits, latest, nil
}

// deltaLoad reads the table's log at ref and returns its snapshot. An
// error wrapping ErrDeltaUnsupported (or a malformed log) is the table's
// problem; any other error is lakeFS or local I/O failing.
func (r *run) deltaLoad(ctx context.Context, dl downloader, ref string, t Table) (*deltaSnapshot, error) {
	key := ref + "\x00" + strings.ToLower(t.Name)
	s, ok := r.deltaSnaps[key]
	if !ok {
		s.snap, s.err = r.deltaRead(ctx, dl, ref, t)
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

func (r *run) deltaRead(ctx context.Context, dl downloader, ref string, t Table) (*deltaSnapshot, error) {
	objs, err := r.e.opts.Source.List(ctx, r.req.Repository, ref, t.Path)
	if err != nil {
		return nil, fmt.Errorf("list table %s at %s: %w", t.Name, ref, err)
	}
	snap := &deltaSnapshot{active: map[string]deltaFile{}}
	if len(objs) == 0 {
		return snap, nil // no table at this ref
	}
	l := splitDeltaLog(t.Path, objs)
	checkpoint, commits, latest, err := l.plan()
	if err != nil {
		return nil, errDeltaTable{err}
	}
	if latest < 0 {
		return nil, tableErr("not a Delta table: no _delta_log/ commits under %s", t.Path)
	}
	logFiles := append(slices.Clone(checkpoint), each(commits, func(v int64) Object { return l.commits[v] })...)
	local, err := dl.fetchAll(ctx, each(logFiles, func(o Object) fetch { return fetch{ref: ref, obj: o} }))
	if err != nil {
		return nil, fmt.Errorf("delta log of %s at %s: %w", t.Name, ref, err)
	}
	st := deltaState{snap: snap, table: t, objects: l.objects}
	if len(checkpoint) > 0 {
		v := latest - int64(len(commits))
		// A row of the checkpoint's parts as a JSON object, read on one of
		// the pool's connections: the run's is not open yet.
		rows, err := firstColumn[[]byte](ctx, r.e.db, "SELECT CAST(to_json(c) AS VARCHAR) FROM read_parquet("+
			literalList(local[:len(checkpoint)])+", union_by_name = true) c")
		if err != nil {
			return nil, tableErr("checkpoint %d of %s: %v", v, t.Name, err)
		}
		for _, row := range rows {
			if err := st.apply(row); err != nil {
				return nil, tableErr("checkpoint %d: %w", v, err)
			}
		}
		local = local[len(checkpoint):]
	}
	for i, v := range commits {
		b, err := os.ReadFile(local[i])
		if err != nil {
			return nil, fmt.Errorf("delta log of %s: %w", t.Name, err)
		}
		for line := range bytes.Lines(b) {
			if len(line) > 64<<20 {
				return nil, tableErr("commit %d of %s: %v", v, t.Name, bufio.ErrTooLong)
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if err := st.apply(line); err != nil {
				return nil, tableErr("commit %d: %w", v, err)
			}
		}
	}
	if !st.sawProtocol || !st.sawMeta {
		return nil, tableErr("the Delta log of %s has no protocol or metaData action", t.Name)
	}
	return snap, st.finish()
}

// deltaState applies actions to a snapshot.
type deltaState struct {
	snap                 *deltaSnapshot
	table                Table
	objects              map[string]Object
	sawProtocol, sawMeta bool
	schema               string
	partCols             []string
}

func (s *deltaState) apply(line []byte) error {
	var a deltaAction
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("not a Delta action: %v", err)
	}
	if p := a.Protocol; p != nil {
		s.sawProtocol = true
		if p.MinReaderVersion > 3 {
			return fmt.Errorf("%w: protocol reader version %d (lakewap reads up to 3)", ErrDeltaUnsupported, p.MinReaderVersion)
		}
		for _, f := range p.ReaderFeatures {
			if !deltaReaderFeatures[f] {
				return fmt.Errorf("%w: reader feature %s", ErrDeltaUnsupported, f)
			}
		}
	}
	if m := a.MetaData; m != nil {
		s.sawMeta = true
		if p := strings.ToLower(m.Format.Provider); p != "" && p != "parquet" {
			return fmt.Errorf("%w: data files in format %s", ErrDeltaUnsupported, m.Format.Provider)
		}
		if mode := m.Configuration["delta.columnMapping.mode"]; mode != "" && mode != "none" {
			return fmt.Errorf("%w: column mapping mode %s", ErrDeltaUnsupported, mode)
		}
		s.schema, s.partCols = m.SchemaString, m.PartitionColumns
	}
	if a.Add != nil {
		if dv := bytes.TrimSpace(a.Add.DeletionVector); len(dv) > 0 && string(dv) != "null" {
			return fmt.Errorf("%w: file %s has a deletion vector (reader feature deletionVectors)", ErrDeltaUnsupported, a.Add.Path)
		}
		p, err := s.objectPath(a.Add.Path)
		if err != nil {
			return err
		}
		s.snap.active[p] = deltaFile{parts: a.Add.PartitionValues}
	}
	if a.Remove != nil {
		p, err := s.objectPath(a.Remove.Path)
		if err != nil {
			return err
		}
		delete(s.snap.active, p)
	}
	return nil
}

// objectPath is the repository path of a file named in the log: a path
// relative to the table root, URL-encoded.
func (s *deltaState) objectPath(p string) (string, error) {
	if strings.Contains(p, "://") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: absolute file path %s", ErrDeltaUnsupported, p)
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("file path %q: %v", p, err)
	}
	return path.Join(s.table.Path, dec), nil
}

// finish attaches each active file's object and the partition columns.
func (s *deltaState) finish() error {
	for p, f := range s.snap.active {
		o, ok := s.objects[p]
		if !ok {
			return tableErr("the Delta log names data file %s, which is not in the repository at this ref", p)
		}
		f.obj = o
		s.snap.active[p] = f
	}
	if len(s.partCols) == 0 {
		return nil
	}
	types, err := deltaColumnTypes(s.schema)
	if err != nil {
		return tableErr("schema of %s: %v", s.table.Name, err)
	}
	for _, c := range s.partCols {
		typ, ok := types[c]
		if !ok {
			return tableErr("partition column %s is not in the schema, or of a type lakewap cannot read", c)
		}
		s.snap.partition = append(s.snap.partition, ColumnType{Name: c, Type: typ})
	}
	return nil
}

var deltaDecimal = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// deltaColumnTypes maps the table's primitive columns to DuckDB types.
func deltaColumnTypes(schema string) (map[string]string, error) {
	var s struct {
		Fields []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	prim := map[string]string{"string": "VARCHAR", "long": "BIGINT", "integer": "INTEGER", "short": "SMALLINT",
		"byte": "TINYINT", "float": "FLOAT", "double": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE",
		"timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP", "binary": "BLOB"}
	out := map[string]string{}
	for _, f := range s.Fields {
		var t string
		if json.Unmarshal(f.Type, &t) != nil {
			continue // a struct, array or map: never a partition column
		}
		if d, ok := prim[t]; ok {
			out[f.Name] = d
		} else if m := deltaDecimal.FindStringSubmatch(t); m != nil {
			out[f.Name] = "DECIMAL(" + m[1] + "," + m[2] + ")"
		}
	}
	return out, nil
}

// objects are the active files, in path order.
func (s *deltaSnapshot) objects() []Object {
	return s.select_(func(deltaFile) bool { return true })
}

// addedSince are the active files that base does not have: those the
// commits after the base's version added and no later commit removed.
// (Delta never reuses a data file's path, and a checkpoint does not say
// which commit added a file, so this is a difference of the two sets.)
func (s *deltaSnapshot) addedSince(base *deltaSnapshot) []Object {
	return s.select_(func(f deltaFile) bool { _, had := base.active[f.obj.Path]; return !had })
}

func (s *deltaSnapshot) select_(keep func(deltaFile) bool) []Object {
	var out []Object
	for _, f := range s.active {
		if keep(f) {
			out = append(out, f.obj)
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// deltaViewSQL defines a Delta table's view. Partition values live in the
// log, not in the files: each group of files with the same values is read
// with those values added as columns.
func deltaViewSQL(schema, table string, snap *deltaSnapshot, objs []Object, files []string) string {
	if snap == nil || len(snap.partition) == 0 {
		return viewSQL(schema, table, FormatParquet, files)
	}
	groups := map[string][]string{}
	for i, o := range objs {
		f := snap.active[o.Path]
		cols := each(snap.partition, func(pc ColumnType) string {
			v := "NULL"
			if p := f.parts[pc.Name]; p != nil {
				v = quoteLiteral(*p)
			}
			return fmt.Sprintf("CAST(%s AS %s) AS %s", v, pc.Type, quoteIdent(pc.Name))
		})
		k := strings.Join(cols, ", ")
		groups[k] = append(groups[k], files[i])
	}
	parts := each(slices.Sorted(maps.Keys(groups)), func(k string) string {
		return fmt.Sprintf("SELECT * , %s FROM read_parquet(%s, union_by_name = true)", k, literalList(groups[k]))
	})
	return fmt.Sprintf("CREATE VIEW %s AS %s", qualified(schema, table), strings.Join(parts, " UNION ALL BY NAME "))
}

// deltaView fills a view of a Delta table: the active files at the ref
// (main, base) or those the commits after the base's version added
// (batch). A log the reader does not understand breaks the view, and the
// checks that use it report the error.
func (r *run) deltaView(ctx context.Context, dl downloader, k viewKey, v *view) error {
	ref := v.ref
	snap, err := r.deltaLoad(ctx, dl, ref, v.table)
	if err == nil {
		v.delta, v.objects = snap, snap.objects()
		if k.schema == schemaBatch {
			var base *deltaSnapshot
			if base, err = r.deltaLoad(ctx, dl, r.req.BaseRef, v.table); err == nil {
				v.objects = snap.addedSince(base)
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
		v.colsErr = fmt.Errorf("delta table %s at %s: %w", v.table.Name, ref, err)
		r.log.Warn("audit: delta log not readable", "table", v.table.Name, "ref", ref, "err", err)
		return nil
	}
	return fmt.Errorf("audit: %w", err)
}
