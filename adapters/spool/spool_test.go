package spool_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/spool"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, cfg spool.Config) *spool.Spool {
	t.Helper()
	s, err := spool.Open(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendN(t *testing.T, s *spool.Spool, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := s.Append(fmt.Appendf(nil, "record-%04d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll drains the spool, releasing as it goes, and returns the payloads in order.
func readAll(t *testing.T, s *spool.Spool, batch int) []string {
	t.Helper()
	var out []string
	for {
		recs, release, err := s.Read(batch, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return out
		}
		for _, r := range recs {
			out = append(out, string(r.Payload))
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAppendReadReleaseAcrossSegments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 100})
	appendN(t, s, 0, 50)
	if st := s.Stats(); st.Records != 50 || st.Bytes != 50*(8+11) {
		t.Fatalf("stats %+v", st)
	}
	if len(segments(t, dir)) < 5 {
		t.Fatalf("no rotation: %v", segments(t, dir))
	}
	got := readAll(t, s, 7)
	if len(got) != 50 || got[0] != "record-0000" || got[49] != "record-0049" {
		t.Fatalf("read %d records: %v", len(got), got)
	}
	if st := s.Stats(); st.Records != 0 || st.Bytes != 0 {
		t.Fatalf("after release: %+v", st)
	}
	if n := len(segments(t, dir)); n != 1 {
		t.Fatalf("released segments not deleted: %d left", n)
	}
	appendN(t, s, 50, 3) // appends after a full drain are read too
	if got := readAll(t, s, 10); len(got) != 3 || got[0] != "record-0050" {
		t.Fatalf("read after drain: %v", got)
	}
}

// TestDrainedSpaceIsFreed: what the database has taken leaves the disk as it is released, a segment at a time, so
// the spool's files never hold much more than the records not yet drained: a disk a few megabytes above the
// spool's bound never fills with records already drained. With the default segment (a quarter of a bound of 256
// KiB), drained 1 KiB records leave at most two segments on disk, whatever passed through.
func TestDrainedSpaceIsFreed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 256 << 10})
	record := make([]byte, 1<<10)
	var most int64
	for range 100 {
		for range 40 {
			if err := s.Append(record, nil); err != nil {
				t.Fatal(err)
			}
		}
		recs, release, err := s.Read(1000, 1<<30)
		if err != nil || len(recs) != 40 {
			t.Fatal(len(recs), err)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		var onDisk int64
		for _, f := range segments(t, dir) {
			info, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			onDisk += info.Size()
		}
		most = max(most, onDisk)
	}
	// 4 MiB went through; two 64 KiB segments and a record past the second at most stay.
	if limit := int64(2*(64<<10) + len(record) + 8); most > limit {
		t.Fatalf("the spool's files held up to %d bytes with nothing waiting, want at most %d", most, limit)
	}
}

// TestUnreleasedRecordsReplay: what was read but not released before the process stopped is read again.
func TestUnreleasedRecordsReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 64})
	appendN(t, s, 0, 10)
	recs, release, err := s.Read(4, 1<<20)
	if err != nil || len(recs) != 4 {
		t.Fatal(len(recs), err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if recs, _, _ := s.Read(3, 1<<20); len(recs) != 3 { // read, never released: a crash before the commit
		t.Fatal(len(recs))
	}
	s.Close()
	s2 := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 64})
	got := readAll(t, s2, 100)
	// whole segments are released: records 0-3 may come again only if they share a segment with record 4
	if len(got) < 6 || got[len(got)-1] != "record-0009" || got[len(got)-6] != "record-0004" {
		t.Fatalf("replay: %v", got)
	}
}

// TestTornTailIsCut: a crash in the middle of a write leaves a partial frame, and a machine's crash may leave the
// file's end zeroed (a zero length and the CRC of nothing, 0, read as a frame); reopening cuts it and keeps the
// records before it.
func TestTornTailIsCut(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		damage func(b []byte) []byte
		kept   int
	}{
		{"partial frame", func(b []byte) []byte { return b[:len(b)-5] }, 2},
		{"bad checksum", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, 2},
		{"zeroed tail", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, 3},
		{"last record zeroed", func(b []byte) []byte { clear(b[len(b)-19:]); return b }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
			appendN(t, s, 0, 3)
			s.Close()
			seg := segments(t, dir)[0]
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg, tt.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			s2 := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
			if st := s2.Stats(); st.Records != int64(tt.kept) {
				t.Fatalf("stats after cut: %+v", st)
			}
			appendN(t, s2, 3, 1)
			if got := readAll(t, s2, 10); len(got) != tt.kept+1 || got[tt.kept] != "record-0003" {
				t.Fatalf("after cut: %v", got)
			}
		})
	}
}

// frameOf is payload framed as the spool frames it.
func frameOf(payload string) string {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum([]byte(payload), crc32.MakeTable(crc32.Castagnoli)))
	return string(b) + payload
}

// TestDamageInASegment: damage in the middle of a segment (a disk's) is taken out, kept beside the segment
// (unless all zero), and counted in Stats().Quarantined by the records it held from the cursor on; the records
// after it are read, also after a second restart. Records 0-4 of 11 bytes (frames of 19), one segment.
func TestDamageInASegment(t *testing.T) {
	t.Parallel()
	// at is where record i's frame starts
	at := func(i int) int { return 19 * i }
	tests := []struct {
		name     string
		payloads []string // record-0000 to record-0004 when nil
		released int      // records read and released before the damage
		damage   func(b []byte) []byte
		want     []string
		lost     int64
		kept     func(b []byte) []string // the damaged files' bytes, given the damaged segment's
	}{
		{name: "payload corrupt", damage: func(b []byte) []byte { b[at(2)+10] ^= 1; return b },
			want: []string{"record-0000", "record-0001", "record-0003", "record-0004"}, lost: 1,
			kept: func(b []byte) []string { return []string{string(b[at(2):at(3)])} }},
		{name: "length corrupt", damage: func(b []byte) []byte { b[at(2)+1] = 0xff; return b },
			want: []string{"record-0000", "record-0001", "record-0003", "record-0004"}, lost: 1,
			kept: func(b []byte) []string { return []string{string(b[at(2):at(3)])} }},
		{name: "first record corrupt", damage: func(b []byte) []byte { b[5] ^= 1; return b },
			want: records(1, 4), lost: 1, kept: func(b []byte) []string { return []string{string(b[:at(1)])} }},
		{name: "record zeroed", damage: func(b []byte) []byte { clear(b[at(1):at(2)]); return b },
			want: []string{"record-0000", "record-0002", "record-0003", "record-0004"}},
		{name: "records garbled", damage: func(b []byte) []byte { copy(b[at(1)+1:at(4)-2], bytes.Repeat([]byte{0x5a}, 60)); return b },
			want: []string{"record-0000", "record-0004"}, lost: 3, // as many as frames of the others' length fill
			kept: func(b []byte) []string { return []string{string(b[at(1):at(4)])} }},
		{name: "two damages", damage: func(b []byte) []byte { b[at(1)+9] ^= 1; b[at(3)+4] ^= 1; return b },
			want: []string{"record-0000", "record-0002", "record-0004"}, lost: 2,
			kept: func(b []byte) []string { return []string{string(b[at(1):at(2)]), string(b[at(3):at(4)])} }},
		{name: "damage and a torn tail", damage: func(b []byte) []byte { b[at(1)+9] ^= 1; return b[:len(b)-3] },
			want: []string{"record-0000", "record-0002", "record-0003"}, lost: 1,
			kept: func(b []byte) []string { return []string{string(b[at(1):at(2)])} }},
		{name: "damage before the cursor", released: 3, damage: func(b []byte) []byte { b[at(1)+9] ^= 1; return b },
			want: records(3, 4), kept: func(b []byte) []string { return []string{string(b[at(1):at(2)])} }},
		{name: "damage at the cursor", released: 2, damage: func(b []byte) []byte { b[at(2)+9] ^= 1; return b },
			want: records(3, 4), lost: 1, kept: func(b []byte) []string { return []string{string(b[at(2):at(3)])} }},
		{name: "a record longer than a read after the damage",
			payloads: []string{"record-0000", "record-0001" + strings.Repeat("x", 300<<10), "record-0002"},
			damage:   func(b []byte) []byte { b[at(0)+9] ^= 1; return b },
			want:     []string{"record-0001" + strings.Repeat("x", 300<<10), "record-0002"}, lost: 1,
			kept: func(b []byte) []string { return []string{string(b[:at(1)])} }},
		{name: "a frame inside the damage is no record",
			payloads: []string{"record-0000", "record-0001" + frameOf("junk"), "record-0002"},
			damage:   func(b []byte) []byte { b[at(1)+1] = 0xff; return b }, // record 1's length
			want:     []string{"record-0000", "record-0002"}, lost: 1,
			kept: func(b []byte) []string { return []string{string(b[at(1) : at(1)+8+11+8+4])} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
			cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, Now: func() time.Time { return now },
				Valid: func(p []byte) bool { return bytes.HasPrefix(p, []byte("record-")) }}
			s := open(t, cfg)
			payloads := tt.payloads
			if payloads == nil {
				payloads = records(0, 4)
			}
			for _, p := range payloads {
				if err := s.Append([]byte(p), nil); err != nil {
					t.Fatal(err)
				}
			}
			if tt.released > 0 {
				take(t, s, tt.released, true)
			}
			s.Close()
			seg := segments(t, cfg.Dir)[0]
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			b = tt.damage(b)
			var kept []string
			if tt.kept != nil {
				kept = tt.kept(b)
			}
			if err := os.WriteFile(seg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s = open(t, cfg)
			if st := s.Stats(); st.Records != int64(len(tt.want)) || st.Quarantined != tt.lost {
				t.Errorf("stats %+v, want %d records and %d lost", st, len(tt.want), tt.lost)
			}
			got := damaged(t, seg)
			slices.Sort(got)
			if slices.Sort(kept); !slices.Equal(got, kept) {
				t.Errorf("damage kept as %q, want %q", got, kept)
			}
			s.Close()
			s = open(t, cfg) // the damage is out for good: nothing more to take out
			if st := s.Stats(); st.Records != int64(len(tt.want)) || st.Quarantined != 0 {
				t.Errorf("stats after a second restart %+v, want %d records and none lost", st, len(tt.want))
			}
			if got := readAll(t, s, 2); !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
			s.Close()
			if s = open(t, cfg); s.Stats().Records != 0 { // the cursor is where the release left it
				t.Errorf("after the release and a restart: %+v", s.Stats())
			}
		})
	}
}

// TestRestartsLeaveNoEmptySegments: each Open starts a segment to append to; restarts without traffic, drained or
// while records wait (the database away), leave no empty segment behind, and the records waiting are all read.
func TestRestartsLeaveNoEmptySegments(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		drained bool
		want    []string
	}{
		{name: "drained", drained: true},
		{name: "records waiting", want: records(0, 2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20}
			s := open(t, cfg)
			appendN(t, s, 0, 3)
			if tt.drained {
				readAll(t, s, 10)
			}
			for range 5 {
				s.Close()
				s = open(t, cfg)
			}
			if n, want := len(segments(t, cfg.Dir)), 1+len(tt.want)/3; n != want {
				t.Errorf("%d segments after 5 restarts, want %d", n, want)
			}
			if got := readAll(t, s, 10); !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCloseDuringReadAndAppend: Close may come while Reads, releases and Appends run (go test -race): those
// under way finish first, later ones get ErrClosed; a release after Close changes nothing on disk, so what it
// would have released is read again after a restart.
func TestCloseDuringReadAndAppend(t *testing.T) {
	t.Parallel()
	cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, SegmentBytes: 64, MemoryBytes: 1} // read from the files
	s := open(t, cfg)
	appendN(t, s, 0, 200)
	closed := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				recs, release, err := s.Read(3, 1<<20)
				if err == nil && len(recs) > 0 {
					err = release()
				}
				switch {
				case errors.Is(err, spool.ErrClosed):
					return
				case err != nil:
					t.Error(err)
					return
				}
				select {
				case <-closed:
					if len(recs) == 0 {
						t.Error("Read after Close: no ErrClosed")
						return
					}
				default:
				}
			}
		})
	}
	wg.Go(func() {
		for i := 200; ; i++ {
			if err := s.Append(fmt.Appendf(nil, "record-%04d", i), nil); err != nil {
				if !errors.Is(err, spool.ErrClosed) {
					t.Error(err)
				}
				return
			}
		}
	})
	s.Close()
	close(closed)
	wg.Wait()

	s = open(t, cfg)
	appendN(t, s, 0, 2)
	recs, release, err := s.Read(10, 1<<20)
	if err != nil || len(recs) == 0 {
		t.Fatalf("read %d records: %v", len(recs), err)
	}
	first := string(recs[0].Payload)
	s.Close()
	if err := release(); !errors.Is(err, spool.ErrClosed) {
		t.Fatalf("release after Close: %v", err)
	}
	if got := readAll(t, open(t, cfg), 10); len(got) == 0 || got[0] != first {
		t.Fatalf("after the restart read %v, want %s first: a release after Close took effect", got, first)
	}
}

// TestAppendRefusesNothing: an empty record is refused, as its frame would read as zeroed bytes and be cut.
func TestAppendRefusesNothing(t *testing.T) {
	s := open(t, spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20})
	if err := s.Append(nil, nil); !errors.Is(err, spool.ErrEmpty) {
		t.Fatalf("append of nothing: %v", err)
	}
}

func TestFullAndQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 100, Sync: true})
	appendN(t, s, 0, 5)
	if s.Stats().Full() {
		t.Fatal("full too early")
	}
	appendN(t, s, 5, 1) // 6 x 19 bytes >= 100
	if !s.Stats().Full() {
		t.Fatalf("not full: %+v", s.Stats())
	}
	if err := s.Quarantine([]byte("bad")); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Quarantined != 1 {
		t.Fatal("quarantine not counted")
	}
	readAll(t, s, 100)
	if s.Stats().Full() {
		t.Fatal("still full after draining")
	}
}

func TestOneProcessPerDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open(t, spool.Config{Dir: dir, MaxBytes: 100})
	if _, err := spool.Open(spool.Config{Dir: dir, MaxBytes: 100}, quiet()); err == nil {
		t.Fatal("a second spool opened the same directory")
	}
}

// TestAppendToAFullDisk: a segment whose writes fail (/dev/full: ENOSPC) makes Append return the error and count
// nothing; what was appended before stays readable.
func TestAppendToAFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, SegmentBytes: 64})
	if err := os.Symlink("/dev/full", filepath.Join(dir, "0000000000000002.wal")); err != nil { // the next segment
		t.Fatal(err)
	}
	appended := 0
	for ; appended < 100; appended++ {
		err := s.Append(fmt.Appendf(nil, "record-%04d", appended), nil)
		if err == nil {
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append %d: %v", appended, err)
		}
		break
	}
	if st := s.Stats(); st.Records != int64(appended) || appended == 0 || appended == 100 {
		t.Fatalf("%d appended, spool counts %+v", appended, st)
	}
	if got := readAll(t, s, 100); len(got) != appended || got[appended-1] != fmt.Sprintf("record-%04d", appended-1) {
		t.Fatalf("read back %q after %d appends", got, appended)
	}
}

// TestReadFromMemoryAndFiles: the reader gets each record in order, with the value appended with it while the
// spool keeps it in memory, and from the files (no value) once a backlog outgrew MemoryBytes.
func TestReadFromMemoryAndFiles(t *testing.T) {
	t.Parallel()
	s := open(t, spool.Config{Dir: t.TempDir(), SegmentBytes: 64, MemoryBytes: 40}) // 3 records of 11 bytes fit
	next, fromMemory, fromFiles := 0, 0, 0
	read := func(batch int) {
		recs, release, err := s.Read(batch, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if string(r.Payload) != fmt.Sprintf("record-%04d", next) {
				t.Fatalf("read %q, want record %d", r.Payload, next)
			}
			switch r.Value {
			case nil:
				fromFiles++
			case next:
				fromMemory++
			default:
				t.Fatalf("record %d read with value %v", next, r.Value)
			}
			next++
		}
		if len(recs) > 0 {
			if err := release(); err != nil {
				t.Fatal(err)
			}
		}
	}
	add := func(n int) {
		for range n {
			i := int(s.Stats().Records) + next
			if err := s.Append(fmt.Appendf(nil, "record-%04d", i), i); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(2)
	read(1)
	add(9) // outgrows memory: the reader goes on from the files, then from memory
	read(4)
	read(100)
	add(3)
	read(2)
	read(2)
	if next != 14 || fromMemory == 0 || fromFiles == 0 {
		t.Fatalf("%d records read, %d from memory, %d from the files", next, fromMemory, fromFiles)
	}
	if recs, _, _ := s.Read(10, 1<<20); len(recs) != 0 {
		t.Fatalf("%d records after a full drain", len(recs))
	}
}

// TestReadsAheadReleaseInOrder: each Read takes the records after the previous one's, released or not; a release
// takes effect once every earlier read is released, so what a crash leaves unreleased is read again.
func TestReadsAheadReleaseInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 64})
	appendN(t, s, 0, 10)
	first, releaseFirst, err := s.Read(4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	second, releaseSecond, err := s.Read(4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 4 || len(second) != 4 || string(first[3].Payload) != "record-0003" || string(second[0].Payload) != "record-0004" {
		t.Fatalf("reads %d and %d records: %q, %q", len(first), len(second), first, second)
	}
	if err := releaseSecond(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Records != 10 {
		t.Fatalf("a later read's release took effect before the earlier one's: %+v", st)
	}
	s.Close() // a crash before the first read was written
	s = open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 64})
	first, releaseFirst, err = s.Read(4, 1<<20)
	if err != nil || len(first) != 4 || string(first[0].Payload) != "record-0000" {
		t.Fatalf("replay: %q, %v", first, err)
	}
	second, releaseSecond, err = s.Read(4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseSecond(); err != nil {
		t.Fatal(err)
	}
	if err := releaseFirst(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Records != 2 || st.Bytes != 2*(8+11) {
		t.Fatalf("after both releases: %+v", st)
	}
	if got := readAll(t, s, 10); len(got) != 2 || got[0] != "record-0008" {
		t.Fatalf("the rest: %v", got)
	}
}

// TestRecordsLargerThanARead: records longer than one read of a segment come back whole, from the files and
// after a restart, between small ones.
func TestRecordsLargerThanARead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 30, MemoryBytes: 1}) // every record read from the files
	big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 300<<10+i) }
	want := [][]byte{[]byte("small-0"), big(1), big(2), []byte("small-3"), big(4)}
	for _, p := range want {
		if err := s.Append(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *spool.Spool) {
		t.Helper()
		var got [][]byte
		for { // unreleased: read again after the restart
			recs, _, err := s.Read(2, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				got = append(got, r.Payload)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d of %d records", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("record %d: %d bytes, want %d", i, len(got[i]), len(want[i]))
			}
		}
	}
	check(s)
	s.Close()
	check(open(t, spool.Config{Dir: dir, MaxBytes: 1 << 30}))
}

// damaged returns the bytes of the files the spool kept beside the file at path because it could not read them
// (path.damaged-*): Requeue, the quarantine's; Open, a segment's damage.
func damaged(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".damaged-*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestRequeue: quarantined records go back into the spool, after those waiting, and the quarantine goes; a
// torn record ending the quarantine (a crash while it was written) is not read: the records before it move and
// the file is kept whole as quarantine.log.damaged-*, which the error names; a requeue with no quarantine moves
// nothing; a corrupt quarantine moves nothing and is kept whole the same way.
func TestRequeue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
	appendN(t, s, 0, 2)
	for _, p := range []string{"bad-1", "bad-2"} {
		if err := s.Quarantine([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	q := filepath.Join(dir, "quarantine.log")
	f, err := os.OpenFile(q, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{200, 0, 0, 0, 1}); err != nil { // a frame cut short
		t.Fatal(err)
	}
	f.Close()
	s = open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
	if n, err := s.Requeue(); n != 2 || err == nil || !strings.Contains(err.Error(), "quarantine.log.damaged-") {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the quarantine is still there: %v", err)
	}
	if d := damaged(t, q); len(d) != 1 || !strings.HasSuffix(d[0], "\xc8\x00\x00\x00\x01") {
		t.Fatalf("the torn quarantine is not kept whole: %q", d)
	}
	if n, err := s.Requeue(); n != 0 || err != nil {
		t.Fatalf("requeue again: %d, %v", n, err)
	}
	s.Close()
	s = open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
	if got := readAll(t, s, 10); fmt.Sprint(got) != "[record-0000 record-0001 bad-1 bad-2]" {
		t.Fatalf("after a requeue and a restart: %v", got)
	}

	if err := s.Quarantine([]byte("bad-3")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(q)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(q, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Requeue(); n != 0 || err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a corrupt quarantine: %d, %v", n, err)
	}
	if st := s.Stats(); st.Records != 0 {
		t.Fatalf("a corrupt quarantine moved records: %+v", st)
	}
	if d := damaged(t, q); len(d) != 2 || !slices.Contains(d, string(b)) {
		t.Fatalf("a corrupt quarantine must be kept whole: %q", d)
	}
}

// TestRequeueAfterATornQuarantine: a crash in the middle of Quarantine leaves a torn frame, and the quarantines
// after the restart are appended after it (the torn frame's length runs over them). Requeue reads on after the
// tear, moves what comes before and after it, and keeps the file whole, naming it: nothing quarantined is lost.
func TestRequeueAfterATornQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
	if err := s.Quarantine([]byte("bad-1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	q := filepath.Join(dir, "quarantine.log")
	f, err := os.OpenFile(q, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// the crash: a frame of 4000 bytes whose header and first bytes reached the file
	torn := append([]byte{0xa0, 0x0f, 0, 0, 1, 2, 3, 4}, bytes.Repeat([]byte("x"), 100)...)
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20}) // the restart
	if err := s.Quarantine([]byte("bad-2")); err != nil {
		t.Fatal(err)
	}
	n, err := s.Requeue()
	if n != 2 || err == nil || !strings.Contains(err.Error(), "quarantine.log.damaged-") {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	if got := readAll(t, s, 10); fmt.Sprint(got) != "[bad-1 bad-2]" {
		t.Fatalf("requeued: %v (\"bad-2\", quarantined after the torn frame, must be moved too)", got)
	}
	if d := damaged(t, q); len(d) != 1 || !strings.Contains(d[0], string(torn)) || !strings.HasSuffix(d[0], "bad-2") {
		t.Fatalf("the damaged quarantine is not kept whole: %q", d)
	}
}

// TestPassOverAfterATornQuarantine: a record quarantined after a torn frame in quarantine.log (a crash while
// quarantining, then a restart) is held by the quarantine: a kill -9 before its release does not make the next
// start read it again.
func TestPassOverAfterATornQuarantine(t *testing.T) {
	t.Parallel()
	cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20}
	s := open(t, cfg)
	if err := s.Quarantine([]byte("bad-1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, err := os.OpenFile(filepath.Join(cfg.Dir, "quarantine.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0xa0, 0x0f, 0, 0, 1, 2, 3, 4, 'x'}); err != nil { // torn: 4000 bytes announced
		t.Fatal(err)
	}
	f.Close()
	s = open(t, cfg)
	appendN(t, s, 0, 3)
	take(t, s, 3, false)
	if err := s.Quarantine([]byte("record-0001")); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = crash(t, cfg.Dir)
	s = open(t, cfg)
	if got := readAll(t, s, 10); fmt.Sprint(got) != "[record-0000 record-0002]" {
		t.Fatalf("after the restart: %v, want record-0001 passed over", got)
	}
}

// TestQuarantineCutsAFailedWrite: a quarantine whose write fails part way (here at the file size limit,
// RLIMIT_FSIZE: some bytes written, then EFBIG) is cut back, so the quarantines after it follow whole frames and
// Requeue moves them all. Not parallel: the limit is the process's.
func TestQuarantineCutsAFailedWrite(t *testing.T) {
	dir := t.TempDir()
	s := open(t, spool.Config{Dir: dir, MaxBytes: 1 << 20})
	if err := s.Quarantine([]byte("bad-1")); err != nil {
		t.Fatal(err)
	}
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ) // or the process is killed: the write then fails with EFBIG
	defer signal.Reset(syscall.SIGXFSZ)
	low := limit
	low.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low); err != nil {
		t.Fatal(err)
	}
	err := s.Quarantine(bytes.Repeat([]byte("x"), 8192))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("a quarantine over the file size limit: %v", err)
	}
	if err := s.Quarantine([]byte("bad-2")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Requeue(); n != 2 || err != nil {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	if got := readAll(t, s, 10); fmt.Sprint(got) != "[bad-1 bad-2]" {
		t.Fatalf("requeued: %v", got)
	}
}

// crash copies the spool's files as they are while it is open: what a kill -9 of its process leaves behind (the
// page cache). It returns the copy's directory.
func crash(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	after := t.TempDir()
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(after, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return after
}

// take reads n records, and releases them when release.
func take(t *testing.T, s *spool.Spool, n int, release bool) {
	t.Helper()
	recs, rel, err := s.Read(n, 1<<20)
	if err != nil || len(recs) != n {
		t.Fatalf("read %d of %d records: %v", len(recs), n, err)
	}
	if release {
		if err := rel(); err != nil {
			t.Fatal(err)
		}
	}
}

// writeCursor writes a well-formed release cursor: segment, offset and their CRC-32C.
func writeCursor(t *testing.T, dir string, seg uint64, off int64) {
	t.Helper()
	b := binary.LittleEndian.AppendUint64(nil, seg)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(filepath.Join(dir, "cursor"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// records returns the payloads record-<from> to record-<to> (inclusive).
func records(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("record-%04d", i))
	}
	return out
}

// TestCursor: a restart reads the records from the release cursor on, whatever a kill -9 left. 20 records of
// 19 bytes, four a segment (segment 1 holds records 0-3, 2 holds 4-7, ...); a second after Open, records 0-5
// released (the cursor written), then 6-9 (segments 1 and 2 deleted; the cursor written again only when a second
// has passed since), 10-12 read and not released. A cursor that cannot be used (torn, corrupt, not where a record
// starts, past the end) replays every segment on disk: records 8-19, never fewer.
func TestCursor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		later  bool // a second passes before the second release
		closed bool // Close rather than kill -9
		damage func(t *testing.T, dir string)
		want   []string
		first  int // the first segment left on disk by Open, when not 3 (segments 1 and 2 are released and deleted, and any released to its end)
	}{
		{name: "closed", closed: true, want: records(10, 19)},
		{name: "killed, cursor written at the last release", later: true, want: records(10, 19)},
		{name: "killed, cursor older than the last release, in a deleted segment", want: records(8, 19)},
		{name: "no cursor", later: true, want: records(8, 19),
			damage: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "cursor")) }},
		{name: "torn cursor", later: true, want: records(8, 19), damage: func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "cursor"), 11); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "corrupt cursor", later: true, want: records(8, 19), damage: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "cursor"))
			if err != nil {
				t.Fatal(err)
			}
			b[8] ^= 0x10
			if err := os.WriteFile(filepath.Join(dir, "cursor"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "torn write of the next cursor", later: true, want: records(10, 19), damage: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "cursor.tmp"), []byte{3, 0, 0}, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cursor inside a record", want: records(8, 19), damage: func(t *testing.T, dir string) { writeCursor(t, dir, 3, 20) }},
		{name: "cursor past its segment's end", want: records(8, 19), damage: func(t *testing.T, dir string) { writeCursor(t, dir, 3, 77) }},
		{name: "cursor past the last segment", want: records(8, 19), damage: func(t *testing.T, dir string) { writeCursor(t, dir, 9, 0) }},
		{name: "cursor at a segment's end", want: records(12, 19), first: 4, damage: func(t *testing.T, dir string) { writeCursor(t, dir, 3, 76) }},
		{name: "cursor past whole segments", want: records(16, 19), first: 5, damage: func(t *testing.T, dir string) { writeCursor(t, dir, 5, 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
			cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, SegmentBytes: 64, Now: func() time.Time { return now }}
			s := open(t, cfg)
			appendN(t, s, 0, 20)
			now = now.Add(time.Second)
			take(t, s, 6, true)
			if tt.later {
				now = now.Add(time.Second)
			}
			take(t, s, 4, true)
			take(t, s, 3, false)
			if tt.closed {
				s.Close()
			} else {
				cfg.Dir = crash(t, cfg.Dir)
			}
			if tt.damage != nil {
				tt.damage(t, cfg.Dir)
			}
			s = open(t, cfg)
			if st := s.Stats(); st.Records != int64(len(tt.want)) || st.Bytes != int64(len(tt.want))*19 {
				t.Errorf("stats %+v, want %d records", st, len(tt.want))
			}
			first := cmp.Or(tt.first, 3)
			if segs := segments(t, cfg.Dir); filepath.Base(segs[0]) != fmt.Sprintf("%016d.wal", first) {
				t.Errorf("segments on disk: %v, want the first to be %d", segs, first)
			}
			if got := readAll(t, s, 5); !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCursorAfterQuarantine: a record quarantined before a kill -9 is not read again by the next start, wherever
// the kill came (before its release, after it but before the cursor's write, or a clean Close), so it is
// quarantined once; a requeue moves it back and it is read. A quarantine the crash tore, or that is corrupt,
// does not hold it: it is read again, never lost. Records 0-5 appended, a second later 0 released (the cursor
// written), 1-5 read and record-0002 quarantined.
func TestCursorAfterQuarantine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		release bool
		later   bool // a second passes before the release: the cursor is written past the quarantined record
		closed  bool
		damage  func(b []byte) []byte // the quarantine as the crash left it
		want    []string
	}{
		{name: "killed before the release", want: []string{"record-0001", "record-0003", "record-0004", "record-0005"}},
		{name: "killed after the release, before the cursor's write", release: true,
			want: []string{"record-0001", "record-0003", "record-0004", "record-0005"}},
		{name: "killed after the cursor's write", release: true, later: true},
		{name: "closed", release: true, closed: true},
		{name: "killed while quarantining", want: records(1, 5), damage: func(b []byte) []byte { return b[:len(b)-3] }},
		{name: "quarantine corrupt", release: true, want: records(1, 5),
			damage: func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
			cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, Now: func() time.Time { return now }}
			s := open(t, cfg)
			appendN(t, s, 0, 6)
			now = now.Add(time.Second)
			take(t, s, 1, true)
			if tt.later {
				now = now.Add(time.Second)
			}
			if err := s.Quarantine([]byte("record-0002")); err != nil {
				t.Fatal(err)
			}
			take(t, s, 5, tt.release)
			if tt.closed {
				s.Close()
			} else {
				cfg.Dir = crash(t, cfg.Dir)
			}
			q := filepath.Join(cfg.Dir, "quarantine.log")
			if tt.damage != nil {
				b, err := os.ReadFile(q)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(q, tt.damage(b), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s = open(t, cfg)
			if got := readAll(t, s, 2); !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
			if st := s.Stats(); st.Records != 0 || st.Bytes != 0 { // what was passed over is released with the rest
				t.Errorf("after the replay: %+v", st)
			}
			if tt.damage != nil {
				return
			}
			if n, err := s.Requeue(); n != 1 || err != nil {
				t.Fatalf("requeue: %d, %v (the quarantine should hold the record once)", n, err)
			}
			if got := readAll(t, s, 2); fmt.Sprint(got) != "[record-0002]" {
				t.Errorf("after the requeue: %v", got)
			}
		})
	}
}

// TestCursorHistories: histories of appends, reads of one to four records, releases in any order, quarantines
// (some of whose reads are never released), a clock that moves by up to 1.5 s, and a clean Close or a kill -9
// after each of one to three runs, then a requeue and a last restart; segments of 20-119 bytes and 1-200 bytes
// kept in memory, 100 seeds. Whatever the history: every record not released nor quarantined is read by the
// last run, no quarantined one is, the spool counts nothing once it is read, and each quarantined record is
// read after the requeue.
func TestCursorHistories(t *testing.T) {
	t.Parallel()
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 1))
		now := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
		cfg := spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 20, SegmentBytes: int64(20 + rng.IntN(100)),
			MemoryBytes: int64(1 + rng.IntN(200)), Now: func() time.Time { return now }}
		s := open(t, cfg)
		// restart ends the run by a Close or a kill -9, and opens the spool again
		restart := func() {
			if rng.IntN(2) == 0 {
				s.Close()
			} else {
				cfg.Dir = crash(t, cfg.Dir)
			}
			s = open(t, cfg)
		}
		type read struct {
			recs    []string
			release func() error
		}
		done, quarantined := map[string]bool{}, map[string]bool{}
		n := 0
		for range 1 + rng.IntN(3) {
			var reads []read
			for range 60 {
				switch rng.IntN(5) {
				case 0, 1:
					for range 1 + rng.IntN(4) {
						if err := s.Append(fmt.Appendf(nil, "r%05d", n), nil); err != nil {
							t.Fatal(err)
						}
						n++
					}
				case 2:
					recs, release, err := s.Read(1+rng.IntN(4), 1<<20)
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) > 0 {
						r := read{release: release}
						for _, rec := range recs {
							r.recs = append(r.recs, string(rec.Payload))
						}
						reads = append(reads, r)
					}
				case 3:
					if len(reads) == 0 {
						continue
					}
					i := rng.IntN(len(reads))
					if rng.IntN(3) == 0 {
						rec := reads[i].recs[rng.IntN(len(reads[i].recs))]
						if err := s.Quarantine([]byte(rec)); err != nil {
							t.Fatal(err)
						}
						quarantined[rec] = true
						if rng.IntN(2) == 0 {
							continue // the run ends before the release
						}
					}
					if err := reads[i].release(); err != nil {
						t.Fatal(err)
					}
					for _, rec := range reads[i].recs {
						done[rec] = true
					}
					reads = slices.Delete(reads, i, i+1)
				case 4:
					now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				}
			}
			restart()
		}
		got := readAll(t, s, 3)
		if st := s.Stats(); st.Records != 0 || st.Bytes != 0 {
			t.Fatalf("seed %d: %+v after the replay", seed, st)
		}
		for _, rec := range got {
			if quarantined[rec] {
				t.Fatalf("seed %d: %s read again though the quarantine holds it (read %v)", seed, rec, got)
			}
			done[rec] = true
		}
		for i := range n {
			if rec := fmt.Sprintf("r%05d", i); !done[rec] && !quarantined[rec] {
				t.Fatalf("seed %d: %s lost (read %v)", seed, rec, got)
			}
		}
		if _, err := s.Requeue(); err != nil {
			t.Fatal(err)
		}
		restart()
		back := readAll(t, s, 3)
		for rec := range quarantined {
			if !slices.Contains(back, rec) {
				t.Fatalf("seed %d: %s not read after the requeue (read %v)", seed, rec, back)
			}
		}
	}
}

// FuzzSegment: whatever bytes a segment holds, Open neither fails nor panics, each record read is in them, and
// a second Open reads the same records (what the first took out stays out).
func FuzzSegment(f *testing.F) {
	good := frameOf("record-0000") + frameOf("record-0001") + frameOf("record-0002")
	for _, seed := range []string{good, good[:30], good[:19] + "\xff" + good[20:], good[:19] + strings.Repeat("\x00", 19) + good[38:],
		frameOf("record-0000" + frameOf("junk")), frameOf("x")[:8] + good} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "0000000000000001.wal"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		read := func() []string {
			s, err := spool.Open(spool.Config{Dir: dir, MaxBytes: 1 << 20}, quiet())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var out []string
			for {
				recs, _, err := s.Read(10, 1<<20) // never released: the next Open reads them again
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) == 0 {
					return out
				}
				for _, r := range recs {
					if !bytes.Contains(b, r.Payload) {
						t.Fatalf("read %q, which the segment does not hold", r.Payload)
					}
					out = append(out, string(r.Payload))
				}
			}
		}
		if first, second := read(), read(); !slices.Equal(first, second) {
			t.Fatalf("read %q, then %q", first, second)
		}
	})
}
