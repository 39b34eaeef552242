package journal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// maxLine bounds one line, its newline included: a phase record carries a
// model response or a run's starting conversation, which the sidecar
// bounds well below this. The writer never writes a longer line, and a
// reader skips one (see overLong) rather than hold it.
const maxLine = 64 << 20

// Pos is where a record is: file and 1-based line.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Problem is a line Read skipped, and why.
type Problem struct {
	Pos
	Msg string
	// RunID is the run whose records are left out from Pos on (a line
	// lost before them may have been one of its), if that is the problem.
	RunID string
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// Expand turns paths into journal files: a directory stands for its
// journal files, oldest first; a file stands for itself. A file named
// twice (a directory and one of its files, or a path given twice) is
// read once, where it comes first: read again, its runs would count twice
// and its lines look like a gap in its writer's chain.
func Expand(paths []string) ([]string, error) {
	var out []string
	var seen []os.FileInfo
	add := func(file string) error {
		st, err := os.Stat(file)
		if err != nil {
			return errs.Wrap(errs.JournalInvalid, err, "cannot read the journal %s; give a journal directory or file", file)
		}
		for _, s := range seen {
			if os.SameFile(s, st) {
				return nil
			}
		}
		seen = append(seen, st)
		out = append(out, file)
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, errs.Wrap(errs.JournalInvalid, err, "cannot read the journal %s; give a journal directory or file", p)
		}
		if !st.IsDir() {
			if err := add(p); err != nil {
				return nil, err
			}
			continue
		}
		files, err := Files(p)
		if err != nil {
			return nil, errs.Wrap(errs.JournalInvalid, err, "cannot list the journal directory %s", p)
		}
		for _, f := range files {
			if err := add(f); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // aged out since the listing: as if listed after
				}
				return nil, err
			}
		}
	}
	return out, nil
}

// Read calls fn for each record of the files (see Expand), in order. A
// torn last line of a file (a crash while writing) is reported as a
// Problem and skipped, and so are a line that is not a record and a line
// longer than a reader takes (maxLine); every other record stays usable,
// but those of the runs in flight in the writer's files when a line was
// lost (or found missing: from the file's chain, from its start, or with a
// file of the writer), which are left out from there on with a Problem
// each (see gaps).
// A run header of another format is an error (journal_invalid): its
// records cannot be read as this version's.
func Read(paths []string, fn func(Pos, *Record) error) ([]Problem, error) {
	files, err := Expand(paths)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	g := newGaps(true)
	for _, file := range files {
		g.file(file)
		empty := true
		err := eachLine(file, func(pos Pos, line []byte, long *overLong, last bool) error {
			empty = false
			if long != nil {
				problems = append(problems, Problem{Pos: pos, Msg: long.problem(pos, last)})
				g.lost(pos)
				return nil
			}
			var rec Record
			if err := json.Unmarshal(line, &rec); err != nil {
				msg := "not a journal record: " + err.Error()
				if last {
					msg = "the last line is incomplete (the writer stopped while writing it); skipped"
				}
				problems = append(problems, Problem{Pos: pos, Msg: msg})
				g.lost(pos)
				return nil
			}
			if rec.Rec == KindRun && rec.Format != Format {
				return errs.New(errs.JournalInvalid, "%s: the journal has format %d and this awaken-lua reads format %d; use the awaken-lua version that wrote it",
					pos, rec.Format, Format)
			}
			if !g.admit(pos, &rec, &problems) {
				return nil
			}
			return fn(pos, &rec)
		})
		if errors.Is(err, errRemoved) {
			problems = append(problems, removedProblem(file))
			g.lost(Pos{File: file})
			continue
		}
		if err != nil {
			return problems, err
		}
		if empty {
			// A writer makes a file at the record it writes first: one
			// left empty lost its lines (emptied, or the writer stopped
			// before they reached it).
			g.lost(Pos{File: file})
		}
	}
	return problems, nil
}

// errRemoved: a journal file listed was gone when it was to be read (the
// journal's age-out removed it meanwhile, or someone did by hand). Read
// and Verify count it as a file lost, as one removed before the listing
// would be.
var errRemoved = errors.New("journal: the file was removed while the journal was read")

// removedProblem is the Problem of a file removed while the journal was
// read.
func removedProblem(file string) Problem {
	return Problem{Pos: Pos{File: file}, Msg: "the file was removed after the journal was listed and before it was read " +
		"(the journal's age-out, or by hand); its records are not read"}
}

// overLong is a line longer than maxLine. It is not held: it is read
// through, keeping its prev and sum and hashing what its sum covers, so
// that Verify still checks its link and the lines after it are read.
type overLong struct {
	size    int64
	prev    string
	sum     string
	got     string // the hex SHA-256 of what the sum covers
	headErr error  // the line does not start as a sealed line
}

// problem is what Read reports for the line, with what to do.
func (l *overLong) problem(pos Pos, last bool) string {
	what := fmt.Sprintf("a line of %d bytes,", l.size)
	if last {
		what = fmt.Sprintf("the last line is incomplete (the writer stopped while writing it), %d bytes,", l.size)
	}
	return fmt.Sprintf("%s longer than the %d bytes a journal reader takes; its record is skipped and the lines after it are read. "+
		"This version's writer never writes one (it leaves out a record's input instead, listed in \"omitted\"); "+
		"to look at it, take the line out with another tool (sed -n %dp %s)", what, maxLine, pos.Line, pos.File)
}

// eachLine calls fn for each line of a file, or for a line longer than
// maxLine with long set instead; last is set for a final line without its
// newline.
func eachLine(file string, fn func(pos Pos, line []byte, long *overLong, last bool) error) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return errRemoved
	}
	if err != nil {
		return errs.Wrap(errs.JournalInvalid, err, "cannot read the journal file %s", file)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		line, long, err := readLine(r)
		if len(line) > 0 || long != nil {
			torn := errors.Is(err, io.EOF)
			if ferr := fn(Pos{file, n}, line, long, torn); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return errs.Wrap(errs.JournalInvalid, err, "%s:%d: cannot read the line", file, n)
		}
	}
}

// readLine returns a line without its newline; io.EOF with the bytes of a
// last line that has none. A line longer than maxLine is read through and
// returned as long, not as bytes.
func readLine(r *bufio.Reader) (line []byte, long *overLong, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLine {
			return readLong(r, buf, chunk, err)
		}
		if err == nil {
			if buf == nil {
				return bytes.TrimSuffix(chunk, []byte{'\n'}), nil, nil
			}
			return append(buf, chunk[:len(chunk)-1]...), nil, nil
		}
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, nil, err
		}
	}
}

// readLong reads the rest of a line that passed maxLine: head is its
// start (far longer than a prev and a sum), chunk and err what the reader
// returned last.
func readLong(r *bufio.Reader, head, chunk []byte, err error) ([]byte, *overLong, error) {
	l := &overLong{size: int64(len(head))}
	prev, sum, body, herr := parseSeal(head)
	h := sha256.New()
	if herr != nil {
		l.headErr = herr
	} else {
		l.prev, l.sum = prev, sum
		h = sealHash(prev)
		h.Write(body)
	}
	for {
		data := chunk
		if err == nil {
			data = chunk[:len(chunk)-1] // its newline
		}
		l.size += int64(len(data))
		h.Write(data)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		chunk, err = r.ReadSlice('\n')
	}
	l.got = hex.EncodeToString(h.Sum(nil))
	return nil, l, err
}

// Verify checks the files' chains: each line must match its own sum, and
// name the sum of the line before it in its file as prev (none for a
// file's first line). It returns how many lines it checked, and for the
// first broken link an error (journal_tampered) naming its file:line. A
// torn last line is not a broken link; it is returned as a Problem. A line
// longer than a reader takes is checked all the same (it is hashed as it
// is read, not held) and returned as a Problem too, since Read skips it.
func Verify(paths []string) (int, []Problem, error) {
	files, err := Expand(paths)
	if err != nil {
		return 0, nil, err
	}
	lines := 0
	var problems []Problem
	for _, file := range files {
		want := ""
		err := eachLine(file, func(pos Pos, line []byte, long *overLong, last bool) error {
			var prev, sum string
			var err error
			if long != nil {
				prev, sum, err = long.prev, long.sum, long.headErr
				if err == nil && long.got != sum {
					err = errEdited
				}
			} else {
				prev, sum, err = unseal(line)
			}
			if err != nil {
				if last && (long != nil || !json.Valid(line)) {
					problems = append(problems, Problem{Pos: pos, Msg: "the last line is incomplete (the writer stopped while writing it)"})
					return nil
				}
				return errs.New(errs.JournalTampered, "%s: %v", pos, err)
			}
			switch {
			case want == "" && prev != "":
				return errs.New(errs.JournalTampered, "%s: the first line of the file names a previous line: lines before it were removed", pos)
			case want != "" && prev != want:
				return errs.New(errs.JournalTampered, "%s: prev does not match the line before it: lines were removed, added or reordered before this one", pos)
			}
			if long != nil {
				problems = append(problems, Problem{Pos: pos, Msg: fmt.Sprintf("a line of %d bytes, longer than the %d bytes a journal reader takes: its link holds, but replay and export skip its record",
					long.size, maxLine)})
			}
			want = sum
			lines++
			return nil
		})
		if errors.Is(err, errRemoved) {
			problems = append(problems, removedProblem(file))
			continue
		}
		if err != nil {
			return lines, problems, err
		}
	}
	return lines, problems, nil
}
