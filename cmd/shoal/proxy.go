package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/proxy"
	"github.com/spf13/cobra"
)

func (cl *cli) proxy() *cobra.Command {
	var file, level string
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "proxy -c FILE",
		Short: "HTTP/1.1 load balancer running a selector or a Distr-LB policy",
		Long: `Run the HTTP/1.1 load balancer configured by FILE (YAML; docs/guide/proxy.md
has every field): backends with weights, health checks and outlier ejection, a request
selector (rr, wcmp, lsq, sed, p2c, ...) or a trained Distr-LB agent, and an admin
listener with /metrics for Prometheus.

SIGHUP reloads the file without dropping requests (listen and admin cannot change),
as does a change of its content with --watch (a ConfigMap a Balancer keeps, mounted);
SIGTERM or Ctrl-C stops accepting and drains the requests in flight.`,
		Example: `  shoal proxy -c proxy.yaml
  shoal proxy -c proxy.yaml --log-level debug
  shoal proxy -c /etc/shoal/proxy/proxy.yaml --watch 2s`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "configuration `FILE` (YAML, required)")
	cmd.Flags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().DurationVar(&watch, "watch", 0, "reload the file when its content changes, checking every `D` (0: only on SIGHUP)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		if file == "" {
			return usagef("-c FILE is required (the proxy's configuration)")
		}
		if watch < 0 {
			return usagef("--watch %v: want a positive interval, or 0 for none", watch)
		}
		return runProxy(cmd.Context(), file, level, watch, cl.stderr)
	})
	return cmd
}

// runProxy runs the HTTP load balancer until ctx is done (SIGTERM or
// SIGINT: graceful drain); SIGHUP, or a change of the file's content
// seen every watch, reloads the configuration file.
func runProxy(ctx context.Context, file, level string, watch time.Duration, stderr io.Writer) error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", level)
	}
	if os.Getenv("GOGC") == "" {
		// A proxy allocates per request and has memory to spare: collecting
		// at 4x the live heap instead of 2x gave 9% more requests per
		// second on one core (bench/proxy/overhead.sh).
		debug.SetGCPercent(400)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	selectors := lb.Classical().Runs(policy.Proxy) // not the oracle: it needs the simulator's knowledge
	cfg, err := proxy.LoadConfig(file, selectors.Names())
	if err != nil {
		return err
	}
	p, err := proxy.New(cfg, proxy.Options{Logger: log, Selectors: selectors})
	if err != nil {
		return fmt.Errorf("proxy config %s: %w", file, err)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var tick <-chan time.Time
	loaded, _ := os.ReadFile(file)
	if watch > 0 {
		t := time.NewTicker(watch)
		defer t.Stop()
		tick = t.C
	}
	reload := func() {
		cfg, err := proxy.LoadConfig(file, selectors.Names())
		if err == nil {
			err = p.Reload(cfg)
		}
		if err != nil {
			log.Error("reload failed; the old configuration stays", "error", err)
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				// A mounted ConfigMap changes by a symlink swap: compare
				// the content, not the modification time.
				now, err := os.ReadFile(file)
				if err != nil || bytes.Equal(now, loaded) {
					continue
				}
				loaded = now
				log.Info("the configuration file changed; reloading", "file", file)
				reload()
			case <-hup:
				reload()
			}
		}
	}()
	return p.Run(ctx)
}
