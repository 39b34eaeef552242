package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// maxLine bounds one record: a phase record carries a model response or a
// run's starting conversation, which the sidecar bounds well below this.
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
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// Expand turns paths into journal files: a directory stands for its
// journal files, oldest first; a file stands for itself.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, errs.Wrap(errs.JournalInvalid, err, "cannot read the journal %s; give a journal directory or file", p)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := Files(p)
		if err != nil {
			return nil, errs.Wrap(errs.JournalInvalid, err, "cannot list the journal directory %s", p)
		}
		out = append(out, files...)
	}
	return out, nil
}

// Read calls fn for each record of the files (see Expand), in order. A
// torn last line of a file (a crash while writing) is reported as a
// Problem and skipped, and so is a line that is not a record; every other
// record stays usable. A run header of another format is an error
// (journal_invalid): its records cannot be read as this version's.
func Read(paths []string, fn func(Pos, *Record) error) ([]Problem, error) {
	files, err := Expand(paths)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	for _, file := range files {
		err := eachLine(file, func(pos Pos, line []byte, last bool) error {
			var rec Record
			if err := json.Unmarshal(line, &rec); err != nil {
				msg := "not a journal record: " + err.Error()
				if last {
					msg = "the last line is incomplete (the writer stopped while writing it); skipped"
				}
				problems = append(problems, Problem{pos, msg})
				return nil
			}
			if rec.Rec == KindRun && rec.Format != Format {
				return errs.New(errs.JournalInvalid, "%s: the journal has format %d and this awaken-lua reads format %d; use the awaken-lua version that wrote it",
					pos, rec.Format, Format)
			}
			return fn(pos, &rec)
		})
		if err != nil {
			return problems, err
		}
	}
	return problems, nil
}

// eachLine calls fn for each line of a file; last is set for a final line
// without its newline.
func eachLine(file string, fn func(pos Pos, line []byte, last bool) error) error {
	f, err := os.Open(file)
	if err != nil {
		return errs.Wrap(errs.JournalInvalid, err, "cannot read the journal file %s", file)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		line, err := readLine(r)
		if len(line) > 0 {
			torn := errors.Is(err, io.EOF)
			if ferr := fn(Pos{file, n}, line, torn); ferr != nil {
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
// last line that has none.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		if err == nil {
			if buf == nil {
				return bytes.TrimSuffix(chunk, []byte{'\n'}), nil
			}
			return append(buf, chunk[:len(chunk)-1]...), nil
		}
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// Verify checks the files' chains: each line must match its own sum, and
// name the sum of the line before it in its file as prev (none for a
// file's first line). It returns how many lines it checked, and for the
// first broken link an error (journal_tampered) naming its file:line. A
// torn last line is not a broken link; it is returned as a Problem.
func Verify(paths []string) (int, []Problem, error) {
	files, err := Expand(paths)
	if err != nil {
		return 0, nil, err
	}
	lines := 0
	var problems []Problem
	for _, file := range files {
		want := ""
		err := eachLine(file, func(pos Pos, line []byte, last bool) error {
			prev, sum, err := unseal(line)
			if err != nil {
				if last && !json.Valid(line) {
					problems = append(problems, Problem{pos, "the last line is incomplete (the writer stopped while writing it)"})
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
			want = sum
			lines++
			return nil
		})
		if err != nil {
			return lines, problems, err
		}
	}
	return lines, problems, nil
}
