package wire

import (
	"encoding/json"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// TestSpooledRecord: what the recorder spools is a record to the spool's reading on after damage; other bytes
// that pass a frame's checksum are not.
func TestSpooledRecord(t *testing.T) {
	t.Parallel()
	e := generation.Entry{Record: generation.Record{ID: "gen-1"}}
	asJSON, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	binary := e.AppendBinary([]byte{2})
	for _, tt := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"probe", []byte{0}, true},
		{"entry as JSON", append([]byte{1}, asJSON...), true},
		{"entry as binary", binary, true},
		{"nothing", nil, false},
		{"probe and more", []byte{0, 1}, false},
		{"JSON cut short", append([]byte{1}, asJSON[:len(asJSON)-1]...), false},
		{"binary cut short", binary[:len(binary)-1], false},
		{"unknown version", append([]byte{3}, binary[1:]...), false},
		{"text", []byte("record-0001"), false},
	} {
		if got := spooledRecord(tt.p); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
