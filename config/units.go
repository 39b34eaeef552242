package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("100ms",
// "10s", "1m"), which reads better in a config file than nanoseconds.
type Duration time.Duration

// durationUnits are tried largest first, so String picks the shortest exact
// form.
var durationUnits = []struct {
	d    time.Duration
	name string
}{
	{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
	{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
}

// String renders the duration in the largest unit that holds it exactly
// ("100ms", "90s", "1m", "1500ms"), which time.ParseDuration reads back to
// the same value; time.Duration's own "1m0s" is exact too, but noisier.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	for _, u := range durationUnits {
		if time.Duration(d)%u.d == 0 {
			return strconv.FormatInt(int64(time.Duration(d)/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns" // unreachable: ns divides all
}

// UnmarshalText parses a Go duration string such as "100ms" or "1m30s".
func (d *Duration) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	v, err := time.ParseDuration(text)
	if err != nil {
		hint := ""
		switch lower := strings.ToLower(text); {
		case strings.ContainsAny(lower, "dwy"):
			hint = "; there is no unit of days: write hours, such as \"720h\" for 30 days"
		case strings.ContainsAny(text, " \t"):
			hint = "; write the unit right after the number, without a space"
		}
		return fmt.Errorf("invalid duration %q; write a number with a unit (ns, us, ms, s, m or h), such as \"100ms\", \"10s\" or \"1m\"%s", b, hint)
	}
	*d = Duration(v)
	return nil
}

// MarshalText renders the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Size is a number of bytes written as a plain integer or with a unit:
// "1048576", "512KiB", "1MiB", "1GiB" (binary), or "1kB", "1MB", "1GB"
// (decimal). Units are case-insensitive.
type Size int64

// Binary units of Size.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
)

var sizeUnits = map[string]Size{
	"": 1, "b": 1,
	"kib": KiB, "mib": MiB, "gib": GiB,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
}

// String renders the size in the largest binary unit that holds it exactly
// ("1MiB", "512KiB"), else as a plain number of bytes, so UnmarshalText reads
// it back to the same value.
func (s Size) String() string {
	for _, u := range []struct {
		n    Size
		name string
	}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if s != 0 && s%u.n == 0 {
			return strconv.FormatInt(int64(s/u.n), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// UnmarshalText parses a whole number of bytes with an optional unit.
func (s *Size) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	i := 0
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(text[i:]))]
	n, err := strconv.ParseInt(text[:i], 10, 64)
	if !ok || err != nil || i == 0 {
		return fmt.Errorf("invalid size %q; write a whole number of bytes, optionally with a unit (KiB, MiB, GiB, kB, MB, GB), such as \"1MiB\"", b)
	}
	if n > math.MaxInt64/int64(unit) {
		return fmt.Errorf("size %q is too large", b)
	}
	*s = Size(n) * unit
	return nil
}

// MarshalText renders the size as String does.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
