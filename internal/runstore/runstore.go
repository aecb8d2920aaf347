// Package runstore is the run changelog as the runner may trust it: every
// record lakewap writes carries a sequence number of its partition and an
// authenticator (HMAC-SHA256 with the daemon's state key over the record's
// key and bytes, the sequence included), and a restored record is handed to
// the runner only when it is authentic, not older than a record lakewap
// wrote before it in the partition (a replay), and describes a run the
// config allows (its dataset exists; repository, target, source and branch
// are what the config and the batch id give; its key is the run's key). Any
// other record is set aside: logged, counted, left in the changelog for
// inspection, and never acted on; the run keeps its newest authentic record.
//
// It imports pipeline (the run record and dataset specs), schemas and kafka
// (the partition of a batch id).
package runstore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Inner is the store underneath (the Kafka changelog).
type Inner interface {
	Put(ctx context.Context, partition int, key string, value []byte) error
	Delete(ctx context.Context, partition int, key string) error
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
	// ReasonReplayed: an authentic record older than one lakewap wrote
	// before it in the partition, or a copy of a run's record after lakewap
	// deleted the run: lakewap's own record written again by someone else.
	ReasonReplayed = "replayed"
)

// Overhead is what sealing adds to a run record: its sequence and its
// authenticator (the changelog's message size must hold the run budget plus
// this).
const Overhead = len(`,"wap_seq":18446744073709551615,"wap_seal":""`) + 64

// maxLogged bounds the set-aside records one Load logs one by one; the rest
// are counted and summed up in one line.
const maxLogged = 20

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
	// Registerer, if set, gets lakewap_state_records_set_aside_total.
	Registerer prometheus.Registerer
	// Now is the clock the sequence numbers start from (default time.Now).
	Now func() time.Time
}

// Store is a pipeline runner's Store.
type Store struct {
	cfg      Config
	setAside *prometheus.CounterVec

	mu    sync.Mutex
	parts map[int]*sequence
}

// sequence numbers the records of one partition. Its lock is held from
// numbering a record to its write acknowledged, so numbers rise with the
// records' offsets.
type sequence struct {
	mu   sync.Mutex
	last uint64
}

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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	setAside, err := newSetAside(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, parts: map[int]*sequence{}, setAside: setAside}
	return s, nil
}

// sealSuffix ends a sealed record: the run's JSON object with two more
// members, which readers of the run (lakewap runs) ignore. The seal covers
// the sequence.
var sealSuffix = regexp.MustCompile(`,"wap_seq":([0-9]{1,20}),"wap_seal":"([0-9a-f]{64})"\}$`)

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

// Put stores value (a run's JSON object) under key, numbered and sealed.
// A number is one more than the partition's last, and at least the clock's
// microseconds: a store that did not load the partition first still numbers
// after what an earlier process wrote.
func (s *Store) Put(ctx context.Context, partition int, key string, value []byte) error {
	if s.cfg.Key == nil {
		return s.cfg.Inner.Put(ctx, partition, key, value)
	}
	v := bytes.TrimRight(value, " \n")
	if len(v) < 2 || v[len(v)-1] != '}' {
		return fmt.Errorf("runstore: record %s is not a JSON object", key)
	}
	q := s.sequence(partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last = max(q.last+1, uint64(max(s.cfg.Now().UnixMicro(), 0)))
	numbered := fmt.Appendf(bytes.Clone(v[:len(v)-1]), `,"wap_seq":%d}`, q.last)
	sealed := fmt.Appendf(numbered[:len(numbered)-1], `,"wap_seal":"%s"}`, s.seal(key, numbered))
	return s.cfg.Inner.Put(ctx, partition, key, sealed)
}

// Delete deletes key.
func (s *Store) Delete(ctx context.Context, partition int, key string) error {
	if s.cfg.Key == nil {
		return s.cfg.Inner.Delete(ctx, partition, key)
	}
	q := s.sequence(partition)
	q.mu.Lock()
	defer q.mu.Unlock()
	return s.cfg.Inner.Delete(ctx, partition, key)
}

// Load returns the partition's records that are authentic, not replayed,
// and match the config, as they were before sealing; the others are set
// aside. It reads the partition's history: a key whose latest record is set
// aside for its seal or as a replay keeps the newest record lakewap wrote
// for it, if compaction has left that one.
func (s *Store) Load(ctx context.Context, partition int) (map[string][]byte, error) {
	logged := 0
	aside := func(key string, v []byte, reason, detail string) {
		s.setAside.WithLabelValues(reason).Inc()
		if logged++; logged <= maxLogged {
			s.cfg.Logger.Error("run record set aside: not acted on, left in the changelog", "partition", partition, "key", schemas.Clip(key, 256),
				"reason", reason, "detail", detail, "record", schemas.Clip(string(v), 2048))
		}
	}
	type current struct {
		raw, value []byte
	}
	state := map[string]current{}
	var newest uint64
	err := s.cfg.Inner.Scan(ctx, partition, func(key string, v []byte) {
		if v == nil {
			delete(state, key)
			return
		}
		if s.cfg.Key == nil {
			state[key] = current{raw: v, value: v}
			return
		}
		value, seq, reason, detail := s.open(key, v)
		switch {
		case reason != "":
			aside(key, v, reason, detail)
		case seq < newest:
			aside(key, v, ReasonReplayed, fmt.Sprintf("sequence %d, older than %d written before it in the partition: an old record of lakewap's written again", seq, newest))
		case seq == newest && !bytes.Equal(state[key].raw, v):
			// The same number twice is one record delivered twice; as
			// another record, or after its run was deleted, it is a replay.
			aside(key, v, ReasonReplayed, fmt.Sprintf("sequence %d again, after lakewap wrote or deleted %s", seq, schemas.Clip(key, 256)))
		default:
			newest = seq
			state[key] = current{raw: v, value: value}
		}
	})
	if err != nil {
		return nil, err
	}
	if s.cfg.Key != nil {
		q := s.sequence(partition)
		q.mu.Lock()
		q.last = max(q.last, newest)
		q.mu.Unlock()
	}
	out := make(map[string][]byte, len(state))
	for key, c := range state {
		if reason, detail := s.check(partition, key, c.value); reason != "" {
			aside(key, c.raw, reason, detail)
			continue
		}
		out[key] = c.value
	}
	if logged > maxLogged {
		s.cfg.Logger.Error("run records set aside, not logged one by one", "partition", partition, "records", logged-maxLogged)
	}
	return out, nil
}

// open checks a record's seal and returns its run bytes and sequence, or
// why it is set aside.
func (s *Store) open(key string, v []byte) (value []byte, seq uint64, reason, detail string) {
	m := sealSuffix.FindSubmatchIndex(v)
	if m == nil {
		return nil, 0, ReasonUnsealed, "the record carries no numbered seal of the state key"
	}
	numbered := append(bytes.Clone(v[:m[4]-len(`,"wap_seal":"`)]), '}')
	if !hmac.Equal([]byte(s.seal(key, numbered)), v[m[4]:m[5]]) {
		return nil, 0, ReasonBadSeal, "the seal does not match the record: forged or altered"
	}
	seq, err := strconv.ParseUint(string(v[m[2]:m[3]]), 10, 64)
	if err != nil {
		return nil, 0, ReasonBadSeal, err.Error()
	}
	return append(bytes.Clone(v[:m[0]]), '}'), seq, "", ""
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
	case run.Branch != "" && run.Branch != schemas.BranchName(run.Dataset, run.BatchID):
		return fmt.Sprintf("branch %q, the batch's is %q", run.Branch, schemas.BranchName(run.Dataset, run.BatchID))
	}
	return ""
}
