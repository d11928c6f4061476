package httpapi

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestMismatchBoundedWork: a body refused for a value of the wrong type is searched for that value at a cost that
// does not grow with the rest of the body: neither a large value of a field the request does not have nor a long
// list of wrong entries makes the search allocate per value (a 10 MB body of either took seconds and gigabytes).
func TestMismatchBoundedWork(t *testing.T) {
	const n = 20000
	list := strings.Repeat("1,", n) + "1"
	for _, tc := range []struct {
		name, body, field, path, got string
	}{
		{"an unknown field's large array", `{"x":[` + list + `],"model":1}`, "model", "model", "a number"},
		{"many wrong entries", `{"frame_images":[` + list + `]}`, "frame_images", "frame_images[0]", "a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			var dst videoReq
			err := decodeJSON(body, nil, &dst)
			if err == nil || !strings.Contains(err.Error(), tc.path+": must be") || !strings.Contains(err.Error(), "not "+tc.got) {
				t.Fatalf("error %v, want one naming %s, not %s", err, tc.path, tc.got)
			}
			allocs := testing.AllocsPerRun(3, func() {
				if _, ok := findMismatch(body, reflect.TypeFor[*videoReq](), tc.field); !ok {
					t.Fatal("no mismatch found")
				}
			})
			if allocs > 200 {
				t.Fatalf("%v allocations to find the mismatch in %d bytes, want at most 200", allocs, len(body))
			}
		})
	}
}

// TestMismatchOrder: the value named is the one encoding/json refused (the first in the body whose field it
// names), else the first wrong one in the body.
func TestMismatchOrder(t *testing.T) {
	for _, tc := range []struct{ body, field, want string }{
		{`{"prompt":1,"model":true}`, "model", "model: must be a string, not a boolean"},
		{`{"prompt":1,"model":true}`, "prompt", "prompt: must be a string, not a number"},
		{`{"prompt":1,"model":true}`, "nothing", "prompt: must be a string, not a number"},
		{`{"frame_images":[{"frame_type":"a"},{"frame_type":2},{"frame_type":3}]}`, "frame_images.frame_type",
			"frame_images[1].frame_type: must be a string, not a number"},
		{`{"frame_images":{"a":1}}`, "frame_images", "frame_images: must be an array, not an object"},
		{`{"duration":1e400}`, "duration", "duration: must be an integer, not 1e400"},
		{`{"seed":"\u0000\ud800"}`, "seed", "seed: must be an integer, not a string"},
	} {
		m, ok := findMismatch([]byte(tc.body), reflect.TypeFor[*videoReq](), tc.field)
		if got := m.path + ": must be " + m.want + ", not " + m.got; !ok || got != tc.want {
			t.Errorf("%s (field %s): %q, %v; want %q", tc.body, tc.field, got, ok, tc.want)
		}
	}
	long := `{"frame_images":[` + strings.Repeat(`{"frame_type":"a"},`, 1000) + `{"frame_type":1}]}`
	m, ok := findMismatch([]byte(long), reflect.TypeFor[*videoReq](), "frame_images.frame_type")
	if !ok || m.path != "frame_images[1000].frame_type" {
		t.Errorf("a wrong entry after 1000 right ones: %+v, %v", m, ok)
	}
	if _, ok := findMismatch(bytes.Repeat([]byte("["), 20), reflect.TypeFor[*videoReq](), ""); ok {
		t.Error("a mismatch in a malformed body")
	}
}
