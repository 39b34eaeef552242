package agentsettings

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// writeFile replaces the settings file with out: a backup of the old
// bytes first (when the file exists), then a temporary file in the same
// directory, synced and renamed over it, so a crash leaves the old file or
// the new one, never half of one. If the file changed since it was read
// (Claude Code writes it too), nothing is written.
func writeFile(p string, old, out []byte, mode fs.FileMode, exists bool, now time.Time, res *Result) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot create %s", dir)
	}
	if exists {
		if cur, err := os.ReadFile(p); err != nil || !bytes.Equal(cur, old) {
			return errs.New(errs.ConfigInvalid, "%s changed while awaken-lua was updating it; nothing was written, install again", p)
		}
		b, err := backup(p, old, mode, now)
		if err != nil {
			return err
		}
		res.Backup = b
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*.tmp")
	if err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(out); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	if err := tmp.Chmod(mode); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	if err := tmp.Sync(); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	if err := tmp.Close(); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	if err := commit(tmp.Name(), p, exists); err != nil {
		return err
	}
	done = true
	syncDir(dir)
	res.Changed = true
	return nil
}

// deleteFile removes a settings file an uninstall left as {} that held
// exactly what install writes (installWrote), so it goes as if install had never
// written it, without a backup. As writeFile, it leaves a file that
// changed since it was read alone.
func deleteFile(p string, old []byte, res *Result) error {
	if cur, err := os.ReadFile(p); err != nil || !bytes.Equal(cur, old) {
		return errs.New(errs.ConfigInvalid, "%s changed while awaken-lua was updating it; nothing was written, uninstall again", p)
	}
	if err := os.Remove(p); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot remove %s", p)
	}
	syncDir(filepath.Dir(p))
	res.Changed, res.Deleted = true, true
	return nil
}

// isLink reports whether p is a symbolic link: an uninstall writes {}
// through it rather than leave it dangling.
func isLink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// commit puts the temporary file in p's place. A file that did not exist
// when it was read must not exist now either (the agent may have just
// written it): it is linked in, which fails if p exists, rather than
// renamed over whatever is there.
func commit(tmp, p string, exists bool) error {
	if !exists {
		err := os.Link(tmp, p)
		if errors.Is(err, fs.ErrExist) {
			return errs.New(errs.ConfigInvalid, "%s was created while awaken-lua was writing it; nothing was written, install again", p)
		}
		if err == nil {
			os.Remove(tmp)
			return nil
		}
		// No hard links here: check, then rename.
		if _, err := os.Lstat(p); err == nil {
			return errs.New(errs.ConfigInvalid, "%s was created while awaken-lua was writing it; nothing was written, install again", p)
		}
	}
	if err := os.Rename(tmp, p); err != nil {
		return errs.Wrap(errs.ConfigInvalid, err, "cannot write %s", p)
	}
	return nil
}

// backup copies the old file to NAME.YYYYMMDDTHHMMSSZ.bak next to it (a
// new name each time: an earlier backup is never overwritten).
func backup(p string, old []byte, mode fs.FileMode, now time.Time) (string, error) {
	stamp := now.UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("%s.%s.bak", p, stamp)
		if i > 0 {
			name = fmt.Sprintf("%s.%s-%d.bak", p, stamp, i+1)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", errs.Wrap(errs.ConfigInvalid, err, "cannot back up %s", p)
		}
		_, err = f.Write(old)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", errs.Wrap(errs.ConfigInvalid, err, "cannot back up %s", p)
		}
		return name, nil
	}
	return "", errs.New(errs.ConfigInvalid, "cannot back up %s: too many backups from the same second", p)
}

// syncDir makes a rename in dir durable (best effort: not every system
// can sync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// before finds what was in the file before install wrote it, for an
// uninstall that would delete it (it holds just what install writes):
// the newest of its backups without awaken-lua's hooks in it. None
// (every backup is of install's own file, or there is none): the file
// was install's, and goes. One that install turns into the file as it is
// now: it was there before, with nothing install's uninstall takes away
// ({}, "hooks": {}), and is given back byte for byte. Any other: a file
// of the user's was there, which uninstall leaves as {}.
func (o Options) before(p string, data []byte, merge func(Options, *node, *Result) error) (old []byte, existed bool) {
	cur, err := parse(data)
	if err != nil {
		return nil, true
	}
	dir, name := filepath.Split(p)
	ents, err := os.ReadDir(cmp.Or(dir, "."))
	if err != nil {
		return nil, true
	}
	type bak struct {
		name string
		mod  time.Time
	}
	var baks []bak
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, name+".") && strings.HasSuffix(n, ".bak") && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				baks = append(baks, bak{n, fi.ModTime()})
			}
		}
	}
	slices.SortFunc(baks, func(a, b bak) int { // newest first
		return cmp.Or(b.mod.Compare(a.mod), cmp.Compare(b.name, a.name))
	})
	for _, b := range baks {
		text, err := os.ReadFile(filepath.Join(dir, b.name))
		if err != nil {
			return nil, true
		}
		root := object()
		if len(bytes.TrimSpace(text)) > 0 {
			if root, err = parse(text); err != nil || root.kind != '{' {
				return nil, true
			}
		}
		un := o
		un.Uninstall = true
		var res Result
		if err := merge(un, root, &res); err != nil {
			return nil, true
		}
		if res.Removed > 0 {
			continue // install's own file, backed up by a later install
		}
		if root, err = parseOrEmpty(text); err != nil {
			return nil, true
		}
		in := o
		in.Uninstall = false
		if err := merge(in, root, &res); err != nil || !equal(root, cur) {
			return nil, true
		}
		return text, true
	}
	return nil, false
}

func parseOrEmpty(data []byte) (*node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return object(), nil
	}
	return parse(data)
}

// prune removes the directories between a deleted settings file and the
// project that it leaves empty (.claude/, .github/hooks/ and .github/,
// ...), as an install into a fresh project made them; a directory with
// anything else in it (a backup, a file of the user's) stays, as do a
// linked directory, the project, and the user scope's directories (the
// agent's own, ~/.claude).
func (o Options) prune(p string) {
	if o.Scope == User || o.ProjectDir == "" {
		return
	}
	stop := filepath.Clean(o.ProjectDir)
	for d := filepath.Dir(p); d != stop && strings.HasPrefix(d, stop+string(filepath.Separator)); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return
		}
		if os.Remove(d) != nil {
			return
		}
		syncDir(filepath.Dir(d))
	}
}

// editFile merges awaken-lua's hooks into the agent's JSON settings file at
// p with merge, or removes them (o.Uninstall), and writes it back only when
// something changed; warn, when set, adds what the merged settings call
// for. An uninstall that empties a file install made (or found trivial)
// gives back what was there before, or removes the file.
func (o Options) editFile(p, agent string, merge func(Options, *node, *Result) error, warn func(*node, *Result)) (Result, error) {
	res := Result{Path: p}
	target, data, mode, exists, err := read(p)
	if err != nil {
		return res, err
	}
	root := object()
	if len(bytes.TrimSpace(data)) > 0 {
		if root, err = parse(data); err != nil {
			return res, badJSON(p, data, err, agent, o.Uninstall)
		}
		if root.kind != '{' {
			return res, errs.New(errs.ConfigInvalid, "%s holds a JSON %s, not an object; awaken-lua leaves it alone", p, kindName(root))
		}
	}
	if err := merge(o, root, &res); err != nil {
		return res, errs.Wrap(errs.ConfigInvalid, err, "%s", p)
	}
	if warn != nil {
		warn(root, &res)
	}
	if res.Added+res.Updated+res.Removed == 0 {
		return res, nil
	}
	eol := eolOf(data)
	out := encode(root, indentOf(data), eol)
	if len(data) == 0 || bytes.HasSuffix(data, []byte("\n")) {
		out = append(out, eol...)
	}
	if o.Uninstall && len(root.keys) == 0 {
		old, existed := o.before(target, data, merge)
		if old != nil {
			out = old // as it was before install
		} else if !existed && !isLink(p) && o.installWrote(data, merge) {
			if err := deleteFile(target, data, &res); err != nil {
				return res, err
			}
			o.prune(p)
			return res, nil
		}
	}
	return res, writeFile(target, data, out, mode, exists, o.Now(), &res)
}
