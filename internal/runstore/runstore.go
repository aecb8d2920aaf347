// Package runstore is the run changelog as the runner may trust it: every
// record lakewap writes carries an authenticator (HMAC-SHA256 with the
// daemon's state key over the record's key and bytes), and a restored
// record is handed to the runner only when it is authentic and describes a
// run the config allows (its dataset exists; repository, target, source
// and branch are what the config and the batch id give; its key is the
// run's key). Any other record is set aside: logged, counted, left in the
// changelog for inspection, and never acted on.
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Inner is the store underneath (the Kafka changelog).
type Inner interface {
	Put(ctx context.Context, partition int, key string, value []byte) error
	Delete(ctx context.Context, partition int, key string) error
	Load(ctx context.Context, partition int) (map[string][]byte, error)
}

// Reasons a record is set aside (the reason label).
const (
	ReasonUnsealed   = "unsealed"   // no authenticator: not written by lakewap with the state key
	ReasonBadSeal    = "bad_seal"   // an authenticator that does not match: forged or altered
	ReasonUnreadable = "unreadable" // not a run record
	ReasonDataset    = "unknown_dataset"
	ReasonMismatch   = "mismatch"        // repository, target, source, branch or key not what the config gives
	ReasonPartition  = "wrong_partition" // not the partition of its batch id: a copy would give the run a second owner
)

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
}

// Store is a pipeline runner's Store.
type Store struct {
	cfg      Config
	setAside *prometheus.CounterVec
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
	s := &Store{cfg: cfg, setAside: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_state_records_set_aside_total",
		Help: "Run records of the changelog not restored: unsealed, forged or altered (bad_seal), unreadable, of a dataset not in the config, or not matching it. They stay in the changelog and are never acted on."},
		[]string{"reason"})}
	for _, r := range []string{ReasonUnsealed, ReasonBadSeal, ReasonUnreadable, ReasonDataset, ReasonMismatch, ReasonPartition} {
		s.setAside.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.setAside); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// sealField ends a sealed record: the run's JSON object with one more
// member, which readers of the run (lakewap runs) ignore.
var sealSuffix = regexp.MustCompile(`,"wap_seal":"([0-9a-f]{64})"\}$`)

func (s *Store) seal(key string, value []byte) string {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte("lakewap run record v1\n"))
	m.Write([]byte(key))
	m.Write([]byte{'\n'})
	m.Write(value)
	return hex.EncodeToString(m.Sum(nil))
}

// Put stores value (a run's JSON object) under key, sealed.
func (s *Store) Put(ctx context.Context, partition int, key string, value []byte) error {
	if s.cfg.Key != nil {
		v := bytes.TrimRight(value, " \n")
		if len(v) < 2 || v[len(v)-1] != '}' {
			return fmt.Errorf("runstore: record %s is not a JSON object", key)
		}
		value = fmt.Appendf(bytes.Clone(v[:len(v)-1]), `,"wap_seal":"%s"}`, s.seal(key, v))
	}
	return s.cfg.Inner.Put(ctx, partition, key, value)
}

// Delete deletes key.
func (s *Store) Delete(ctx context.Context, partition int, key string) error {
	return s.cfg.Inner.Delete(ctx, partition, key)
}

// Load returns the partition's records that are authentic and match the
// config, as they were before sealing; the others are set aside.
func (s *Store) Load(ctx context.Context, partition int) (map[string][]byte, error) {
	raw, err := s.cfg.Inner.Load(ctx, partition)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(raw))
	for key, v := range raw {
		value, reason, detail := s.check(partition, key, v)
		if reason != "" {
			s.setAside.WithLabelValues(reason).Inc()
			s.cfg.Logger.Error("run record set aside: not acted on, left in the changelog", "partition", partition, "key", schemas.Clip(key, 256),
				"reason", reason, "detail", detail, "record", schemas.Clip(string(v), 2048))
			continue
		}
		out[key] = value
	}
	return out, nil
}

// check returns the record's run bytes, or why it is set aside.
func (s *Store) check(partition int, key string, v []byte) (value []byte, reason, detail string) {
	value = v
	if s.cfg.Key != nil {
		m := sealSuffix.FindSubmatchIndex(v)
		if m == nil {
			return nil, ReasonUnsealed, "the record carries no seal of the state key"
		}
		value = append(bytes.Clone(v[:m[0]]), '}')
		if !hmac.Equal([]byte(s.seal(key, value)), v[m[2]:m[3]]) {
			return nil, ReasonBadSeal, "the seal does not match the record: forged or altered"
		}
	}
	var run pipeline.Run
	if err := json.Unmarshal(value, &run); err != nil {
		return nil, ReasonUnreadable, err.Error()
	}
	spec, ok := s.cfg.Datasets(run.Dataset)
	if !ok {
		return nil, ReasonDataset, fmt.Sprintf("dataset %q is not in the config", run.Dataset)
	}
	if problem := matches(key, run, spec); problem != "" {
		return nil, ReasonMismatch, problem
	}
	if n := s.partitions(); n > 0 {
		if home := kafka.PartitionOf([]byte(run.BatchID), n); home != partition {
			return nil, ReasonPartition, fmt.Sprintf("batch %q belongs to partition %d of %d", schemas.Clip(run.BatchID, 256), home, n)
		}
	}
	return value, "", ""
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
