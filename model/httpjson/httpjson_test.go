package httpjson

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", -1},
		{"0", 0},
		{"2", 2 * time.Second},
		{"100000", maxRetryAfter},
		{"-3", -1},
		{"soon", -1},
		{"Mon, 02 Jan 2006 15:04:05 GMT", 0}, // in the past
	}
	for _, tc := range tests {
		if got := retryAfter(tc.in); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
