package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/proxy"
)

// cmdProxy runs the HTTP load balancer until ctx is done (SIGTERM or
// SIGINT: graceful drain); SIGHUP reloads the configuration file.
func cmdProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("c", "", "")
	level := fs.String("log-level", "info", "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *file == "" {
		return fmt.Errorf("proxy: want -c FILE and nothing else: %w", errUsage)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("proxy: --log-level %q: want debug, info, warn or error: %w", *level, errUsage)
	}
	if os.Getenv("GOGC") == "" {
		// A proxy allocates per request and has memory to spare: collecting
		// at 4x the live heap instead of 2x gave 9% more requests per
		// second on one core (bench/proxy/overhead.sh).
		debug.SetGCPercent(400)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	selectors := lb.Classical()
	delete(selectors, "oracle") // it needs the simulator's perfect knowledge
	cfg, err := proxy.LoadConfig(*file, selectors.Names())
	if err != nil {
		return err
	}
	p, err := proxy.New(cfg, proxy.Options{Logger: log, Selectors: selectors})
	if err != nil {
		return fmt.Errorf("proxy config %s: %w", *file, err)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				cfg, err := proxy.LoadConfig(*file, selectors.Names())
				if err == nil {
					err = p.Reload(cfg)
				}
				if err != nil {
					log.Error("reload failed; the old configuration stays", "error", err)
				}
			}
		}
	}()
	return p.Run(ctx)
}
