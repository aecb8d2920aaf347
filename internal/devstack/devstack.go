package devstack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/treeverse/lakefs/pkg/api/apigen"
	"github.com/twmb/franz-go/pkg/kfake"
)

const (
	defaultRepository = "lake"
	defaultPartitions = 3
	defaultBranch     = "main"
	callTimeout       = 30 * time.Second
	topicsOnlineWait  = 2 * time.Minute
)

// Options configures Start. The zero value starts Kafka with no topics and
// lakeFS with a repository "lake".
type Options struct {
	WorkDir      string       // parent for the stack's temp dir; os.TempDir() if empty
	Repository   string       // repository created with branch main; default "lake"
	Partitions   int          // default partitions for topics; default 3
	Topics       []Topic      // created before Start returns
	Logger       *slog.Logger // progress lines; discarded if nil
	LakeFSBinary string       // lakeFS server to run; else LakeFSBinaryPath builds or reuses one
	// KafkaBrokers selects an external Kafka cluster instead of kfake; if
	// empty, $LAKEWAP_TEST_KAFKA_BROKERS is used when set. Many stacks may
	// share one cluster: each stack's topics and groups get a unique suffix.
	KafkaBrokers []string
	// ACL runs lakeFS with its ACL auth server (simplified RBAC) instead of
	// single-user basic auth, and creates users lakewap and writer in the
	// Writers group (Stack.Lakewap, Stack.Writer). It costs one more process.
	ACL bool
}

// Topic is a Kafka topic to create, by base name (see Stack.Topic).
// Partitions 0 means the stack default.
type Topic struct {
	Name       string
	Partitions int
	Compacted  bool // cleanup.policy=compact, for changelog topics
}

// Stack is a running Kafka broker and lakeFS server. Close it when done.
type Stack struct {
	KafkaBrokers    []string // "127.0.0.1:PORT"
	LakeFSEndpoint  string   // "http://127.0.0.1:PORT"; the API is under /api/v1
	AccessKeyID     string   // lakeFS admin credentials
	SecretAccessKey string
	Repository      string // created at start with default branch main
	WorkDir         string // temp dir holding everything below; removed by Close
	// BlockstorePath is lakeFS's local blockstore (blockstore.local.path):
	// a repository's objects are under BlockstorePath/<namespace>/data/.
	BlockstorePath string
	LakeFSLog      string // lakeFS server output
	KafkaBackend   string // "kfake" or "external", for test logs
	// With Options.ACL: the ACL server and the keys of the non-admin users.
	ACLEndpoint string
	Lakewap     Credentials // user lakewap, group Writers
	Writer      Credentials // user writer, group Writers

	logger     *slog.Logger
	partitions int
	kafka      *kafkatest.Cluster // names topics and groups: with a suffix of the stack's on an external cluster
	lakefs     *lakeFSServer
	acl        *lakeFSServer
	lakefsBin  string
	lakefsCfg  lakeFSConfig
	lakefsMu   sync.Mutex // guards lakefs across StopLakeFS/StartLakeFS/Close
	client     *apigen.ClientWithResponses

	closeOnce sync.Once
	closeErr  error
}

// Start runs kfake and the lakeFS server, creates opts.Topics and the
// repository, and returns when both answer. ctx bounds the start only
// (including a first-run build of lakeFS); the stack lives until Close.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	logger := orDiscard(opts.Logger)
	bin := opts.LakeFSBinary
	if bin == "" {
		var err error
		if bin, err = LakeFSBinaryPath(ctx, logger); err != nil {
			return nil, err
		}
	}
	s := &Stack{Repository: cmp.Or(opts.Repository, defaultRepository), logger: logger,
		partitions: cmp.Or(max(opts.Partitions, 0), defaultPartitions)}
	if err := s.start(ctx, opts, bin); err != nil {
		if cerr := s.Close(); cerr != nil {
			logger.Warn("devstack: cleanup after failed start", "err", cerr)
		}
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context, opts Options, bin string) error {
	started := time.Now()
	dir, err := os.MkdirTemp(opts.WorkDir, "lakewap-devstack-")
	if err != nil {
		return fmt.Errorf("devstack: work dir: %w", err)
	}
	s.WorkDir = dir

	if err := s.startKafka(ctx, opts.KafkaBrokers); err != nil {
		return err
	}
	if err := s.CreateTopics(ctx, opts.Topics...); err != nil {
		return err
	}

	s.AccessKeyID, s.SecretAccessKey = newCredentials()
	s.lakefsBin = bin
	s.BlockstorePath = blockstorePath(dir)
	s.lakefsCfg = lakeFSConfig{dir: dir, accessKeyID: s.AccessKeyID, secretAccessKey: s.SecretAccessKey, encryptKey: randomString(32, alphaNum)}
	if opts.ACL {
		aclBin, err := ACLBinaryPath(ctx, s.logger)
		if err != nil {
			return err
		}
		if s.acl, err = startACL(ctx, s.logger, aclBin, dir, s.lakefsCfg.encryptKey); err != nil {
			return err
		}
		s.ACLEndpoint, s.lakefsCfg.aclEndpoint = s.acl.endpoint, s.acl.endpoint
	}
	s.lakefs, err = startLakeFS(ctx, s.logger, bin, s.lakefsCfg)
	if err != nil {
		return err
	}
	s.LakeFSEndpoint, s.LakeFSLog = s.lakefs.endpoint, s.lakefs.logPath
	s.client, err = apigen.NewClientWithResponses(s.LakeFSEndpoint+"/api/v1",
		apigen.WithHTTPClient(&http.Client{Timeout: callTimeout}),
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(s.AccessKeyID, s.SecretAccessKey)
			return nil
		}))
	if err != nil {
		return fmt.Errorf("devstack: lakeFS client: %w", err)
	}
	if err := s.CreateRepository(ctx, s.Repository); err != nil {
		return err
	}
	if opts.ACL {
		if s.Lakewap, err = s.CreateUser(ctx, LakewapUser, WritersGroup); err != nil {
			return err
		}
		if s.Writer, err = s.CreateUser(ctx, WriterUser, WritersGroup); err != nil {
			return err
		}
	}
	s.logger.Info("devstack ready", "kafka", s.KafkaBrokers, "kafka_backend", s.KafkaBackend, "lakefs", s.LakeFSEndpoint,
		"repository", s.Repository, "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// StopLakeFS stops the lakeFS server and keeps its data, so a test can see
// how its clients ride out a lakeFS outage. StartLakeFS brings it back.
func (s *Stack) StopLakeFS() error {
	s.lakefsMu.Lock()
	defer s.lakefsMu.Unlock()
	if s.lakefs == nil {
		return nil
	}
	return s.lakefs.stop()
}

// StartLakeFS starts the stopped lakeFS server again on the same address,
// with the same data and credentials.
func (s *Stack) StartLakeFS(ctx context.Context) error {
	s.lakefsMu.Lock()
	defer s.lakefsMu.Unlock()
	select {
	case <-s.lakefs.exited:
	default:
		return nil // still running
	}
	srv, err := startLakeFSOnce(ctx, s.logger, s.lakefsBin, s.lakefsCfg, s.lakefs.port)
	if err != nil {
		return err
	}
	s.lakefs = srv
	return nil
}

// CompactKafka makes kfake compact its compacted topics now (each key's
// latest record kept), as Kafka's log cleaner does in its own time; false
// on an external cluster, whose cleaner the stack does not drive.
func (s *Stack) CompactKafka() bool {
	if s.kafka.Fake == nil {
		return false
	}
	s.kafka.Fake.Compact()
	return true
}

// startKafka starts kfake, or connects to the external cluster named by
// brokers or by $LAKEWAP_TEST_KAFKA_BROKERS.
func (s *Stack) startKafka(ctx context.Context, brokers []string) error {
	if len(brokers) == 0 {
		brokers = kafkatest.ExternalBrokers()
	}
	if len(brokers) == 0 {
		f, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(s.partitions))
		if err != nil {
			return fmt.Errorf("devstack: start kfake: %w", err)
		}
		s.kafka = &kafkatest.Cluster{Brokers: f.ListenAddrs(), Fake: f}
		s.KafkaBrokers, s.KafkaBackend = s.kafka.Brokers, "kfake"
		return nil
	}
	s.kafka = kafkatest.Shared(brokers)
	s.KafkaBrokers, s.KafkaBackend = brokers, "external"
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	client := s.kafka.Client()
	defer kafkatest.Release(client)
	if _, err := client.Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
		return fmt.Errorf("devstack: external Kafka %v does not answer: %w", brokers, err)
	}
	s.logger.Info("devstack: using external Kafka", "brokers", brokers, "suffix", s.kafka.Topic(""))
	return nil
}

// Topic returns the actual name of the stack's topic with base name name:
// name itself on kfake, name plus the stack's suffix on an external
// cluster, so that stacks sharing a cluster never see each other's events.
func (s *Stack) Topic(name string) string { return s.cluster().Topic(name) }

// GroupID returns the actual consumer group id for base id, like Topic.
func (s *Stack) GroupID(id string) string { return s.cluster().Group(id) }

// cluster is the Kafka the stack names its topics on. A Stack filled in by
// hand (pointing at containers, as TestContainersEndToEnd does) has no
// cluster of its own: its topics and groups carry no suffix on KafkaBrokers.
func (s *Stack) cluster() *kafkatest.Cluster {
	if s.kafka != nil {
		return s.kafka
	}
	return &kafkatest.Cluster{Brokers: s.KafkaBrokers}
}

// LakeFSClient returns a typed lakeFS client authenticated as the admin.
func (s *Stack) LakeFSClient() *apigen.ClientWithResponses { return s.client }

// CreateTopics creates Kafka topics named Topic(t.Name); a topic that
// already exists is left as it is. It returns when every partition has a
// leader. Topics must exist before the first produce because kafka-go
// caches topic metadata for several seconds.
func (s *Stack) CreateTopics(ctx context.Context, topics ...Topic) error {
	// Longer than one call: a loaded single-node Apache Kafka took 8 s to
	// create the topics and had them unserved 30 s after the request.
	ctx, cancel := context.WithTimeout(ctx, topicsOnlineWait)
	defer cancel()
	ts := make([]kafkatest.Topic, len(topics))
	for i, t := range topics {
		if t.Name == "" {
			return errors.New("devstack: topic with empty name")
		}
		ts[i] = kafkatest.Topic{Name: t.Name, Partitions: cmp.Or(max(t.Partitions, 0), s.partitions)}
		if t.Compacted {
			ts[i].Configs = map[string]string{"cleanup.policy": "compact"}
		}
	}
	if err := s.cluster().CreateTopics(ctx, ts...); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	return nil
}

// CreateRepository creates a lakeFS repository with storage namespace
// local://<name> and default branch main.
func (s *Stack) CreateRepository(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	branch := defaultBranch
	resp, err := s.client.CreateRepositoryWithResponse(ctx, &apigen.CreateRepositoryParams{}, apigen.CreateRepositoryJSONRequestBody{
		Name:             name,
		StorageNamespace: "local://" + name,
		DefaultBranch:    &branch,
	})
	if err != nil {
		return fmt.Errorf("devstack: create repository %q: %w", name, err)
	}
	if resp.StatusCode() != http.StatusCreated {
		return fmt.Errorf("devstack: create repository %q: lakeFS answered %s: %s", name, resp.Status(), resp.Body)
	}
	return nil
}

// Close stops lakeFS (SIGTERM, SIGKILL after a grace period), stops the
// Kafka broker and removes the work dir. It is safe to call more than once.
func (s *Stack) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		s.lakefsMu.Lock()
		defer s.lakefsMu.Unlock()
		if s.lakefs != nil {
			errs = append(errs, s.lakefs.stop())
		}
		if s.acl != nil {
			errs = append(errs, s.acl.stop())
		}
		if s.kafka != nil && s.kafka.Fake != nil {
			s.kafka.Fake.Close()
		}
		if s.WorkDir != "" {
			errs = append(errs, os.RemoveAll(s.WorkDir))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// LakeFSCPU is the CPU time (user and system) the running lakeFS server
// has used so far, from /proc: benchmarks report it per batch. Linux only.
func (s *Stack) LakeFSCPU() (time.Duration, error) {
	s.lakefsMu.Lock()
	defer s.lakefsMu.Unlock()
	if s.lakefs == nil {
		return 0, errors.New("devstack: no lakeFS server of ours")
	}
	return processCPU(s.lakefs.cmd.Process.Pid)
}

// processCPU reads utime and stime of process pid from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("devstack: process CPU: %w", err)
	}
	// The command (field 2) is in parentheses and may hold spaces: the
	// fields after it start at the last ')'. utime and stime are fields
	// 14 and 15, in clock ticks (100 per second on Linux).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("devstack: process CPU: cannot parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("devstack: process CPU: cannot parse /proc/%d/stat", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("devstack: process CPU: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}
