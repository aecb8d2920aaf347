// Package runstore is the run changelog as the runner may trust it: every
// record lakewap writes carries its place in the partition's order, an
// (epoch, sequence) pair, and an authenticator (HMAC-SHA256 with the
// daemon's state key over the record's key and bytes, the pair included).
// A store that loads a partition takes the next epoch and writes it down
// in a sealed mark (a reserved key, never a run's), and rewrites the mark
// with each record, so the partition's newest mark is at or above every
// record lakewap wrote before it. With a fence (Config.Fence), a store takes
// the epoch only once the consumer group confirmed that it still owns the
// partition, so an old owner whose load starts after the new owner's does
// not take the epoch above it. A restored record is handed to the runner
// only when it is authentic, not below a record or mark lakewap wrote
// before it in the partition (a replay, or an old owner still writing after
// a handover), and describes a run the config allows (its dataset exists;
// repository, target, source and branch are what the config and the batch
// id give; its key is the run's key). Any other record is set aside:
// logged, counted, left in the changelog for inspection, and never acted
// on; the run keeps its newest authentic record.
//
// It imports pipeline (the run record and dataset specs), schemas, kafka
// (the partition of a batch id) and consumer (the changelog's record).
package runstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Inner is the store underneath (the Kafka changelog).
type Inner interface {
	// Write appends records to the partition in their order, all or none
	// (a nil value is a tombstone).
	Write(ctx context.Context, partition int, records ...consumer.ChangelogRecord) error
	// Scan hands fn the partition's records in the order they were
	// written (a tombstone as a nil value).
	Scan(ctx context.Context, partition int, fn func(key string, value []byte)) error
}

// Reasons a record is set aside (the reason label).
const (
	ReasonUnsealed   = "unsealed"   // no authenticator: not written by lakewap with the state key
	ReasonBadSeal    = "bad_seal"   // an authenticator that does not match: forged or altered
	ReasonUnreadable = "unreadable" // not a run record
	ReasonDataset    = "unknown_dataset"
	ReasonMismatch   = "mismatch"        // repository, target, source, branch or key not what the config gives
	ReasonPartition  = "wrong_partition" // not the partition of its batch id: a copy would give the run a second owner
	// ReasonReplayed: an authentic record placed below a record or mark
	// lakewap wrote before it in the partition, or a copy of a run's record
	// after lakewap deleted the run: lakewap's own record written again by
	// someone else, or an old owner's written after a handover.
	ReasonReplayed = "replayed"
)

// Overhead is what sealing adds to a run record: its epoch, sequence and
// authenticator (the changelog's message size must hold the run budget plus
// this).
const Overhead = len(`,"wap_epoch":18446744073709551615,"wap_owner":"0123456789abcdef","wap_seq":18446744073709551615,"wap_seal":""`) + 64

// The keys of a partition's marks start with "#": no run key can (a
// dataset name and a batch id start with a letter, digit or one of
// _ - . : + @), so readers of runs skip them. The epoch mark is written
// once, when a store loads the partition, and stays where it is: it dates
// every record of an older epoch written after it (an old owner's, a
// replay). The last mark is written again with each record: it dates a
// replay written after lakewap's last record, whatever compaction removed.
const (
	EpochMarkPrefix = "#wap.epoch/"
	LastMarkPrefix  = "#wap.mark/"
)

// markBody is a mark's value before sealing.
const markBody = `{"wap_mark":true}`

// MaxMarkBytes is the most a mark record (key and value) takes.
const MaxMarkBytes = len(EpochMarkPrefix+"18446744073709551615.0123456789abcdef") + len(markBody) + Overhead

// MaxWriteBytes bounds one write of Load (marks, and records written
// again, tombstones) as the broker counts it against the changelog's
// max.message.bytes: a Kafka record batch, framing included (one record
// larger than it is written alone).
const MaxWriteBytes = 512 << 10

// Kafka's framing of a record batch (v2, uncompressed): its header, and at
// most this much per record besides its key and value (length, attributes,
// timestamp and offset deltas, key and value lengths, header count).
const (
	batchFraming  = 61
	recordFraming = 5 + 1 + 10 + 5 + 5 + 5 + 1
)

// IsMark says whether key is a mark's, not a run's.
func IsMark(key string) bool { return strings.HasPrefix(key, "#") }

// maxLogged bounds the set-aside records one Load logs one by one; the rest
// are counted and summed up in one line.
const maxLogged = 20

// maxJunkKeyBytes bounds the keys one load remembers of records it sets
// aside under keys holding no record of lakewap's (to delete them): a
// writer of the topic could write keys of 1 MiB until a load that held
// them all ran out of memory before deleting any. Past it, the next load
// deletes the rest.
const maxJunkKeyBytes = 16 << 20

// Config wires a Store.
type Config struct {
	Inner Inner
	// Key is the daemon's state key; nil stores and accepts records without
	// an authenticator (only the config checks apply).
	Key []byte
	// Datasets resolves a dataset name to its spec.
	Datasets func(name string) (pipeline.DatasetSpec, bool)
	// Partitions, if set, returns the input topic's partition count: a
	// record is restored only from the partition of its batch id (0: not
	// checked).
	Partitions func() int
	Logger     *slog.Logger
	// Fence, if set, says whether this instance still owns the partition
	// in the consumer group's current generation (nil: it does). Load asks
	// it after reading the partition and before writing anything: an old
	// owner whose Load starts after the new owner's must not take the
	// partition's next epoch, or the new owner's later records are set
	// aside. Without it (unit tests, lakewap runs) Load writes as before.
	Fence func(ctx context.Context, partition int) error
	// Registerer, if set, gets lakewap_state_records_set_aside_total.
	Registerer prometheus.Registerer
}

// Store is a pipeline runner's Store.
type Store struct {
	cfg      Config
	setAside *prometheus.CounterVec

	mu    sync.Mutex
	parts map[int]*sequence
}

// sequence places the records of one partition: its epoch is taken at
// Load, above every epoch the partition holds, with an owner id of its own
// (two stores that load at once may take the same epoch), and its number
// rises with each record. Its lock is held from numbering a record to its write
// acknowledged, so places rise with the records' offsets.
type sequence struct {
	mu     sync.Mutex
	loaded bool
	last   place
}

// place orders lakewap's records in a partition: by epoch, then, within
// one owner of the epoch, by sequence number. Records written before
// epochs were are epoch 0; records written before owner ids were have
// owner "".
type place struct {
	epoch uint64
	owner string // 16 hex digits, drawn when the epoch is taken
	seq   uint64
}

// unordered is what compare says of two owners' places in one epoch.
const unordered = 2

// compare orders places: -1 when p is before q, 0 the same place, 1 after,
// unordered for two owners of the same epoch (two stores that loaded the
// partition at once: neither can tell which one Kafka gave it to last, so
// neither sets aside the other's records). A record sealed before epochs
// (epoch 0, numbered by its writer's clock: a build after 0.9.0 that was
// never released) ranks below every epoch: read by sequence among its
// kind, so a log of such records restores as it did, but one written after
// a load of this version is an old owner's or a replay. Ranking them by
// sequence across epochs let an old-version zombie's clock numbers overtake
// the current owner for good.
func (p place) compare(q place) int {
	switch {
	case p.epoch != q.epoch:
		return cmp.Compare(p.epoch, q.epoch)
	case p.owner != q.owner:
		return unordered
	}
	return cmp.Compare(p.seq, q.seq)
}

func (p place) String() string {
	return fmt.Sprintf("(epoch %d, owner %q, sequence %d)", p.epoch, p.owner, p.seq)
}

// frontier is the newest places read so far: one, or one for each owner of
// the highest epoch.
type frontier []place

// of says how at compares with the frontier: -1 below one of its places
// (an older record), 0 at one of them, else after or beside them.
func (f frontier) of(at place) int {
	same := false
	for _, p := range f {
		switch at.compare(p) {
		case -1:
			return -1
		case 0:
			same = true
		}
	}
	if same {
		return 0
	}
	return 1
}

// advance moves the frontier to at, which is not below it.
func (f frontier) advance(at place) frontier {
	f = slices.DeleteFunc(f, func(p place) bool { c := p.compare(at); return c == -1 || c == 0 })
	return append(f, at)
}

// seq is the highest sequence number on the frontier.
func (f frontier) seq() uint64 {
	var n uint64
	for _, p := range f {
		n = max(n, p.seq)
	}
	return n
}

func (f frontier) String() string {
	parts := make([]string, len(f))
	for i, p := range f {
		parts[i] = p.String()
	}
	return strings.Join(parts, " and ")
}

// ErrNotLoaded: a sealed record is written only to a partition the store
// loaded (its epoch is taken there).
var ErrNotLoaded = errors.New("runstore: partition not loaded")

// ErrFenced: Load did not take the partition, its fence said this instance
// no longer owns it (the group rebalanced since it was assigned).
var ErrFenced = errors.New("runstore: partition no longer this instance's")

// New returns the store; Inner and Datasets are required.
func New(cfg Config) (*Store, error) {
	if cfg.Inner == nil || cfg.Datasets == nil {
		return nil, errors.New("runstore: Inner and Datasets are required")
	}
	if cfg.Key != nil && len(cfg.Key) < 32 {
		return nil, fmt.Errorf("runstore: the state key has %d bytes, want at least 32", len(cfg.Key))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	setAside, err := newSetAside(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, parts: map[int]*sequence{}, setAside: setAside}
	return s, nil
}

// sealSuffix ends a sealed record: the run's JSON object with more
// members, which readers of the run (lakewap runs) ignore. The seal covers
// the place. Records written before epochs were have no "wap_epoch".
var sealSuffix = regexp.MustCompile(`(?:,"wap_epoch":([0-9]{1,20})(?:,"wap_owner":"([0-9a-f]{16})")?)?,"wap_seq":([0-9]{1,20}),"wap_seal":"([0-9a-f]{64})"\}$`)

func (s *Store) seal(key string, value []byte) string {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("lakewap run record v1\n"))
	m.Write([]byte(key))
	m.Write([]byte{'\n'})
	m.Write(value)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Store) sequence(partition int) *sequence {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.parts[partition]
	if q == nil {
		q = &sequence{}
		s.parts[partition] = q
	}
	return q
}

// Put stores value (a run's JSON object) under key, placed after the
// partition's last record and sealed, with the partition's last mark in the
// same write.
func (s *Store) Put(ctx context.Context, partition int, key string, value []byte) error {
	if s.cfg.Key == nil {
		if value == nil {
			value = []byte{} // a value, not a tombstone
		}
		return s.cfg.Inner.Write(ctx, partition, consumer.ChangelogRecord{Key: key, Value: value})
	}
	if IsMark(key) {
		return fmt.Errorf("runstore: key %q is reserved for marks", schemas.Clip(key, 256))
	}
	v := bytes.TrimRight(value, " \n")
	if len(v) < 2 || v[len(v)-1] != '}' {
		return fmt.Errorf("runstore: record %s is not a JSON object", key)
	}
	q := s.sequence(partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.loaded {
		return fmt.Errorf("%w: writing %s to partition %d", ErrNotLoaded, schemas.Clip(key, 256), partition)
	}
	q.last.seq++
	return s.cfg.Inner.Write(ctx, partition, consumer.ChangelogRecord{Key: key, Value: s.sealed(key, v, q.last)}, s.mark(LastMarkPrefix, q.last))
}

// Delete deletes key: a tombstone, then the partition's last mark with the
// next place, so that a copy of the key's last record written later is below it.
func (s *Store) Delete(ctx context.Context, partition int, key string) error {
	tombstone := consumer.ChangelogRecord{Key: key}
	if s.cfg.Key == nil {
		return s.cfg.Inner.Write(ctx, partition, tombstone)
	}
	q := s.sequence(partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.loaded {
		return fmt.Errorf("%w: deleting %s in partition %d", ErrNotLoaded, schemas.Clip(key, 256), partition)
	}
	q.last.seq++
	return s.cfg.Inner.Write(ctx, partition, tombstone, s.mark(LastMarkPrefix, q.last))
}

// sealed is v (a JSON object without trailing space) with at's place and
// the seal over key and both.
func (s *Store) sealed(key string, v []byte, at place) []byte {
	placed := fmt.Appendf(bytes.Clone(v[:len(v)-1]), `,"wap_epoch":%d,"wap_owner":"%s","wap_seq":%d}`, at.epoch, at.owner, at.seq)
	return fmt.Appendf(placed[:len(placed)-1], `,"wap_seal":"%s"}`, s.seal(key, placed))
}

// mark is the partition's mark of prefix at place at: one key per epoch
// and owner, so an old owner that still writes its own epoch's marks does
// not replace the new owner's.
func (s *Store) mark(prefix string, at place) consumer.ChangelogRecord {
	key := prefix + markSuffix(at)
	return consumer.ChangelogRecord{Key: key, Value: s.sealed(key, []byte(markBody), at)}
}

// Load returns the partition's records that are authentic, not replayed,
// and match the config, as they were before sealing; the others are set
// aside. It reads the partition's history: a key whose latest record is set
// aside keeps the newest record lakewap wrote for it, if compaction has left
// that one. With a state key it then makes the outcome durable before it
// returns (takeEpoch): it takes the partition's next epoch, writes again
// the record of each run whose latest record was set aside, deletes the
// keys that hold only lakewap's own older records written again, and
// deletes the marks of older epochs. With a Fence, it asks it before any
// of that, and fails with ErrFenced, writing nothing, if the fence fails.
func (s *Store) Load(ctx context.Context, partition int) (map[string][]byte, error) {
	logged := 0
	r, err := s.restore(ctx, partition, func(key string, v []byte, reason, detail string) {
		s.setAside.WithLabelValues(reason).Inc()
		if logged++; logged <= maxLogged {
			s.cfg.Logger.Error("run record set aside: not acted on, left in the changelog", "partition", partition, "key", schemas.Clip(key, 256),
				"reason", reason, "detail", detail, "record", schemas.Clip(string(v), 2048))
		}
	})
	if err != nil {
		return nil, err
	}
	if logged > maxLogged {
		s.cfg.Logger.Error("run records set aside, not logged one by one", "partition", partition, "records", logged-maxLogged)
	}
	if s.cfg.Fence != nil {
		// After the scan (which may take long, or be where a paused
		// process was) and before the first write.
		if err := s.cfg.Fence(ctx, partition); err != nil {
			return nil, fmt.Errorf("%w: partition %d not taken: %w", ErrFenced, partition, err)
		}
	}
	if s.cfg.Key != nil {
		var again, gone []string
		for key, reason := range r.latest {
			_, kept := r.state[key]
			switch {
			case reason == "":
			case r.out[key] != nil:
				again = append(again, key)
			case !kept:
				// Nothing of lakewap's under the key (unsealed, a bad
				// seal, a replay of a deleted run): deleted, so that
				// compaction removes it instead of every load reading it.
				gone = append(gone, key)
			}
		}
		if err := s.takeEpoch(ctx, partition, r.epoch, r.newest, r.out, again, gone, r.marks); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

// Read returns what Load would, and how many records it would set aside,
// without writing anything or taking the partition: for a reader that is
// not the partition's owner (the janitor), which must act only on what the
// owner would act on. It logs nothing and counts nothing in the metric.
func (s *Store) Read(ctx context.Context, partition int) (runs map[string][]byte, setAside int, err error) {
	r, err := s.restore(ctx, partition, func(string, []byte, string, string) { setAside++ })
	if err != nil {
		return nil, 0, err
	}
	return r.out, setAside, nil
}

// restored is a partition's history as restore judged it.
type restored struct {
	out    map[string][]byte // the runs handed on, by key
	state  map[string]current
	latest map[string]string // why a key's latest record was set aside, for keys whose latest record was (within maxJunkKeyBytes)
	epoch  uint64            // the highest among authentic records, replayed or not
	newest frontier
	marks  map[string]bool // keys of marks, and of records set aside under a mark's key
}

// current is a key's newest accepted record, as stored and before sealing.
type current struct {
	raw, value []byte
}

// restore reads the partition's history and judges every record, handing
// each one set aside to aside.
func (s *Store) restore(ctx context.Context, partition int, aside func(key string, v []byte, reason, detail string)) (restored, error) {
	state := map[string]current{}
	var newest frontier
	var epoch uint64
	marks := map[string]bool{}
	latest := map[string]string{}
	junk := 0 // bytes of keys remembered that hold no record of lakewap's
	remember := func(key string) bool {
		if _, ok := latest[key]; ok || marks[key] {
			return true
		}
		if _, kept := state[key]; kept {
			return true
		}
		if junk+len(key) > maxJunkKeyBytes {
			return false
		}
		junk += len(key)
		return true
	}
	setAside := func(key, reason string) {
		if remember(key) {
			latest[key] = reason
		}
	}
	err := s.cfg.Inner.Scan(ctx, partition, func(key string, v []byte) {
		if IsMark(key) {
			if v == nil || s.cfg.Key == nil {
				return
			}
			body, at, reason, detail := s.open(key, v)
			switch {
			case reason != "":
				aside(key, v, reason, detail)
				if remember(key) {
					marks[key] = true // deleted by the load, as every mark it reads
				}
			case string(body) != markBody || !isMarkOf(key, at):
				aside(key, v, ReasonUnreadable, "a sealed record under a mark's key that is not that mark")
				if remember(key) {
					marks[key] = true
				}
			default:
				marks[key] = true
				epoch = max(epoch, at.epoch)
				if newest.of(at) > 0 {
					newest = newest.advance(at)
				}
			}
			return
		}
		delete(latest, key)
		if v == nil {
			delete(state, key)
			return
		}
		if s.cfg.Key == nil {
			state[key] = current{raw: v, value: v}
			return
		}
		value, at, reason, detail := s.open(key, v)
		if reason == "" {
			epoch = max(epoch, at.epoch)
		}
		switch {
		case reason != "":
			aside(key, v, reason, detail)
			setAside(key, reason)
		case newest.of(at) < 0:
			aside(key, v, ReasonReplayed, fmt.Sprintf("place %s, below %s written before it in the partition: an old record of lakewap's written again, or an old owner's after a handover", at, newest))
			setAside(key, ReasonReplayed)
		case newest.of(at) == 0 && !bytes.Equal(state[key].raw, v):
			// The same place twice is one record delivered twice; as
			// another record, or after its run was deleted, it is a replay.
			aside(key, v, ReasonReplayed, fmt.Sprintf("place %s again, after lakewap wrote or deleted %s", at, schemas.Clip(key, 256)))
			setAside(key, ReasonReplayed)
		default:
			newest = newest.advance(at)
			state[key] = current{raw: v, value: value}
		}
	})
	if err != nil {
		return restored{}, err
	}
	out := make(map[string][]byte, len(state))
	for key, c := range state {
		if reason, detail := s.check(partition, key, c.value); reason != "" {
			aside(key, c.raw, reason, detail)
			continue
		}
		out[key] = c.value
	}
	return restored{out: out, state: state, latest: latest, epoch: epoch, newest: newest, marks: marks}, nil
}

// isMarkOf says whether key is a mark's key of at's epoch and owner.
func isMarkOf(key string, at place) bool {
	e := markSuffix(at)
	return key == EpochMarkPrefix+e || key == LastMarkPrefix+e
}

// markSuffix ends the keys of the marks of at's epoch and owner.
func markSuffix(at place) string {
	e := strconv.FormatUint(at.epoch, 10)
	if at.owner != "" {
		e += "." + at.owner
	}
	return e
}

// takeEpoch makes the store the partition's writer from the epoch after
// highest (and after its own, when it loaded the partition before), its
// numbers going on from newest. In order: the epoch's mark; the records of
// runs (again) whose latest record was set aside, and tombstones for keys
// (gone) that held only a replayed record, so that compaction removes
// what was set aside, not lakewap's record, and nothing set aside needs
// an old mark before it any more; then tombstones for the older marks.
func (s *Store) takeEpoch(ctx context.Context, partition int, highest uint64, newest frontier, runs map[string][]byte, again, gone []string, marks map[string]bool) error {
	q := s.sequence(partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	next := place{epoch: max(highest, q.last.epoch) + 1, owner: hex.EncodeToString(id[:]), seq: max(newest.seq(), q.last.seq)}
	records := []consumer.ChangelogRecord{s.mark(EpochMarkPrefix, next)}
	slices.Sort(again)
	for _, key := range again {
		next.seq++
		records = append(records, consumer.ChangelogRecord{Key: key, Value: s.sealed(key, bytes.TrimRight(runs[key], " \n"), next)})
	}
	slices.Sort(gone)
	for _, key := range gone {
		records = append(records, consumer.ChangelogRecord{Key: key})
	}
	if len(again)+len(gone) > 0 {
		next.seq++
		records = append(records, s.mark(LastMarkPrefix, next))
	}
	for _, key := range slices.Sorted(maps.Keys(marks)) {
		records = append(records, consumer.ChangelogRecord{Key: key})
	}
	for len(records) > 0 {
		n, size := 0, batchFraming
		for n < len(records) && (n == 0 || size+recordFraming+len(records[n].Key)+len(records[n].Value) <= MaxWriteBytes) {
			size += recordFraming + len(records[n].Key) + len(records[n].Value)
			n++
		}
		if err := s.cfg.Inner.Write(ctx, partition, records[:n]...); err != nil {
			return fmt.Errorf("runstore: taking epoch %d of partition %d: %w", next.epoch, partition, err)
		}
		records = records[n:]
	}
	q.last, q.loaded = next, true
	return nil
}

// open checks a record's seal and returns its bytes before sealing and its
// place, or why it is set aside.
func (s *Store) open(key string, v []byte) (value []byte, at place, reason, detail string) {
	// The suffix is at most Overhead+1 bytes: matching the tail only
	// spares a scan of the whole record (most of a restore's time).
	from := max(len(v)-Overhead-1, 0)
	m := sealSuffix.FindSubmatchIndex(v[from:])
	if m == nil {
		return nil, place{}, ReasonUnsealed, "the record carries no placed seal of the state key"
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += from
		}
	}
	placed := append(bytes.Clone(v[:m[8]-len(`,"wap_seal":"`)]), '}')
	if !hmac.Equal([]byte(s.seal(key, placed)), v[m[8]:m[9]]) {
		return nil, place{}, ReasonBadSeal, "the seal does not match the record: forged or altered"
	}
	var err error
	if m[2] >= 0 {
		if at.epoch, err = strconv.ParseUint(string(v[m[2]:m[3]]), 10, 64); err != nil {
			return nil, place{}, ReasonBadSeal, err.Error()
		}
	}
	if m[4] >= 0 {
		at.owner = string(v[m[4]:m[5]])
	}
	if at.seq, err = strconv.ParseUint(string(v[m[6]:m[7]]), 10, 64); err != nil {
		return nil, place{}, ReasonBadSeal, err.Error()
	}
	return append(bytes.Clone(v[:m[0]]), '}'), at, "", ""
}

// check says why a record's run bytes are set aside, if they are.
func (s *Store) check(partition int, key string, value []byte) (reason, detail string) {
	var run pipeline.Run
	if err := json.Unmarshal(value, &run); err != nil {
		return ReasonUnreadable, err.Error()
	}
	spec, ok := s.cfg.Datasets(run.Dataset)
	if !ok {
		return ReasonDataset, fmt.Sprintf("dataset %q is not in the config", run.Dataset)
	}
	if problem := matches(key, run, spec); problem != "" {
		return ReasonMismatch, problem
	}
	if n := s.partitions(); n > 0 {
		if home := kafka.PartitionOf([]byte(run.BatchID), n); home != partition {
			return ReasonPartition, fmt.Sprintf("batch %q belongs to partition %d of %d", schemas.Clip(run.BatchID, 256), home, n)
		}
	}
	return "", ""
}

func (s *Store) partitions() int {
	if s.cfg.Partitions == nil {
		return 0
	}
	return s.cfg.Partitions()
}

// matches says what of run is not what the config and its batch id give.
func matches(key string, run pipeline.Run, spec pipeline.DatasetSpec) string {
	target := spec.Target
	if target == "" {
		target = "main"
	}
	switch {
	case key != run.Key() && key != run.BatchID: // the batch id alone: keyed before datasets were (the runner re-keys it)
		return fmt.Sprintf("key %q is not the run's key %q", key, run.Key())
	case run.Repository != "" && run.Repository != spec.Repository:
		return fmt.Sprintf("repository %q, the dataset publishes to %q", run.Repository, spec.Repository)
	case run.Target != "" && run.Target != target:
		return fmt.Sprintf("target %q, the dataset's is %q", run.Target, target)
	case run.Source != "" && !spec.AllowsSource(run.Source):
		return fmt.Sprintf("source %q is not one the dataset allows", run.Source)
	case run.Branch != "" && !schemas.IsBranchOf(run.Branch, run.Dataset, run.BatchID):
		return fmt.Sprintf("branch %q, the batch's is %q", run.Branch, schemas.BranchName(run.Dataset, run.BatchID))
	}
	return ""
}
