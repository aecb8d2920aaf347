package main

import (
	"context"
	"io"

	"github.com/lakewap/lakewap/internal/daemon"
)

// cmdRun is lakewap run: the daemon, until a signal ends ctx.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run")
	path := fs.String("config", "lakewap.yaml", "config file")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, cfg.Log.Level)
	d, err := daemon.New(ctx, cfg, daemon.Options{Logger: log, Console: stdout})
	if err != nil {
		log.Error("start-up failed", "err", err)
		return 1
	}
	if err := d.Run(ctx); err != nil {
		log.Error("daemon stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
