package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/internal/gctune"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server"
)

// shutdownGrace bounds how long SIGTERM waits for requests in flight.
const shutdownGrace = 30 * time.Second

// cmdServe runs the sidecar (server/README.md) until SIGINT or SIGTERM, reloading
// plugins on save like dev. It logs JSON lines to stderr and prints the
// address it listens on to stdout (useful with --addr 127.0.0.1:0).
func cmdServe(e *env) int {
	fs := e.flags("serve")
	addr := fs.String("addr", "", "listen on HOST:PORT (default: [server] addr)")
	level := fs.String("log-level", "info", "debug (run events too), info (access log), warn or error")
	profiles := fs.Bool("pprof", false, "serve Go's profiles under "+server.PprofPath+" (with the token, if one is set)")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) > 0 {
		fmt.Fprintf(e.stderr, "awaken-lua serve: unexpected argument %q\n", args[0])
		return exitUsage
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua serve: --log-level is debug, info, warn or error, not %q\n", *level)
		return exitUsage
	}
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: lv}))
	defer gctune.TuneGC()()
	hooks := server.NewHookMetrics()
	cleanup, err := e.useDefault("serve")
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua serve: %v\n", err)
		return exitFailed
	}
	defer cleanup()
	shadow, shadowHost, err := openShadow(e, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "awaken-lua serve: the [shadow] generation does not load:")
		return e.fail(err, configCode(err))
	}
	var tap run.Recorder
	if shadow != nil {
		defer shadowHost.Close()
		defer shadow.Close()
		tap = shadow
	}
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, Log: log, HookObserver: hooks.Observe, Tap: tap})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer h.Close()
	if shadow != nil {
		shadow.SetOut(h.Journal())
		defer shadow.Close() // drains into the journal before h closes it
	}
	cfg := h.Current().Config
	listen := cfg.Server.Addr
	if *addr != "" {
		listen = *addr
	}
	token := ""
	if cfg.Server.TokenEnv != "" {
		token = strings.TrimSpace(os.Getenv(cfg.Server.TokenEnv))
	}
	if err := server.CheckListen(listen, token, cfg.Server.TokenEnv); err != nil {
		return e.fail(err, exitUsage)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua serve: %v\n", err)
		if errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(e.stderr, "another process holds %s (another awaken-lua serve?): stop it, or listen elsewhere with --addr HOST:PORT or [server] addr (127.0.0.1:0 for any free port)\n", listen)
		}
		return exitFailed
	}
	srv := server.New(h, server.Options{Hooks: hooks, Token: token, BodyLimit: int64(cfg.Server.BodyLimit),
		MaxConcurrent: cfg.Server.MaxConcurrent, HookAgent: cfg.Server.HookAgent, Log: log, Addr: listen, Shadow: shadow,
		MaxRuns: cfg.Server.MaxRuns, Pprof: *profiles})
	if n, err := srv.NoteStoredExpiries(e.ctx); err != nil {
		log.Warn("cannot list the store's waiting runs; their expired approvals are settled when a call loads them", "error", err.Error())
	} else if n > 0 {
		log.Info("waiting runs in the store whose approvals expire", "runs", n)
	}
	// The server reads each body before it takes a concurrency slot, under
	// its own deadline (server.DefaultBodyTimeout); ReadTimeout bounds the
	// requests it never reads a body for.
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	auth := "no token (loopback only)"
	if token != "" {
		auth = "bearer token from $" + cfg.Server.TokenEnv
	}
	fmt.Fprintf(e.stdout, "awaken-lua serving on http://%s (generation %s, %s store, %s)\n",
		ln.Addr(), h.Current().ID, cfg.Store.Kind, auth)

	watchCtx, stopWatch := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	bundles, shared := h.Store().(host.Bundles)
	publish := shared && cfg.Store.Publish
	onReload := srv.ObserveReload
	if publish {
		// This replica's plugin directory is the one every replica loads:
		// published now, and again on each save that loads.
		local := cfg.Path(cfg.PluginDir)
		pub := h.Store().(interface {
			Publish(context.Context, map[string][]byte) (string, error)
		})
		publishDir := func() {
			files, err := host.ReadBundle(local)
			if err == nil {
				var hash string
				if hash, err = pub.Publish(e.ctx, files); err == nil {
					log.Info("plugin bundle published", "bundle", hash[:12])
				}
			}
			if err != nil {
				log.Warn("cannot publish the plugin directory; the replicas keep the bundle they have", "error", err.Error())
			}
		}
		publishDir()
		onReload = func(st host.Status) {
			srv.ObserveReload(st)
			if st.LastResult == "loaded" {
				publishDir()
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := h.Watch(watchCtx, onReload); err != nil {
			log.Warn("watching for plugin changes failed; reload with POST /v1/plugins/reload", "error", err.Error())
		}
	}()
	if shared && !publish {
		// Load the bundle published to the database, now and on each
		// publication (awaken-lua publish, or a replica with publish = true).
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = h.FollowBundles(watchCtx, bundles, cfg.Path(filepath.Join(".awaken", "bundles")), srv.ObserveReload)
		}()
	}
	if shadowHost != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := shadowHost.Watch(watchCtx, func(host.Status) {}); err != nil {
				log.Warn("watching the shadow's plugins failed; restart to load changes", "error", err.Error())
			}
		}()
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	code := exitOK
	select {
	case <-e.ctx.Done():
		log.Info("shutting down: finishing requests in flight", "grace", shutdownGrace.String())
	case err := <-served:
		fmt.Fprintf(e.stderr, "awaken-lua serve: %v\n", err)
		code = exitFailed
	}
	srv.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("shutdown did not finish every request", "error", err.Error())
		code = exitFailed
	}
	cancel()
	stopWatch()
	wg.Wait()
	srv.Close()
	return code
}

// openShadow opens the [shadow] candidate, if the configuration names one
// (host.OpenShadow), and the shadow that replays each new run through its
// current generation.
func openShadow(e *env, log *slog.Logger) (*replay.Shadow, *host.Host, error) {
	pc, err := projectConfig(e)
	if err != nil {
		return nil, nil, nil // a bad configuration is reported by host.Open
	}
	sh, err := host.OpenShadow(e.ctx, pc, host.Options{Log: log.With("shadow", true)})
	if err != nil || sh == nil {
		return nil, nil, err
	}
	cand := func() (*run.Runtime, string, func()) {
		g := sh.Acquire()
		return g.Runtime, g.ID, g.Release
	}
	return replay.NewShadow(cand, nil, log), sh, nil
}
