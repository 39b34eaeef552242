package run

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/model"
)

// The names of an offered list are shared while the list is the same, and
// made again when it is another list, or the same one changed in place.
func TestOfferNames(t *testing.T) {
	var c offerCache
	tools := []model.ToolSpec{{Name: "Bash"}, {Name: "Read"}}
	a := c.names(tools)
	b := c.names(tools)
	if !slices.Equal(a, []string{"Bash", "Read"}) || unsafe.SliceData(a) != unsafe.SliceData(b) {
		t.Fatalf("the same list: %v %v (shared: %v)", a, b, unsafe.SliceData(a) == unsafe.SliceData(b))
	}
	tools[1].Name = "Write"
	if got := c.names(tools); !slices.Equal(got, []string{"Bash", "Write"}) {
		t.Fatalf("the list changed in place: %v", got)
	}
	if got := c.names(tools[:1]); !slices.Equal(got, []string{"Bash"}) {
		t.Fatalf("a shorter list on the same array: %v", got)
	}
	other := []model.ToolSpec{{Name: "Edit"}}
	if got := c.names(other); !slices.Equal(got, []string{"Edit"}) {
		t.Fatalf("another list: %v", got)
	}
	if got := c.names(nil); got == nil || len(got) != 0 {
		t.Fatalf("no tools: %#v, want an empty list (none offered), not nil (every tool)", got)
	}
}
