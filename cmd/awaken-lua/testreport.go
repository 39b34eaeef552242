package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"

	"github.com/awaken-lua/awaken-lua/luabridge"
)

// testJSON is `test --format json`: one document with every result.
type testJSON struct {
	Passed int             `json:"passed"`
	Failed int             `json:"failed"`
	Tests  []testJSONEntry `json:"tests"`
}

type testJSONEntry struct {
	File       string  `json:"file"`
	Name       string  `json:"name"`
	Line       int     `json:"line,omitempty"`
	Passed     bool    `json:"passed"`
	Message    string  `json:"message,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

func writeTestJSON(w io.Writer, sum luabridge.TestSummary) error {
	doc := testJSON{Passed: sum.Passed, Failed: sum.Failed, Tests: []testJSONEntry{}}
	for _, r := range sum.Results {
		doc.Tests = append(doc.Tests, testJSONEntry{File: r.File, Name: r.Name, Line: r.Pos.Line, Passed: r.Passed,
			Message: r.Message, DurationMS: float64(r.Duration.Microseconds()) / 1000})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a message's "<" and "->" as they are
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// The JUnit XML that CI systems read: a suite per test file.
type (
	junitSuites struct {
		XMLName xml.Name     `xml:"testsuites"`
		Tests   int          `xml:"tests,attr"`
		Fails   int          `xml:"failures,attr"`
		Suites  []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name  string      `xml:"name,attr"`
		Tests int         `xml:"tests,attr"`
		Fails int         `xml:"failures,attr"`
		Time  string      `xml:"time,attr"`
		Cases []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		ClassName string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
)

func writeTestJUnit(w io.Writer, sum luabridge.TestSummary) error {
	doc := junitSuites{Tests: sum.Passed + sum.Failed, Fails: sum.Failed}
	at := map[string]int{}
	var secs []float64
	for _, r := range sum.Results {
		i, ok := at[r.File]
		if !ok {
			i = len(doc.Suites)
			at[r.File] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: r.File})
			secs = append(secs, 0)
		}
		s := &doc.Suites[i]
		c := junitCase{Name: r.Name, ClassName: r.File, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		if !r.Passed {
			first := r.Message
			if j := slices.Index([]byte(first), '\n'); j >= 0 {
				first = first[:j]
			}
			c.Failure = &junitFailure{Message: first, Text: r.Message}
			s.Fails++
		}
		s.Tests++
		secs[i] += r.Duration.Seconds()
		s.Cases = append(s.Cases, c)
	}
	for i := range doc.Suites {
		doc.Suites[i].Time = fmt.Sprintf("%.3f", secs[i])
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
