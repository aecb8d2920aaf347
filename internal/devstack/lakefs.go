package devstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	lakeFSAdmin        = "admin"
	lakeFSHealthWait   = 60 * time.Second
	lakeFSStopGrace    = 10 * time.Second
	lakeFSPortAttempts = 3
)

var errPortTaken = errors.New("listen address already in use")

// lakeFSServer is a running lakeFS child process.
type lakeFSServer struct {
	cmd      *exec.Cmd
	port     int
	endpoint string
	logPath  string
	exited   chan struct{} // closed when the process has been reaped
	waitErr  error         // valid after exited is closed
	// name and healthPath default to lakeFS's ("lakeFS", /api/v1/healthcheck).
	name, healthPath string
}

type lakeFSConfig struct {
	dir             string // holds config, KV store, blockstore, cache and log
	accessKeyID     string
	secretAccessKey string
	// encryptKey encrypts the credentials lakeFS stores; a restarted server
	// must get the same one or it cannot read them back.
	encryptKey string
	// aclEndpoint, when set, is the ACL auth server lakeFS asks
	// (auth.api.endpoint, with auth.ui_config.rbac simplified).
	aclEndpoint string
}

// startLakeFS starts the server on a free loopback port and waits until it
// answers its health check. The free port is chosen before lakeFS binds it,
// so another process can take it in between: then we retry on a new port.
func startLakeFS(ctx context.Context, logger *slog.Logger, bin string, cfg lakeFSConfig) (*lakeFSServer, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		srv, err := startLakeFSOnce(ctx, logger, bin, cfg, port)
		if err == nil || !errors.Is(err, errPortTaken) {
			return srv, err
		}
		logger.Warn("lakeFS port taken, retrying on another", "port", port)
		if attempt == lakeFSPortAttempts {
			return nil, err
		}
	}
}

func startLakeFSOnce(ctx context.Context, logger *slog.Logger, bin string, cfg lakeFSConfig, port int) (*lakeFSServer, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	configPath, err := writeLakeFSConfig(cfg, addr)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(cfg.dir, "lakefs.log")
	// Append: a restarted server (StartLakeFS) keeps the earlier log.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devstack: lakeFS log: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	// Not CommandContext: ctx bounds the start, not the server's life.
	cmd := exec.Command(bin, "run", "--config", configPath)
	cmd.Dir = cfg.dir
	// No LAKEFS_* variables: lakeFS reads them as config overrides, and a
	// developer's own settings must not leak into the stack.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "LAKEFS_") })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	srv := &lakeFSServer{cmd: cmd, port: port, endpoint: "http://" + addr, logPath: logPath}
	if err := srv.start(ctx, logger, "lakeFS"); err != nil {
		return nil, err
	}
	return srv, nil
}

// start starts srv's command, waits until it answers its health check and
// logs that it is ready as what; on failure the process is stopped.
func (srv *lakeFSServer) start(ctx context.Context, logger *slog.Logger, what string) error {
	began := time.Now()
	srv.exited = make(chan struct{})
	if err := srv.cmd.Start(); err != nil {
		return fmt.Errorf("devstack: start %s: %w", what, err)
	}
	go func() {
		srv.waitErr = srv.cmd.Wait()
		close(srv.exited)
	}()
	if err := srv.waitHealthy(ctx); err != nil {
		_ = srv.stop()
		return err
	}
	logger.Info(what+" ready", "endpoint", srv.endpoint, "pid", srv.cmd.Process.Pid,
		"took", time.Since(began).Round(time.Millisecond), "log", srv.logPath)
	return nil
}

// blockstorePath is lakeFS's local blockstore under the stack's directory.
func blockstorePath(dir string) string { return filepath.Join(dir, "data") }

func writeLakeFSConfig(cfg lakeFSConfig, addr string) (string, error) {
	type m = map[string]any
	// usage_report.enabled is not set: lakeFS v1.84 ignores it and warns.
	// The version and audit checks stay off because a source build reports
	// version "dev"; check_latest_version is off for the UI's sake.
	doc := m{
		"listen_address": addr,
		"logging":        m{"format": "text", "level": "INFO", "output": "-"},
		"database":       m{"type": "local", "local": m{"path": filepath.Join(cfg.dir, "metadata")}},
		"blockstore":     m{"type": "local", "local": m{"path": blockstorePath(cfg.dir)}},
		"committed": m{"local_cache": m{
			"dir":        filepath.Join(cfg.dir, "cache"),
			"size_bytes": 256 << 20,
		}},
		"auth": m{"encrypt": m{"secret_key": cfg.encryptKey}},
		"installation": m{
			"user_name":         lakeFSAdmin,
			"access_key_id":     cfg.accessKeyID,
			"secret_access_key": cfg.secretAccessKey,
		},
		"stats":              m{"enabled": false},
		"email_subscription": m{"enabled": false},
		"security":           m{"check_latest_version": false},
	}
	if cfg.aclEndpoint != "" {
		doc["auth"] = m{
			"encrypt":   m{"secret_key": cfg.encryptKey},
			"api":       m{"endpoint": cfg.aclEndpoint + "/api/v1"},
			"ui_config": m{"rbac": "simplified"},
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("devstack: lakeFS config: %w", err)
	}
	path := filepath.Join(cfg.dir, "lakefs.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("devstack: write lakeFS config: %w", err)
	}
	return path, nil
}

// waitHealthy polls the health check until it answers, the process exits
// (then we fail at once with the log tail), or the deadline passes.
func (s *lakeFSServer) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, lakeFSHealthWait)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := s.endpoint + cmp.Or(s.healthPath, "/api/v1/healthcheck")
	name := cmp.Or(s.name, "lakeFS")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
		}
		select {
		case <-s.exited:
			logTail := fileTail(s.logPath, 4096)
			err := fmt.Errorf("devstack: %s exited during start (%v); log tail:\n%s", name, s.waitErr, logTail)
			if strings.Contains(logTail, "address already in use") {
				return fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("devstack: %s not healthy at %s: %w; log tail:\n%s", name, url, ctx.Err(), fileTail(s.logPath, 4096))
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after a grace
// period, and returns once the process has been reaped.
func (s *lakeFSServer) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	pgid := s.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devstack: stop lakeFS: %w", err)
	}
	timer := time.NewTimer(lakeFSStopGrace)
	defer timer.Stop()
	select {
	case <-s.exited:
		return nil
	case <-timer.C:
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devstack: kill lakeFS: %w", err)
	}
	<-s.exited
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("devstack: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

const (
	alphaNum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretSet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// newCredentials makes a fresh admin key pair shaped like lakeFS's own
// (AKIAJ + 15 upper-case alphanumerics, 40-character secret).
func newCredentials() (accessKeyID, secretAccessKey string) {
	return "AKIAJ" + randomString(15, alphaNum), randomString(40, secretSet)
}

func randomString(n int, set string) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = set[int(b[i])%len(set)]
	}
	return string(b)
}
