package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/replay"
)

const replayMore = `Replays the journal's runs through the candidate: the configuration's
plugins as they are now (or --plugin-dir, --config), with the recorded
model responses, tool results, decisions and clock; no model and no tool
runs. PATH defaults to the configured [journal] path.

Exit codes: 0 no flip, 1 flips (with --fail-on, only flips of those kinds),
2 an error (no journal, a journal with no records, a bad flag or --fail-on
kind, a --plugin-dir that is not a directory, a candidate that does not
load).`

// cmdReplay re-drives recorded runs through a candidate generation.
func cmdReplay(e *env) int {
	fs := e.flags("replay")
	pluginDir := fs.String("plugin-dir", "", "the candidate's plugin directory (default: the configuration's)")
	since := fs.Duration("since", 0, "only runs that started this long ago or later, such as 24h")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	failOn := fs.String("fail-on", "", "exit 1 only for these flip kinds, comma-separated: allow->block,block->allow,context changed,...")
	paths, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if *since < 0 {
		// It used to be ignored: the whole journal was replayed.
		fmt.Fprintf(e.stderr, "awaken-lua replay: --since %s: a duration back from now, such as 24h; leave it out to replay the whole journal\n", *since)
		return exitUsage
	}
	var kinds []string
	if *failOn != "" {
		kinds = strings.Split(*failOn, ",")
	}
	// A misspelt kind never matches: the CI gate would pass every change.
	if err := replay.CheckKinds(kinds); err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua replay: --fail-on: %v\n", err)
		return exitUsage
	}
	// Checked here, not by the host: it would place a missing directory
	// at the configuration's plugin_dir line, or, with plugin_dir left at
	// its default, replay against a candidate with no plugins at all.
	if err := checkDirFlag("--plugin-dir", *pluginDir, "the candidate's plugin directory"); err != nil {
		return e.fail(err, exitUsage)
	}
	src, _, closeSrc, err := journalSource(e, paths)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua replay: %v\n", err)
		return exitUsage
	}
	defer closeSrc()
	records := 0
	src = src.Counting(&records)
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, PluginDir: *pluginDir, Candidate: true})
	if err != nil {
		fmt.Fprintln(e.stderr, "awaken-lua replay: the candidate does not load:")
		e.fail(err, exitUsage)
		return exitUsage
	}
	defer h.Close()
	g := h.Acquire()
	defer g.Release()
	o := replay.Options{}
	if *since > 0 {
		o.Since = time.Now().Add(-*since)
	}
	rep, err := replay.RunSource(e.ctx, g.Runtime, src.Source, o)
	if err != nil {
		e.fail(err, exitUsage)
		return exitUsage
	}
	if records == 0 {
		// Nothing was compared: "no flips" would pass a CI gate pointed
		// at the wrong directory, or run before anything was recorded.
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stderr, "warning: %s\n", p)
		}
		return e.fail(src.empty(), exitUsage)
	}
	if *asJSON {
		out := struct {
			*replay.Report
			ByKind   []replay.Count `json:"by_kind"`
			ByPlugin []replay.Count `json:"by_plugin"`
			Problems []string       `json:"problems,omitempty"`
		}{Report: rep, ByKind: rep.ByKind(), ByPlugin: rep.ByPlugin()}
		for _, p := range rep.Problems {
			out.Problems = append(out.Problems, p.String())
		}
		fmt.Fprintf(e.stdout, "%s\n", jsonText(out, "  "))
	} else {
		rep.WriteText(e.stdout)
	}
	if rep.Fails(kinds) {
		return exitFailed
	}
	return exitOK
}

// jsonText is v as JSON for a person or a script to read: `->`, `<` and
// `&` as they are (a flip kind is "allow->block", the string --fail-on
// takes and grep looks for), not escaped for HTML as json.Marshal does.
func jsonText(v any, indent string) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return []byte(fmt.Sprint(v))
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// checkDirFlag reports a flag that names a directory that is missing or
// not a directory, as config_invalid naming the flag; an empty value (the
// flag not given) passes.
func checkDirFlag(flag, dir, what string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return errs.New(errs.ConfigInvalid, "%s %s: a file, not a directory; name %s", flag, dir, what)
	case errors.Is(err, fs.ErrNotExist):
		return errs.New(errs.ConfigInvalid, "%s %s: no such directory; name %s, or leave the flag out to use the configuration's", flag, dir, what)
	}
	return errs.New(errs.ConfigInvalid, "%s %s: cannot read it (%v); name %s", flag, dir, err, what)
}

// projectConfig reads the configuration as host.Open finds it.
func projectConfig(e *env) (*config.Config, error) {
	path := e.config
	if path == "" {
		if config.Here(host.DefaultConfig) {
			path = host.DefaultConfig
		}
	}
	return config.Load(path)
}

// namedSource is a journal Source with what to call it in messages.
type namedSource struct {
	journal.Source
	where string // "the journal directory .awaken/journal", ...
}

// Counting is the source, counting the records it hands on in n.
func (s namedSource) Counting(n *int) namedSource {
	src := s.Source
	s.Source = func(fn func(journal.Pos, *journal.Record) error) ([]journal.Problem, error) {
		return src(func(pos journal.Pos, rec *journal.Record) error {
			*n++
			return fn(pos, rec)
		})
	}
	return s
}

// empty is the error of a journal with no record to replay or verify.
func (s namedSource) empty() error {
	return errs.New(errs.JournalInvalid, "%s holds no journal records: nothing was replayed or checked; "+
		"name the journal's directory or files ([journal] path, where files are named journal-*.ndjson), or record some runs first", s.where)
}

// journalSource is the journal named by paths, else the configured one:
// its files, or the PostgreSQL store's ([journal] kind = "postgres"), with
// a verifier for journal verify and a function that closes what it opened.
func journalSource(e *env, paths []string) (namedSource, func() (int, []journal.Problem, error), func(), error) {
	if len(paths) > 0 {
		return namedSource{journal.FileSource(paths...), describePaths(paths)},
			func() (int, []journal.Problem, error) { return journal.Verify(paths) }, func() {}, nil
	}
	cfg, err := projectConfig(e)
	if err != nil {
		return namedSource{}, nil, nil, err
	}
	if cfg.Journal.Kind == config.JournalPostgres {
		s, err := host.OpenPostgres(e.ctx, cfg)
		if err != nil {
			return namedSource{}, nil, nil, err
		}
		each := func(yield func(journal.Line) error) error { return s.JournalLines(e.ctx, time.Time{}, yield) }
		verify := func() (int, []journal.Problem, error) {
			n, err := journal.VerifyLines(each)
			return n, nil, err
		}
		return namedSource{journal.Lines(each), "the PostgreSQL journal"}, verify, s.Close, nil
	}
	if cfg.Journal.Path == "" {
		return namedSource{}, nil, nil, errs.New(errs.JournalInvalid, "the configuration has no [journal] path; give the journal's directory or files, or set [journal] path and record some runs first")
	}
	dir := []string{cfg.Path(cfg.Journal.Path)}
	if _, err := os.Stat(dir[0]); errors.Is(err, fs.ErrNotExist) {
		// The configured journal before anything was recorded: not a
		// wrong path to correct, as "give a journal directory" implied.
		return namedSource{}, nil, nil, errs.New(errs.JournalInvalid, "the journal directory %s does not exist yet: nothing was recorded to it; "+
			"record some runs first (run, serve, dev and the hooks write it), or name the journal's directory or files", dir[0])
	}
	return namedSource{journal.FileSource(dir...), "the journal directory " + dir[0]},
		func() (int, []journal.Problem, error) { return journal.Verify(dir) }, func() {}, nil
}

// describePaths names the journal paths given on the command line.
func describePaths(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return strings.Join(paths[:len(paths)-1], ", ") + " and " + paths[len(paths)-1]
}

const journalMore = `Subcommands:
  verify [PATH...]          check the hash chain; exit 1 at the first broken link,
                            2 for a journal with no records or that cannot be read
  export RUN_ID [PATH...]   write a *_test.lua that replays the run in the
                            harness and asserts its decisions (-o FILE, default stdout);
                            replay --json lists the run ids (run_ids); a FILE
                            that holds something else is kept as FILE.<time>.bak
PATH defaults to the configured [journal] path.`

// cmdJournal verifies a journal or exports a run as a Lua test.
func cmdJournal(e *env) int {
	fs := e.flags("journal")
	out := fs.String("o", "", "export: write the test to this file (default stdout)")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	subs := []string{"verify", "export"}
	if len(args) > 0 && !slices.Contains(subs, args[0]) {
		fmt.Fprintf(e.stderr, "awaken-lua journal: unknown subcommand %q%s; the subcommands are verify and export\n", args[0], errs.DidYouMean(args[0], subs))
	}
	if len(args) == 0 || !slices.Contains(subs, args[0]) || (args[0] == "export" && len(args) < 2) {
		fmt.Fprintln(e.stderr, "usage: awaken-lua journal verify [PATH...] | journal export RUN_ID [-o FILE] [PATH...]")
		return exitUsage
	}
	sub, rest := args[0], args[1:]
	runID := ""
	if sub == "export" {
		runID, rest = rest[0], rest[1:]
	}
	src, verify, closeSrc, err := journalSource(e, rest)
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua journal: %v\n", err)
		return exitUsage
	}
	defer closeSrc()
	if sub == "verify" {
		n, problems, err := verify()
		for _, p := range problems {
			fmt.Fprintf(e.stderr, "warning: %s\n", p)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			if errs.CodeOf(err) != errs.JournalTampered {
				// A journal that cannot be read (a path that is not
				// there) is an error, as for replay: exit 1 says a link
				// is broken.
				return exitUsage
			}
			return exitFailed
		}
		if n == 0 {
			return e.fail(src.empty(), exitUsage)
		}
		fmt.Fprintf(e.stdout, "ok: %d records, every link holds\n", n)
		return exitOK
	}
	configs := replay.Configs{Warn: e.stderr}
	if cfg, err := projectConfig(e); err == nil {
		configs.Tables, configs.Hash = cfg.PluginTables, cfg.Hash
	}
	// The test is made in memory and the file written only once it is
	// whole: a failed export leaves -o's file as it was (an existing test
	// is not emptied, and no empty *_test.lua is left for test to load).
	var b strings.Builder
	if err := replay.Export(&b, runID, src.Source, configs); err != nil {
		e.fail(err, exitUsage)
		return exitUsage
	}
	if *out == "" {
		fmt.Fprint(e.stdout, b.String())
		return exitOK
	}
	kept, err := keepBackup(*out, []byte(b.String()), time.Now())
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua journal export: %v; nothing was written\n", err)
		return exitUsage
	}
	if err := writeFileAtomic(*out, []byte(b.String())); err != nil {
		if kept != "" {
			os.Remove(kept) // the file is as it was
		}
		fmt.Fprintf(e.stderr, "awaken-lua journal export: %v; name a file in a directory that exists and can be written\n", err)
		return exitUsage
	}
	if kept != "" {
		fmt.Fprintf(e.stderr, "kept the old %s as %s\n", *out, kept)
	}
	fmt.Fprintf(e.stderr, "wrote %s: run it with awaken-lua test %s\n", *out, *out)
	return exitOK
}

// keepBackup copies path to path.<UTC time>.bak (a new name each time)
// when it holds something other than data, and returns the copy's name:
// -o may name a file of the user's, such as a test they wrote. It returns
// "" when there is nothing to keep: no file (or a directory, which
// writeFileAtomic refuses), or the same bytes.
func keepBackup(path string, data []byte, now time.Time) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return "", nil
	}
	var old []byte
	if err == nil {
		old, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read %s to keep a backup of it: %w", path, err)
	}
	if bytes.Equal(old, data) {
		return "", nil
	}
	stamp := now.UTC().Format("20060102T150405Z")
	for i := 1; i <= 100; i++ {
		name := fmt.Sprintf("%s.%s.bak", path, stamp)
		if i > 1 {
			name = fmt.Sprintf("%s.%s-%d.bak", path, stamp, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot keep a backup of %s: %w", path, err)
		}
		_, werr := f.Write(old)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			os.Remove(name)
			return "", fmt.Errorf("cannot keep a backup of %s: %w", path, werr)
		}
		return name, nil
	}
	return "", fmt.Errorf("cannot keep a backup of %s: 100 backups of it this second already", path)
}

// writeFileAtomic writes data to path through a temporary file in its
// directory renamed over it, so that path holds either what it held or
// data, never part of it.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		mode = fi.Mode().Perm()
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real // the file a link names is replaced, not the link
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // not the random name
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Chmod(tmp, mode)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", path, werr)
	}
	return nil
}
