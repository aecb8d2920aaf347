package devstack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// LakeFSVersion is the lakeFS release the tools module pins; it names the
// cache directory so that bumping the pin rebuilds instead of reusing.
const LakeFSVersion = "v1.84.0"

const lakeFSModule = "github.com/treeverse/lakefs"

// LakeFSBinaryPath returns the path of the cached lakeFS server binary,
// building it from tools/lakefs on first use (about 2 minutes cold).
func LakeFSBinaryPath(ctx context.Context, logger *slog.Logger) (string, error) {
	return cachedTool(ctx, orDiscard(logger), "lakefs")
}

// LakectlBinaryPath returns the path of the cached lakectl binary, building
// it from tools/lakefs on first use.
func LakectlBinaryPath(ctx context.Context, logger *slog.Logger) (string, error) {
	return cachedTool(ctx, orDiscard(logger), "lakectl")
}

// ACLBinaryPath returns the path of the cached lakeFS ACL auth server
// (contrib/auth/acl of the same module), building it on first use.
func ACLBinaryPath(ctx context.Context, logger *slog.Logger) (string, error) {
	return cachedTool(ctx, orDiscard(logger), "acl")
}

// toolPackages are the commands of the lakeFS module the tools module pins.
var toolPackages = map[string]string{
	"lakefs":  lakeFSModule + "/cmd/lakefs",
	"lakectl": lakeFSModule + "/cmd/lakectl",
	"acl":     lakeFSModule + "/contrib/auth/acl/cmd/acl",
}

func cachedTool(ctx context.Context, logger *slog.Logger, name string) (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "lakefs-"+LakeFSVersion)
	bin := filepath.Join(dir, name)
	if isExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("devstack: create cache dir: %w", err)
	}

	unlock, err := lockFile(ctx, logger, filepath.Join(dir, name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another test package may have finished the build while we waited.
	if isExecutable(bin) {
		return bin, nil
	}
	if err := buildTool(ctx, logger, name, bin); err != nil {
		return "", err
	}
	return bin, nil
}

func buildTool(ctx context.Context, logger *slog.Logger, name, bin string) error {
	tools, err := toolsModuleDir()
	if err != nil {
		return err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("devstack: building %s needs the go command: %w", name, err)
	}
	// We hold the lock, so any temp file left here is from a killed build.
	stale, _ := filepath.Glob(bin + ".tmp-*")
	for _, f := range stale {
		_ = os.Remove(f)
	}

	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	pkg, ok := toolPackages[name]
	if !ok {
		return fmt.Errorf("devstack: no lakeFS tool %q", name)
	}
	what := "lakeFS " + name
	if name == "lakefs" {
		what = "lakeFS server"
	}
	logger.Info(fmt.Sprintf("building %s %s (first run only, ~2 min)...", what, LakeFSVersion),
		"package", pkg, "dest", bin)
	start := time.Now()
	cmd := exec.CommandContext(ctx, goTool, "build", "-C", tools, "-o", tmp, pkg)
	// A go.work above the repo would pull the product module into the build.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("devstack: go build %s: %w\n%s", pkg, err, tail(out.Bytes(), 4096))
	}
	if err := os.Rename(tmp, bin); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("devstack: install %s: %w", name, err)
	}
	logger.Info("built "+name, "path", bin, "took", time.Since(start).Round(time.Second))
	return nil
}

// lockFile takes an exclusive flock so that parallel test binaries build a
// tool once; the lock dies with the process, so a killed build frees it.
func lockFile(ctx context.Context, logger *slog.Logger, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devstack: open lock: %w", err)
	}
	fd := int(f.Fd())
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		orDiscard(logger).Info("waiting for another process to finish building lakeFS", "lock", path)
		locked := make(chan error, 1)
		go func() { locked <- syscall.Flock(fd, syscall.LOCK_EX) }()
		select {
		case err = <-locked:
		case <-ctx.Done():
			// Closing the file releases the lock if the goroutine gets it later.
			go func() { <-locked; _ = f.Close() }()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("devstack: lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}

// repoRoot finds the lakewap checkout from this source file's location,
// then from the working directory; "" when neither holds the tools module.
func repoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if hasToolsModule(root) {
			return root
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if hasToolsModule(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func hasToolsModule(root string) bool {
	_, err := os.Stat(filepath.Join(root, "tools", "lakefs", "go.mod"))
	return err == nil
}

func toolsModuleDir() (string, error) {
	root := repoRoot()
	if root == "" {
		return "", errors.New("devstack: cannot find the lakewap source tree (tools/lakefs/go.mod) to build lakeFS; run from the repository or pass a lakeFS binary")
	}
	return filepath.Join(root, "tools", "lakefs"), nil
}

// cacheDir is $LAKEWAP_CACHE_DIR, else <repo>/.cache, else the user cache.
func cacheDir() (string, error) {
	if dir := os.Getenv("LAKEWAP_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	if root := repoRoot(); root != "" {
		dir := filepath.Join(root, ".cache")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("devstack: create cache dir: %w", err)
		}
		// Keep 200+ MB of binaries out of git without touching the repo's .gitignore.
		ignore := filepath.Join(dir, ".gitignore")
		if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(ignore, []byte("*\n"), 0o644)
		}
		return dir, nil
	}
	user, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("devstack: no cache dir: %w", err)
	}
	return filepath.Join(user, "lakewap"), nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func orDiscard(logger *slog.Logger) *slog.Logger {
	return cmp.Or(logger, slog.New(slog.DiscardHandler))
}

// tail returns the last n bytes of b, starting at a line boundary.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

// fileTail reads the last n bytes of a log file for error messages.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return tail(b, int(n))
}
