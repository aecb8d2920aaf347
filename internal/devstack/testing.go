package devstack

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// startForTestTimeout covers a cold build of lakeFS on a busy machine.
const startForTestTimeout = 15 * time.Minute

// StartForTest starts a stack for t and closes it in t.Cleanup. A missing
// lakeFS binary is built, not skipped. When t has failed, the tail of the
// lakeFS log is written to the test log before the stack goes away.
func StartForTest(t testing.TB, opts Options) *Stack {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startForTestTimeout)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("devstack: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lakeFS log tail (%s):\n%s", s.LakeFSLog, fileTail(s.LakeFSLog, 8192))
		}
		if err := s.Close(); err != nil {
			t.Errorf("devstack close: %v", err)
		}
	})
	return s
}
