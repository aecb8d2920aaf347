package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/schemas"
)

// TestStoppedDaemonLeavesNoKafkaConnections: a kafka-go transport keeps its
// connections, each refreshing every topic's metadata every 6 s, until it
// is closed, and the daemon's client, changelog, janitor store and
// consumer's dead-letter client and admin transport were never closed: a
// process that started and stopped daemons (the system tests) piled up
// hundreds of connections to the broker. Once a daemon that dead-lettered
// a record, published a batch and swept with its janitor (which reads the
// run store from Kafka only on a sweep) has stopped (and the harness's own
// clients are closed), this process holds no connection to the broker.
func TestStoppedDaemonLeavesNoKafkaConnections(t *testing.T) {
	if len(kafkatest.ExternalBrokers()) > 0 {
		t.Skip("on kfake only: an external broker's port is shared with the other tests' stacks")
	}
	// The janitor sweeps every 50 ms and deletes a published run's branch
	// at once: the published branch's deletion shows a sweep read the runs.
	e := startE2EWith(t, func(c *config.Config) { c.Janitor.AbandonedAfter = config.Duration(time.Nanosecond) },
		daemon.Options{JanitorInterval: 50 * time.Millisecond})
	// A dead letter, so the consumer's dead-letter client connects too.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("conns-0"), Value: []byte("not an event")}))
	readTopicUntil(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, 1)
	if ev := e.runBatch(t, "conns-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("the batch ended with %s, want it published: %+v", ev.EventType(), ev)
	}
	swept := func() bool {
		bs, err := e.Lake.ListBranches(ctx, "lake", "wap-billing-conns-1")
		must(t, err)
		return len(bs) == 0
	}
	for !swept() {
		if ctx.Err() != nil {
			t.Fatal("the janitor did not delete the published branch wap-billing-conns-1: no sweep to see")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ports := map[int]bool{}
	for _, b := range e.Stack.KafkaBrokers {
		_, p, err := net.SplitHostPort(b)
		must(t, err)
		n, err := strconv.Atoi(p)
		must(t, err)
		ports[n] = true
	}
	if conns := brokerConns(t, ports); len(conns) == 0 {
		t.Fatal("no connection to the broker while the daemon runs: the test cannot see them")
	}

	e.Env.Close()
	e.cancel()
	if err := <-e.done; err != nil {
		t.Fatalf("daemon: %v", err)
	}
	e.done <- nil // stopped: the cleanup must not wait for it again

	// Closing is asynchronous (kafka-go's connection goroutines end on
	// their own): awaited, for a minute.
	var left []string
	deadline := time.Now().Add(time.Minute)
	for {
		left = brokerConns(t, ports)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("a minute after the daemon stopped, this process still holds %d connections to the broker (%v):\n%s",
		len(left), e.Stack.KafkaBrokers, strings.Join(left, "\n"))
}

// brokerConns returns the TCP sockets this process holds (an open
// descriptor) whose remote port is one of ports, one line each from
// /proc/self/net/tcp{,6}. The in-process broker's own end of a connection
// has the port as its local one, and is left out.
func brokerConns(t *testing.T, ports map[int]bool) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	mine := map[string]bool{} // socket inodes
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var conns []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !mine[fields[9]] {
				continue
			}
			local, remote := hexPort(fields[1]), hexPort(fields[2])
			if ports[remote] && !ports[local] {
				conns = append(conns, fmt.Sprintf("%s: local port %d, remote port %d, state %s, inode %s",
					filepath.Base(table), local, remote, tcpState(fields[3]), fields[9]))
			}
		}
		err = sc.Err()
		f.Close()
		must(t, err)
	}
	slices.Sort(conns)
	return conns
}

// hexPort is the port of a /proc/net/tcp address ("0100007F:1F90"), -1 if
// it has none.
func hexPort(addr string) int {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

// tcpState names a /proc/net/tcp state code (include/net/tcp_states.h).
func tcpState(code string) string {
	names := map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
		"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}
	if n, ok := names[code]; ok {
		return n
	}
	return code
}
