package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka/kafkatest"
)

func TestStack(t *testing.T) {
	s := StartForTest(t, Options{
		Topics: []Topic{
			{Name: "devstack.events"},
			{Name: "devstack.runs", Partitions: 1, Compacted: true},
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	events, runs := s.Topic("devstack.events"), s.Topic("devstack.runs")
	t.Run("topics", func(t *testing.T) {
		client := &kafka.Client{Addr: kafka.TCP(s.KafkaBrokers...)}
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{events, runs}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, tp := range md.Topics {
			if tp.Error != nil {
				t.Fatalf("topic %s: %v", tp.Name, tp.Error)
			}
			got[tp.Name] = len(tp.Partitions)
		}
		want := map[string]int{events: defaultPartitions, runs: 1}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("partitions = %v, want %v", got, want)
		}

		cfg, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
			{ResourceType: kafka.ResourceTypeTopic, ResourceName: runs, ConfigNames: []string{"cleanup.policy"}},
			{ResourceType: kafka.ResourceTypeTopic, ResourceName: events, ConfigNames: []string{"cleanup.policy"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		policy := map[string]string{}
		for _, r := range cfg.Resources {
			for _, e := range r.ConfigEntries {
				policy[r.ResourceName] = e.ConfigValue
			}
		}
		if policy[runs] != "compact" || policy[events] != "delete" {
			t.Errorf("cleanup.policy = %v, want runs=compact events=delete", policy)
		}

		// Creating an existing topic again is not an error.
		if err := s.CreateTopics(ctx, Topic{Name: "devstack.events"}); err != nil {
			t.Errorf("re-create topic: %v", err)
		}
	})

	t.Run("kafka-go produce and consume with a group", func(t *testing.T) {
		const n = 20
		w := &kafka.Writer{
			Addr:         kafka.TCP(s.KafkaBrokers...),
			Topic:        events,
			Balancer:     &kafka.Hash{},
			RequiredAcks: kafka.RequireAll,
			BatchTimeout: 10 * time.Millisecond,
		}
		defer w.Close()
		var want []string
		var msgs []kafka.Message
		for i := range n {
			v := fmt.Sprintf("event-%02d", i)
			want = append(want, v)
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("batch-%d", i%7)), Value: []byte(v)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("produce: %v", err)
		}

		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:     s.KafkaBrokers,
			Topic:       events,
			GroupID:     s.GroupID("devstack-test"),
			StartOffset: kafka.FirstOffset,
			// Close waits for the in-flight fetch; kfake holds it for MaxWait (default 10s).
			MaxWait: 500 * time.Millisecond,
		})
		defer r.Close()
		var got []string
		partitions := map[int]bool{}
		for len(got) < n {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("consume after %d messages: %v", len(got), err)
			}
			got = append(got, string(m.Value))
			partitions[m.Partition] = true
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("consumed %v, want %v", got, want)
		}
		if len(partitions) < 2 {
			t.Errorf("all messages on partitions %v; want keys spread over several", partitions)
		}
	})

	t.Run("lakeFS repository with main branch", func(t *testing.T) {
		c := s.LakeFSClient()
		repo, err := c.GetRepositoryWithResponse(ctx, s.Repository)
		if err != nil {
			t.Fatal(err)
		}
		if repo.JSON200 == nil {
			t.Fatalf("get repository: %s %s", repo.Status(), repo.Body)
		}
		if repo.JSON200.DefaultBranch != "main" || repo.JSON200.StorageNamespace != "local://lake" {
			t.Errorf("repository = %+v, want default branch main, namespace local://lake", *repo.JSON200)
		}
		br, err := c.GetBranchWithResponse(ctx, s.Repository, "main")
		if err != nil {
			t.Fatal(err)
		}
		if br.JSON200 == nil || br.JSON200.CommitId == "" {
			t.Fatalf("get branch main: %s %s", br.Status(), br.Body)
		}
	})

	t.Run("wrong credentials are refused", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.LakeFSEndpoint+"/api/v1/repositories", nil)
		req.SetBasicAuth(s.AccessKeyID, "not-the-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status = %d, want 401", resp.StatusCode)
		}
	})

	t.Run("CreateRepository", func(t *testing.T) {
		if err := s.CreateRepository(ctx, "second"); err != nil {
			t.Fatal(err)
		}
		br, err := s.LakeFSClient().GetBranchWithResponse(ctx, "second", "main")
		if err != nil || br.JSON200 == nil {
			t.Fatalf("branch main of second: %v %v", err, br.Status())
		}
		err = s.CreateRepository(ctx, s.Repository)
		if err == nil || !strings.Contains(err.Error(), "409") {
			t.Errorf("creating an existing repository: err = %v, want a 409 error", err)
		}
	})

	t.Run("lakectl talks to the stack", func(t *testing.T) {
		lakectl, err := LakectlBinaryPath(ctx, s.logger)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, lakectl, "branch", "list", "lakefs://"+s.Repository)
		cmd.Env = append(os.Environ(),
			"LAKECTL_SERVER_ENDPOINT_URL="+s.LakeFSEndpoint,
			"LAKECTL_CREDENTIALS_ACCESS_KEY_ID="+s.AccessKeyID,
			"LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY="+s.SecretAccessKey,
			"HOME="+t.TempDir(), // no ~/.lakectl.yaml
		)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lakectl: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`(?m)^\s*main\s`).Match(out) {
			t.Errorf("lakectl branch list does not show main:\n%s", out)
		}
	})
}

func TestCloseStopsEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	parent := t.TempDir()
	s, err := Start(ctx, Options{WorkDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.lakefs.cmd.Process.Pid
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("lakeFS pid %d not running before Close: %v", pid, err)
	}
	if !strings.HasPrefix(s.WorkDir, parent) {
		t.Errorf("work dir %s not under %s", s.WorkDir, parent)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("lakeFS pid %d after Close: kill(0) = %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(s.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir after Close: %v, want it removed", err)
	}
	if c, err := net.Dial("tcp", s.KafkaBrokers[0]); err == nil && s.KafkaBackend == "kfake" {
		c.Close()
		t.Errorf("Kafka still accepts connections on %s after Close", s.KafkaBrokers[0])
	}
	if c, err := net.Dial("tcp", strings.TrimPrefix(s.LakeFSEndpoint, "http://")); err == nil {
		c.Close()
		t.Errorf("lakeFS still accepts connections at %s after Close", s.LakeFSEndpoint)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStartFailsFastWhenLakeFSExits(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "lakefs")
	script := "#!/bin/sh\necho 'FATAL config is bad: boom' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s, err := Start(ctx, Options{WorkDir: parent, LakeFSBinary: fake})
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded with a lakeFS that exits")
	}
	for _, want := range []string{"exited during start", "exit status 3", "boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("failed Start left %d entries in the work dir parent", len(left))
	}
}

// TestTopicNames checks the names behind Stack.Topic: unchanged on kfake,
// unique per stack on a shared external cluster.
func TestTopicNames(t *testing.T) {
	t.Setenv(kafkatest.EnvBrokers, "")
	kf := &Stack{}
	if err := kf.startKafka(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	if got := kf.Topic("wap.events"); kf.KafkaBackend != "kfake" || got != "wap.events" {
		t.Errorf("kfake Topic(wap.events) = %q, want it unchanged", got)
	}
	a, b := &Stack{}, &Stack{}
	for _, s := range []*Stack{a, b} {
		t.Setenv(kafkatest.EnvBrokers, " 127.0.0.1:1 , 127.0.0.1:2,")
		// Nothing listens on port 1: the start fails after choosing a suffix.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.startKafka(ctx, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "does not answer") {
			t.Fatalf("startKafka against a closed port: err = %v", err)
		}
	}
	if a.Topic("wap.events") == b.Topic("wap.events") || a.GroupID("lakewap") == b.GroupID("lakewap") {
		t.Errorf("two stacks on one cluster share names: %q %q", a.Topic("wap.events"), a.GroupID("lakewap"))
	}
	if !regexp.MustCompile(`^wap\.events-[0-9a-f]{8}$`).MatchString(a.Topic("wap.events")) {
		t.Errorf("Topic(wap.events) = %q, want wap.events-<8 hex>", a.Topic("wap.events"))
	}
}

// TestHandFilledStackNamesTopics: a Stack filled in by hand, pointing at a
// broker devstack did not start (TestContainersEndToEnd's containers), names
// its topics unchanged and creates them there. It panicked on a nil cluster.
func TestHandFilledStackNamesTopics(t *testing.T) {
	broker := kafkatest.StartFake(t)
	s := &Stack{KafkaBrokers: broker.Brokers}
	if got := s.Topic("wap.events"); got != "wap.events" {
		t.Errorf("Topic(wap.events) = %q, want it unchanged", got)
	}
	if got := s.GroupID("lakewap"); got != "lakewap" {
		t.Errorf("GroupID(lakewap) = %q, want it unchanged", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateTopics(ctx, Topic{Name: "wap.events", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	parts, err := kafka.DialContext(ctx, "tcp", broker.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	ps, err := parts.ReadPartitions("wap.events")
	if err != nil || len(ps) != 3 {
		t.Fatalf("wap.events on the broker: %d partitions, err %v; want 3", len(ps), err)
	}
}

func TestToolsModulePinsLakeFSVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "tools", "lakefs", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/treeverse/lakefs\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("tools/lakefs/go.mod does not require github.com/treeverse/lakefs")
	}
	if got := string(m[1]); got != LakeFSVersion {
		t.Errorf("tools module pins lakeFS %s, devstack caches it as %s", got, LakeFSVersion)
	}
}

func TestLockFileExcludesSecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(context.Background(), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lockFile(canceled, orDiscard(nil), path); !errors.Is(err, context.Canceled) {
		t.Fatalf("second lock while held: err = %v, want context.Canceled", err)
	}
	unlock()
	unlock2, err := lockFile(context.Background(), nil, path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}

// TestCrashedParentLeavesNoLakeFS runs itself as a child process that starts
// a stack and is then SIGKILLed without Close; Pdeathsig must take lakeFS down.
func TestCrashedParentLeavesNoLakeFS(t *testing.T) {
	if os.Getenv("DEVSTACK_CRASH_CHILD") == "1" {
		s, err := Start(context.Background(), Options{WorkDir: os.Getenv("DEVSTACK_CRASH_DIR")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("lakefs-pid=%d\n", s.lakefs.cmd.Process.Pid)
		select {} // wait to be killed
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashedParentLeavesNoLakeFS$")
	child.Env = append(os.Environ(), "DEVSTACK_CRASH_CHILD=1", "DEVSTACK_CRASH_DIR="+t.TempDir())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscanf(out, "lakefs-pid=%d\n", &pid); err != nil {
		_ = child.Process.Kill()
		t.Fatalf("child did not report a lakeFS pid: %v", err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("lakeFS pid %d not running under the child: %v", pid, err)
	}
	_ = child.Process.Kill()
	_ = child.Wait()

	// lakeFS is not our child, so we cannot wait for it: poll until it is
	// gone or a zombie (an init that does not reap would keep it as one).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for processAlive(pid) {
		select {
		case <-tick.C:
		case <-deadline:
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("lakeFS pid %d still running 30s after its parent was killed", pid)
		}
	}
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may hold spaces, so cut after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// BenchmarkStartClose measures a warm start (cached lakeFS binary) plus Close.
// BenchmarkStartClose/acl is the cost of Options.ACL: the ACL server's
// start and the lakewap and writer users.
func BenchmarkStartClose(b *testing.B) {
	for _, acl := range []bool{false, true} {
		b.Run(map[bool]string{false: "basic", true: "acl"}[acl], func(b *testing.B) { benchStartClose(b, acl) })
	}
}

func benchStartClose(b *testing.B, acl bool) {
	ctx := context.Background()
	bin, err := LakeFSBinaryPath(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ACLBinaryPath(ctx, nil); err != nil {
		b.Fatal(err)
	}
	topics := []Topic{{Name: "wap.events"}, {Name: "wap.runs", Compacted: true}}
	for b.Loop() {
		s, err := Start(ctx, Options{WorkDir: b.TempDir(), LakeFSBinary: bin, Topics: topics, ACL: acl})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
