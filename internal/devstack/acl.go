package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/treeverse/lakefs/pkg/api/apigen"
)

// The users an ACL stack creates at start, and the simplified-ACL group
// each joins. lakeFS's ACL server has four groups (Admins, Supers, Writers,
// Readers) whose permission holds on every repository; Writers is the
// least that lets lakewap branch, commit, merge and revert, and it cannot
// create repositories or touch users, groups or credentials of others.
const (
	LakewapUser  = "lakewap"
	WriterUser   = "writer"
	WritersGroup = "Writers"
)

// Credentials is a lakeFS access key pair.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// startACL starts lakeFS's ACL auth server (contrib/auth/acl) on a free
// loopback port, with its own KV store under dir. It has no authentication
// of its own: whoever reaches it can make users, so it listens on loopback.
func startACL(ctx context.Context, logger *slog.Logger, bin, dir, encryptKey string) (*lakeFSServer, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		srv, err := startACLOnce(ctx, logger, bin, dir, encryptKey, port)
		if err == nil || !errors.Is(err, errPortTaken) {
			return srv, err
		}
		logger.Warn("ACL server port taken, retrying on another", "port", port)
		if attempt == lakeFSPortAttempts {
			return nil, err
		}
	}
}

func startACLOnce(ctx context.Context, logger *slog.Logger, bin, dir, encryptKey string, port int) (*lakeFSServer, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	type m = map[string]any
	doc := m{
		"listen_address": addr,
		"database":       m{"type": "local", "local": m{"path": filepath.Join(dir, "acl-metadata")}},
		"encrypt":        m{"secret_key": encryptKey},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("devstack: ACL config: %w", err)
	}
	configPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(configPath, b, 0o600); err != nil {
		return nil, fmt.Errorf("devstack: write ACL config: %w", err)
	}
	logPath := filepath.Join(dir, "acl.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devstack: ACL log: %w", err)
	}
	defer logFile.Close()

	cmd := exec.Command(bin, "run", "--config", configPath)
	cmd.Dir = dir
	// The ACL server reads ACLSERVER_* (and lakeFS's LAKEFS_*) as overrides.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "LAKEFS_") || strings.HasPrefix(kv, "ACLSERVER_")
	})
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	srv := &lakeFSServer{cmd: cmd, port: port, endpoint: "http://" + addr, logPath: logPath, name: "ACL server", healthPath: "/_health"}
	if err := srv.start(ctx, logger, "ACL server"); err != nil {
		return nil, err
	}
	return srv, nil
}

// CreateUser creates a lakeFS user in group (of the ACL server) and
// returns a fresh key for it. Needs an ACL stack.
func (s *Stack) CreateUser(ctx context.Context, user, group string) (Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	u, err := s.client.CreateUserWithResponse(ctx, apigen.CreateUserJSONRequestBody{Id: user})
	if err != nil {
		return Credentials{}, fmt.Errorf("devstack: create user %q: %w", user, err)
	}
	if u.StatusCode() != http.StatusCreated {
		return Credentials{}, fmt.Errorf("devstack: create user %q: lakeFS answered %s: %s", user, u.Status(), u.Body)
	}
	g, err := s.client.AddGroupMembershipWithResponse(ctx, group, user)
	if err != nil {
		return Credentials{}, fmt.Errorf("devstack: add %q to group %q: %w", user, group, err)
	}
	if g.StatusCode() != http.StatusCreated {
		return Credentials{}, fmt.Errorf("devstack: add %q to group %q: lakeFS answered %s: %s", user, group, g.Status(), g.Body)
	}
	c, err := s.client.CreateCredentialsWithResponse(ctx, user)
	if err != nil {
		return Credentials{}, fmt.Errorf("devstack: credentials for %q: %w", user, err)
	}
	if c.JSON201 == nil {
		return Credentials{}, fmt.Errorf("devstack: credentials for %q: lakeFS answered %s: %s", user, c.Status(), c.Body)
	}
	return Credentials{AccessKeyID: c.JSON201.AccessKeyId, SecretAccessKey: c.JSON201.SecretAccessKey}, nil
}
