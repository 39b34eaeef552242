package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// cmdTest runs Lua plugin tests: the *_test.lua files of the given paths
// (files or directories), or of the plugin directory.
func cmdTest(e *env) int {
	fs := e.flags("test")
	runRe := fs.String("run", "", "run only tests whose name matches the regular expression")
	verbose := fs.Bool("v", false, "list every test, not only failures, and show plugin logs")
	logger := e.logFlags(fs, verbose)
	format := fs.String("format", "text", "text, json (one document of results) or junit (JUnit XML, for CI)")
	paths, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if *format != "text" && *format != "json" && *format != "junit" {
		fmt.Fprintf(e.stderr, "awaken-lua test: --format is text, json or junit, not %q\n", *format)
		return exitUsage
	}
	log, err := logger()
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua test: %v\n", err)
		return exitUsage
	}
	cfg, err := loadConfig(e.config)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	var filter *regexp.Regexp
	if *runRe != "" {
		if filter, err = regexp.Compile(*runRe); err != nil {
			fmt.Fprintf(e.stderr, "awaken-lua test: -run: %v\n", err)
			return exitUsage
		}
	}
	files, plugins, err := testFiles(cfg, paths)
	if err != nil {
		return e.fail(err, exitUsage)
	}
	var out io.Writer = e.stdout
	if *format != "text" {
		out = io.Discard // the report is written below
	}
	sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: plugins,
		Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Filter: filter, Verbose: *verbose, Out: out,
		Limits: luabridge.Limits{HookTimeout: hookTimeout(cfg)}, Log: log})
	switch *format {
	case "json":
		err = writeTestJSON(e.stdout, sum)
	case "junit":
		err = writeTestJUnit(e.stdout, sum)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua test: %v\n", err)
		return exitFailed
	}
	if sum.Failed > 0 {
		return exitFailed
	}
	if sum.Passed == 0 {
		// A filter that matches nothing, or files without tests: a CI job
		// that runs this must not pass by testing nothing.
		what := "no tests ran"
		switch {
		case filter != nil:
			what = fmt.Sprintf("-run %q matches no test", *runRe)
		case len(files) == 0:
			where := strings.Join(paths, ", ")
			if where == "" {
				where = filepath.ToSlash(cfg.PluginDir)
			}
			fmt.Fprintf(e.stderr, "awaken-lua test: no *_test.lua file in %s; write one beside the plugin it tests (NAME_test.lua, with t.test from awaken.testing; awaken-lua init shows one)\n", where)
			return exitFailed
		}
		fmt.Fprintf(e.stderr, "awaken-lua test: %s in %d file(s)\n", what, len(files))
		return exitFailed
	}
	return exitOK
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		if !config.Here(host.DefaultConfig) {
			c := config.Default()
			c.Dir, _ = os.Getwd()
			return c, nil
		}
		path = host.DefaultConfig
	}
	return config.Load(path)
}

// testFiles finds the test files of paths (default: the plugin directory)
// and the plugin directory source harnesses look in.
func testFiles(cfg *config.Config, paths []string) ([]luabridge.TestFile, luabridge.Source, error) {
	dir := cfg.Path(cfg.PluginDir)
	var plugins luabridge.Source
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		plugins = luabridge.Source{FS: os.DirFS(dir), Name: filepath.ToSlash(cfg.PluginDir)}
	}
	if len(paths) == 0 {
		if plugins.FS == nil {
			return nil, plugins, errs.New(errs.ConfigInvalid, "no plugin directory at %s; name test files or directories", dir)
		}
		files, err := luabridge.FindTests(plugins)
		return files, plugins, err
	}
	var files []luabridge.TestFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, plugins, errs.New(errs.ConfigInvalid, "test path %s: no such file or directory; name *_test.lua files or directories that hold them, or none for the plugin directory's tests", p)
		}
		if err != nil {
			return nil, plugins, errs.New(errs.ConfigInvalid, "test path %s: cannot read it (%v); name *_test.lua files or directories that hold them", p, causeOf(err))
		}
		if fi.IsDir() {
			found, err := luabridge.FindTests(luabridge.Source{FS: os.DirFS(p), Name: filepath.ToSlash(filepath.Clean(p))})
			if err != nil {
				return nil, plugins, err
			}
			files = append(files, found...)
			continue
		}
		if !strings.HasSuffix(p, "_test.lua") {
			return nil, plugins, errs.New(errs.ConfigInvalid, "test path %s: not a test file; name *_test.lua files or directories that hold them", p)
		}
		d := filepath.Dir(p)
		files = append(files, luabridge.TestFile{Source: luabridge.Source{FS: os.DirFS(d), Name: filepath.ToSlash(filepath.Clean(d))}, Path: filepath.Base(p)})
	}
	return files, plugins, nil
}

// causeOf is an *fs.PathError's cause alone ("permission denied"): the
// message names the path already.
func causeOf(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
