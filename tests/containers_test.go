package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// dockerEngineError says why no Docker engine can run containers, or nil
// when one answers. It gives up after a few seconds rather than let a
// configured but unreachable DOCKER_HOST hang the suite.
func dockerEngineError() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			errc <- err
			return
		}
		errc <- p.Health(ctx) // Health closes p
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within 10s: %w", ctx.Err())
	}
}

const (
	kafkaPort  = "9092/tcp"
	lakeFSPort = "8000/tcp"
	// advertisedFile holds the listener address clients outside the
	// container must use; the port Docker maps is only known after start.
	advertisedFile = "/tmp/lakewap-advertised-listeners"
)

// runApacheKafka starts a single-node KRaft broker from the apache/kafka
// image, reachable from this process.
func runApacheKafka(ctx context.Context, t *testing.T, image string) []string {
	t.Helper()
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithExposedPorts(kafkaPort),
		testcontainers.WithEnv(map[string]string{
			"CLUSTER_ID":                                     "lkwpTestcontainers000w",
			"KAFKA_NODE_ID":                                  "1",
			"KAFKA_PROCESS_ROLES":                            "broker,controller",
			"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:9093",
			"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
			"KAFKA_LISTENERS":                                "PLAINTEXT://:9092,CONTROLLER://:9093,BROKER://:9094",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT",
			"KAFKA_INTER_BROKER_LISTENER_NAME":               "BROKER",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
			"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
			"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
			"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
			"KAFKA_AUTO_CREATE_TOPICS_ENABLE":                "false",
		}),
		// The image's own start script runs once the advertised listeners
		// are known (written by the hook below).
		testcontainers.WithEntrypoint("sh"),
		testcontainers.WithCmd("-c", "while [ ! -f "+advertisedFile+" ]; do sleep 0.1; done; "+
			"export KAFKA_ADVERTISED_LISTENERS=\"$(cat "+advertisedFile+")\"; exec /etc/kafka/docker/run"),
		testcontainers.WithLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostStarts: []testcontainers.ContainerHook{func(ctx context.Context, c testcontainers.Container) error {
				if err := wait.ForMappedPort(kafkaPort).WaitUntilReady(ctx, c); err != nil {
					return err
				}
				host, err := c.Host(ctx)
				if err != nil {
					return err
				}
				port, err := c.MappedPort(ctx, kafkaPort)
				if err != nil {
					return err
				}
				listeners := fmt.Sprintf("PLAINTEXT://%s:%s,BROKER://localhost:9094", host, port.Port())
				if err := c.CopyToContainer(ctx, []byte(listeners), advertisedFile, 0o644); err != nil {
					return err
				}
				return wait.ForLog("Kafka Server started").WithStartupTimeout(3*time.Minute).WaitUntilReady(ctx, c)
			}},
		}),
	)
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start %s: %v", image, err)
	}
	endpoint, err := c.PortEndpoint(ctx, kafkaPort, "")
	must(t, err)
	return []string{endpoint}
}

// runLakeFS starts the treeverse/lakefs image with a local KV store and
// blockstore inside the container and the given admin credentials.
func runLakeFS(ctx context.Context, t *testing.T, image, accessKeyID, secretAccessKey string) string {
	t.Helper()
	encrypt := make([]byte, 16)
	_, _ = rand.Read(encrypt)
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithExposedPorts(lakeFSPort),
		testcontainers.WithCmd("run"),
		testcontainers.WithEnv(map[string]string{
			"LAKEFS_LISTEN_ADDRESS":                 "0.0.0.0:8000",
			"LAKEFS_DATABASE_TYPE":                  "local",
			"LAKEFS_DATABASE_LOCAL_PATH":            "/tmp/lakefs/metadata",
			"LAKEFS_BLOCKSTORE_TYPE":                "local",
			"LAKEFS_BLOCKSTORE_LOCAL_PATH":          "/tmp/lakefs/data",
			"LAKEFS_AUTH_ENCRYPT_SECRET_KEY":        hex.EncodeToString(encrypt),
			"LAKEFS_INSTALLATION_USER_NAME":         "admin",
			"LAKEFS_INSTALLATION_ACCESS_KEY_ID":     accessKeyID,
			"LAKEFS_INSTALLATION_SECRET_ACCESS_KEY": secretAccessKey,
			"LAKEFS_STATS_ENABLED":                  "false",
			"LAKEFS_EMAIL_SUBSCRIPTION_ENABLED":     "false",
		}),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/_health").WithPort(lakeFSPort).WithStartupTimeout(2*time.Minute)),
	)
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start %s: %v", image, err)
	}
	endpoint, err := c.PortEndpoint(ctx, lakeFSPort, "http")
	must(t, err)
	return endpoint
}

// TestContainersEndToEnd runs the end-to-end scenario (a good batch is
// published, a bad one aborted) with the lakewap daemon as a process
// against the apache/kafka and treeverse/lakefs images of
// docker-compose.yml, when a Docker engine answers.
func TestContainersEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("testcontainers test pulls and runs images; skipped with -short")
	}
	if err := dockerEngineError(); err != nil {
		where := os.Getenv("DOCKER_HOST")
		if where == "" {
			where = "unix:///var/run/docker.sock or a rootless socket"
		}
		t.Skipf("testcontainers test skipped: no Docker engine answers at %s (testcontainers: %v); "+
			"it runs apache/kafka and treeverse/lakefs when one does (scripts/containers.sh brings up podman "+
			"and stand-in images; ./test.sh does so with CI set or LAKEWAP_CONTAINERS=1)", where, err)
	}
	compose := loadCompose(t)
	kafkaImage, lakeFSImage := compose.Services["kafka"].Image, compose.Services["lakefs"].Image
	if !strings.HasPrefix(kafkaImage, "apache/kafka:") || !strings.HasPrefix(lakeFSImage, "treeverse/lakefs:") {
		t.Fatalf("docker-compose.yml images: kafka %q, lakefs %q; want apache/kafka and treeverse/lakefs", kafkaImage, lakeFSImage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	secret := make([]byte, 20)
	_, _ = rand.Read(secret)
	started := time.Now()
	stack := &devstack.Stack{ // the same fields devstack fills, pointing at the containers
		KafkaBrokers:    runApacheKafka(ctx, t, kafkaImage),
		AccessKeyID:     "AKIAIOSFOLAKEWAPTCTEST",
		SecretAccessKey: hex.EncodeToString(secret),
		Repository:      "lake",
		KafkaBackend:    kafkaImage,
	}
	stack.LakeFSEndpoint = runLakeFS(ctx, t, lakeFSImage, stack.AccessKeyID, stack.SecretAccessKey)
	t.Logf("%s at %v and %s at %s started in %s", kafkaImage, stack.KafkaBrokers, lakeFSImage, stack.LakeFSEndpoint,
		time.Since(started).Round(time.Millisecond))

	var topics []devstack.Topic
	for _, tp := range harness.StackTopics() {
		tp.Partitions = 3
		topics = append(topics, tp)
	}
	must(t, stack.CreateTopics(ctx, topics...))
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	must(t, err)
	must(t, lake.CreateRepository(ctx, stack.Repository, "local://"+stack.Repository, "main"))

	tmp := t.TempDir()
	cfg := harness.DemoConfig(stack, tmp)
	startProc(t, stack, writeCrashConfig(t, stack, cfg, "5m"), "")
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	defer env.Close()

	run := func(batch, query string) schemas.Event {
		t.Helper()
		must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "testcontainers", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := env.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
		must(t, err)
		path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
		must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, query))
		must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
			Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		return final
	}

	pub, ok := run("tc-good-1", harness.GoodBillingRows).(schemas.BatchPublished)
	if !ok {
		t.Fatalf("good batch was not published: %+v", env.Watcher.All("tc-good-1"))
	}
	ab, ok := run("tc-bad-1", harness.BadBillingRows).(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil ||
		len(ab.Report.Failed()) != 1 || ab.Report.Failed()[0].Name != "billing_id_not_null" {
		t.Fatalf("bad batch: %+v; want aborted by billing_id_not_null", env.Watcher.All("tc-bad-1"))
	}
	head, err := lake.GetCommit(ctx, stack.Repository, "main")
	must(t, err)
	if head.ID != pub.CommitID || head.Metadata[pipeline.MetaBatchID] != "tc-good-1" {
		t.Errorf("main is at %s (%v), BatchPublished said %s", head.ID, head.Metadata, pub.CommitID)
	}
	rows, err := env.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	nulls, err := env.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL")
	must(t, err)
	if rows != 1000 || nulls != 0 {
		t.Errorf("main has %d rows (%d NULL billing_id), want the good batch's 1000 (0)", rows, nulls)
	}
}
