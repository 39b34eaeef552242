package run

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// TestCallLogMatchesAMap builds call logs in bulk and by single updates
// (replacing records, appending, leaving holes, growing the trie) and
// checks each version against a plain map: its value, its encoded size,
// and that older versions are unchanged.
func TestCallLogMatchesAMap(t *testing.T) {
	entry := func(i, v int) logEntry {
		id := fmt.Sprintf("c%d", i)
		rec := &logRecord{id: id, name: "t", args: map[string]any{}, status: CallStatus(fmt.Sprint("s", v)), limit: 1 << 30}
		return logEntry{id: id, rec: rec, size: int32(value.StringSize(id) + 1 + encodedLen(rec.value(), 1<<30))}
	}
	rng := uint64(7)
	next := func(m int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(m))
	}
	for _, n := range []int{0, 1, 4, 5, 17, 64, 65, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			log := newCallLog(nil, 0, n, func(i int) logEntry { return entry(i, 0) })
			want := map[string]any{}
			for i := range n {
				want[fmt.Sprintf("c%d", i)] = entry(i, 0).rec.value()
			}
			type version struct {
				log  *callLog
				want map[string]any
			}
			var history []version
			for round := range 200 {
				i := next(n + 6) // past the end: appends, holes, a deeper trie
				e := entry(i, round)
				log = log.with(i, e)
				cp := map[string]any{}
				for k, v := range want {
					cp[k] = v
				}
				cp[e.id] = e.rec.value()
				want = cp
				history = append(history, version{log, want})
			}
			for h, v := range history {
				got := v.log.Value()
				if !reflect.DeepEqual(got, v.want) {
					t.Fatalf("version %d: %d records %.200v, want %d %.200v", h, len(got.(map[string]any)), got, len(v.want), v.want)
				}
				b, err := value.AppendJSON(nil, got)
				if err != nil {
					t.Fatal(err)
				}
				if v.log.EncodedSize() != len(b) {
					t.Fatalf("version %d: size %d, want %d", h, v.log.EncodedSize(), len(b))
				}
			}
		})
	}
}
