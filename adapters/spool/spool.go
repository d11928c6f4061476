// Package spool is a local append-only write-ahead log: the gateway appends each finished call to it before the
// call's response ends, and a writer drains it into the database. It is a directory of segment files, each a
// sequence of records framed as
//
//	length uint32 (little endian) | CRC-32C of the payload uint32 | payload
//
// Durability: Append returns once the record is in the operating system's page cache (one write(2)), which
// survives kill -9 of the process and any crash of the gateway, but not a crash of the machine or a power cut.
// With Sync set, Append also waits for fsync(2) (group commit: one fsync covers every record appended while the
// previous one ran), which survives those too, at the cost of a disk flush per batch of calls.
//
// The spool is bounded in bytes: Full reports when the records not yet drained reach MaxBytes, and the gateway
// then refuses new calls (before doing any work) rather than serve calls it cannot record. Append itself never
// refuses for size, so a call already admitted always gets its record in.
//
// Released records are behind the release cursor, a small file the spool rewrites as releases advance (at most
// every second, and on Close); Open reads the records from the cursor on. What a crash leaves past the cursor is
// read again: records drained but not yet released, and those released since the cursor was last written, so
// whatever consumes them must be idempotent. A record read again whose bytes the quarantine holds is passed
// over (see Open).
package spool

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// Config is where the spool lives and how much it may hold.
type Config struct {
	Dir string
	// MaxBytes bounds the records not yet drained.
	MaxBytes int64
	// SegmentBytes is when a new segment file is started; drained segments are deleted whole, so the disk holds
	// what is not drained and at most a segment more (and one record past it). 0 is a quarter of MaxBytes, from
	// 64 KiB to 1 MiB (see segmentBytes).
	SegmentBytes int64
	// Sync waits for fsync (group commit) in Append.
	Sync bool
	// MemoryBytes bounds the records kept in memory for the reader (16 MiB when 0).
	MemoryBytes int64
	// Now is the clock that spaces the writes of the release cursor (time.Now when nil).
	Now func() time.Time
	// Valid says whether a payload is a record (decodes as one). Where damage is found in the middle of a file,
	// reading goes on at the next frame whose length and checksum hold and whose payload is Valid, so that bytes
	// that merely look like a frame (in a record's payload, say) are not taken for one. nil: any such frame.
	Valid func(payload []byte) bool
}

const (
	headerLen = 8
	// MaxRecord bounds one record; longer payloads are refused by Append.
	MaxRecord = 64 << 20
	suffix    = ".wal"
	// cursorFile is the release cursor: segment (uint64) and offset (int64), little endian, and their CRC-32C.
	// It is written to cursorFile+".tmp" (synced with Sync) and renamed over the cursor, so a crash leaves the
	// old cursor or the new one, never a torn one; a cursor that is torn anyway (a machine crash without Sync)
	// fails its checksum and is ignored.
	cursorFile = "cursor"
	cursorLen  = 20
	// cursorEvery spaces the writes of the cursor: a release rewrites it when the last write is older, so it
	// costs a few system calls a second rather than some per batch; a crash then replays at most the records
	// released in the second before it (idempotent) besides those not released.
	cursorEvery = time.Second
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	// ErrTooLarge is a record over MaxRecord.
	ErrTooLarge = ports.ErrRecordTooLarge
	// ErrEmpty is an append of no bytes: a frame holds at least one (see frameLen).
	ErrEmpty = errors.New("spool: empty record")
	// ErrClosed is an Append, a Read or a release after Close.
	ErrClosed = errors.New("spool: closed")
)

type memRecord struct {
	pos, end Pos
	rec      ports.SpoolRecord
}

// Pos is a place in the spool: a segment and an offset in it.
type Pos struct {
	Seg uint64
	Off int64
}

func (p Pos) before(q Pos) bool { return p.compare(q) < 0 }

func (p Pos) compare(q Pos) int {
	if c := cmp.Compare(p.Seg, q.Seg); c != 0 {
		return c
	}
	return cmp.Compare(p.Off, q.Off)
}

// Spool is safe for concurrent Append, and for concurrent Read: each Read takes the records after the previous
// one's, so several writers can drain it at once; their releases take effect in the order of the reads.
type Spool struct {
	cfg  Config
	log  *slog.Logger
	lock *os.File // flock'ed while open: one process per spool

	mu          sync.Mutex
	closed      bool
	w           *os.File // the segment being appended to
	wpos        Pos      // where the next record goes
	sizes       map[uint64]int64
	depth       int64 // bytes appended and not yet released
	records     int64 // records appended and not yet released
	quarantined int64
	notify      chan struct{}

	qmu sync.Mutex // one Quarantine or Requeue at a time: each cuts what its failed write left

	// the records appended since memStart, in order, kept in memory (up to MemoryBytes) so that the reader
	// takes them from here rather than from the files: no read(2), and the values appended with them
	mem      []memRecord
	memBytes int64
	memStart Pos

	syncMu sync.Mutex
	synced Pos // everything before it is on disk

	rpos Pos // everything before it is released (guarded by mu)

	cmu      sync.Mutex
	cursor   Pos       // what the cursor file holds
	cursorAt time.Time // when it was written

	// the records of an earlier run that the quarantine holds (found by Open): the reader passes over them
	kept map[Pos]struct{}

	// the readers' state
	rmu   sync.Mutex
	next  Pos      // where the next Read starts
	reads []*taken // read and not yet released, in the order read
	rfile *os.File
	rseg  uint64
}

// taken is the records one Read returned: they are released once they and every earlier read are.
type taken struct {
	end      Pos
	n        int
	released bool
}

// Open opens (creating) the spool in cfg.Dir and finds the records left by an earlier process: those from the
// release cursor on, or every record on disk when there is no cursor or it cannot be used (corrupt, or not where
// a record starts: the log says why; replaying more than needed is harmless, starting past a record would lose
// it). Segments wholly before the cursor are deleted. A record whose frame is torn (a crash mid-write) ends its
// segment: the segment is cut there.
//
// A record of an earlier run whose bytes the quarantine holds is not read again: it was quarantined, and the
// crash came before its release or before the cursor was written past it. Matching the quarantine, rather than
// making the cursor pass a record before its quarantine counts as done, is what is right after a kill -9 at any
// point: the quarantine and the cursor are two files, and in either order a crash between the two writes loses
// the record (cursor first) or quarantines it again (quarantine first); with several readers, moreover, a
// release waits for every earlier read's, so the cursor may pass a quarantined record long after its quarantine.
// A record counts as quarantined once its whole frame is in quarantine.log (read up to a torn or corrupt frame):
// one a crash tore there is read again, and quarantined again if it is still refused.
func Open(cfg Config, log *slog.Logger) (*Spool, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = segmentBytes(cfg.MaxBytes)
	}
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = 16 << 20
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("spool: %s is in use by another process (each gateway needs its own spool_dir): %w", cfg.Dir, err)
	}
	s := &Spool{cfg: cfg, log: log, lock: lock, sizes: map[uint64]int64{}, notify: make(chan struct{}, 1), cursorAt: cfg.Now()}
	segs, err := s.segments()
	if err != nil {
		lock.Close()
		return nil, err
	}
	next := uint64(1)
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
		if err := s.load(segs); err == nil {
			err = s.dropDrained(next)
		}
		if err != nil {
			lock.Close()
			return nil, err
		}
	} else {
		s.rpos = Pos{Seg: next}
	}
	if err := s.startSegment(next); err != nil {
		lock.Close()
		return nil, err
	}
	s.synced, s.memStart, s.next = s.wpos, s.wpos, s.rpos
	if s.records > 0 {
		log.Warn("spool holds records from an earlier run; replaying them", "dir", cfg.Dir, "from", s.rpos,
			"records", s.records, "bytes", s.depth, "in_quarantine_already", len(s.kept))
	}
	return s, nil
}

// segmentBytes is the default size of a segment for a spool bounded at maxBytes: a quarter of it, from 64 KiB to
// 1 MiB. Drained records are freed a segment at a time, so a segment is what the disk holds beyond the records
// not yet drained: with 16 MiB segments a disk a few megabytes above the bound filled with records the database
// already had, and every call was refused while nothing waited. A segment costs an open and a close when it
// starts and an unlink when it is drained: at 1 MiB a gateway writing 2,500 records of a kilobyte a second starts
// two or three a second.
func segmentBytes(maxBytes int64) int64 {
	return min(max(maxBytes/4, 64<<10), 1<<20)
}

// errCursor is a release cursor that is not where a record starts.
var errCursor = errors.New("the cursor is not where a record starts")

// load finds the records not yet released in segs (at least one): from the cursor on when it can be used, else
// from the first segment; and deletes the segments before the cursor's.
func (s *Spool) load(segs []uint64) error {
	quarantined := s.quarantinedRecords()
	if start, ok := s.readCursor(segs); ok {
		err := s.scanFrom(segs, start, quarantined)
		if err == nil {
			if s.rpos == start { // else damage taken out before it moved it, and the cursor file went: a release writes it
				s.cursor = start
			}
			for _, seg := range segs[:slices.Index(segs, start.Seg)] {
				if err := os.Remove(s.path(seg)); err != nil {
					return fmt.Errorf("spool: %w", err)
				}
			}
			return nil
		}
		if !errors.Is(err, errCursor) {
			return err
		}
		s.log.Warn("spool cursor ignored: replaying every segment", "cursor", filepath.Join(s.cfg.Dir, cursorFile), "err", err)
	}
	return s.scanFrom(segs, Pos{Seg: segs[0]}, quarantined)
}

// dropDrained deletes the segments load found that hold nothing not yet released: empty ones (each Open starts
// one, which restarts without traffic would leave behind, one each) and the cursor's once released to its end.
// None is held by a writer: Open starts the segment it appends to, next, after this. The reader then starts at
// the first segment left, or at next.
func (s *Spool) dropDrained(next uint64) error {
	for _, seg := range slices.Sorted(maps.Keys(s.sizes)) {
		if s.sizes[seg] > s.offsetIn(seg) {
			continue
		}
		if err := os.Remove(s.path(seg)); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		delete(s.sizes, seg)
	}
	if _, ok := s.sizes[s.rpos.Seg]; !ok {
		s.rpos = Pos{Seg: next}
		if len(s.sizes) > 0 {
			s.rpos.Seg = slices.Min(slices.Collect(maps.Keys(s.sizes)))
		}
	}
	return nil
}

// readCursor returns the release cursor an earlier process wrote, moved to the start of the next segment when
// its own is deleted (released whole); false when there is none, or it cannot be used (logged).
func (s *Spool) readCursor(segs []uint64) (Pos, bool) {
	path := filepath.Join(s.cfg.Dir, cursorFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Pos{}, false
	}
	var pos Pos
	var why string
	switch {
	case err != nil:
		why = err.Error()
	case len(b) != cursorLen:
		why = fmt.Sprintf("%d bytes, not %d", len(b), cursorLen)
	case crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]):
		why = "checksum mismatch"
	default:
		pos = Pos{Seg: binary.LittleEndian.Uint64(b), Off: int64(binary.LittleEndian.Uint64(b[8:]))}
		if i, found := slices.BinarySearch(segs, pos.Seg); i == len(segs) {
			why = fmt.Sprintf("segment %d is past the last one, %d", pos.Seg, segs[len(segs)-1])
		} else if !found {
			pos = Pos{Seg: segs[i]}
		}
	}
	if why != "" {
		s.log.Warn("spool cursor ignored: replaying every segment", "cursor", path, "err", why)
		return Pos{}, false
	}
	return pos, true
}

// scanFrom scans the segments from start's on and counts the records from start on, noting those whose bytes are
// in quarantined (s.kept); errCursor when start is not where a record of its segment starts or where they end.
func (s *Spool) scanFrom(segs []uint64, start Pos, quarantined digests) error {
	clear(s.sizes)
	s.depth, s.records, s.kept = 0, 0, nil
	for _, seg := range segs {
		if seg < start.Seg {
			continue
		}
		from := int64(0)
		if seg == start.Seg {
			from = start.Off
		}
		size, n, at, err := s.scan(seg, from, quarantined)
		if err != nil {
			return err
		}
		if seg == start.Seg {
			start.Off = at // moved when damage before it was taken out
		}
		s.sizes[seg] = size
		s.depth += size - at
		s.records += n
	}
	s.rpos = start
	return nil
}

// digests are the SHA-256 of records.
type digests map[[sha256.Size]byte]struct{}

func (d digests) has(payload []byte) bool {
	if len(d) == 0 {
		return false
	}
	_, ok := d[sha256.Sum256(payload)]
	return ok
}

// quarantinedRecords returns the digests of the records in the quarantine, up to its first torn or corrupt frame;
// none when there is no quarantine. When it cannot be read, the records it holds are replayed (and quarantined
// again if they are still refused): nothing is lost.
func (s *Spool) quarantinedRecords() digests {
	path := filepath.Join(s.cfg.Dir, quarantineFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		defer f.Close()
		var info os.FileInfo
		if info, err = f.Stat(); err == nil {
			out := digests{}
			_, _, _ = s.eachFrame(f, info.Size(), func(_ int64, p []byte) { out[sha256.Sum256(p)] = struct{}{} })
			return out
		}
	}
	s.log.Warn("spool quarantine unreadable: records of the earlier run that it holds are replayed", "quarantine", path, "err", err)
	return nil
}

func (s *Spool) path(seg uint64) string {
	return filepath.Join(s.cfg.Dir, fmt.Sprintf("%016d%s", seg, suffix))
}

func (s *Spool) segments() ([]uint64, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var segs []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), suffix)
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 64); err == nil {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// scan checks every frame of a segment left by an earlier process and cuts a torn or corrupt tail. Damage in
// the middle (a disk's, never the spool's) is taken out of the segment, which is rewritten without it, and kept
// beside it (see keepDamage): the frames after it stay. scan returns the segment's size, how many records it
// holds from offset from on, and where from is in the segment as rewritten (errCursor when no record starts
// there and the records do not end there), noting in s.kept those whose bytes are in quarantined.
func (s *Spool) scan(seg uint64, from int64, quarantined digests) (size, n, at int64, err error) {
	path := s.path(seg)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("spool: %w", err)
	}
	var held []int64 // where the records from from on that the quarantine holds start
	var frames, frameBytes int64
	found := from == 0
	end, damage, err := s.eachFrame(f, info.Size(), func(off int64, p []byte) {
		frames, frameBytes = frames+1, frameBytes+headerLen+int64(len(p))
		found = found || off == from
		if off >= from {
			n++
			if quarantined.has(p) {
				held = append(held, off)
			}
		}
	})
	for _, d := range damage {
		found = found || d.from == from
	}
	if found = found || end == from; !found {
		return 0, 0, 0, fmt.Errorf("%w: %s at %d (its records end at %d)", errCursor, path, from, end)
	}
	if err != nil {
		s.log.Error("spool segment cut at a torn or corrupt record", "segment", path, "offset", end,
			"bytes_cut", info.Size()-end, "err", err)
	}
	switch {
	case len(damage) > 0:
		if err := s.keepDamage(f, seg, end, damage, from, frameBytes/max(frames, 1)); err != nil {
			return 0, 0, 0, err
		}
	case err != nil:
		if err := f.Truncate(end); err != nil {
			return 0, 0, 0, fmt.Errorf("spool: cut %s: %w", path, err)
		}
	}
	for _, off := range held {
		if s.kept == nil {
			s.kept = map[Pos]struct{}{}
		}
		s.kept[Pos{Seg: seg, Off: damage.moved(off)}] = struct{}{}
	}
	return damage.moved(end), n, damage.moved(from), nil
}

// span is the bytes of a file from from to to.
type span struct{ from, to int64 }

// spans are a file's damaged spans, in order.
type spans []span

// moved is where off, which no span holds, is once the spans are taken out of the file.
func (d spans) moved(off int64) int64 {
	out := off
	for _, sp := range d {
		if sp.to <= off {
			out -= sp.to - sp.from
		}
	}
	return out
}

// keepDamage takes the damaged spans out of segment seg (f), whose frames end at end: each span's bytes, unless
// they are all zero (nothing to keep), go to a file beside it, <segment>.damaged-<offset>-<unix nanoseconds>
// (synced), and the segment is rewritten without them (a copy synced, then renamed over it). The records the
// damage held are counted as quarantined (Stats), from from on (before it they were released): those that
// zeroed bytes held are not, as a machine's crash zeroes what it had not written yet, which without Sync it may
// lose (see the package's doc), as a zeroed tail. When from moves, the release cursor is deleted first, so that
// a crash before the next is written replays the whole spool rather than start at a wrong offset.
func (s *Spool) keepDamage(f *os.File, seg uint64, end int64, damage spans, from, mean int64) error {
	path := s.path(seg)
	lost := 0
	for _, d := range damage {
		b := make([]byte, d.to-d.from)
		if _, err := f.ReadAt(b, d.from); err != nil {
			return fmt.Errorf("spool: %s: %w", path, err)
		}
		n := recordsIn(b, mean)
		if d.from >= from {
			lost += n
		}
		kept := "nothing (zeroed bytes)"
		if n > 0 {
			kept = fmt.Sprintf("%s.damaged-%d-%d", path, d.from, s.cfg.Now().UnixNano())
			if err := writeSynced(kept, b); err != nil {
				return fmt.Errorf("spool: keep the damage of %s: %w", path, err)
			}
		}
		s.log.Error("spool segment damaged (a disk error): the damaged bytes are taken out, the records after them kept",
			"segment", path, "offset", d.from, "bytes", d.to-d.from, "records_lost", n, "kept_as", kept)
	}
	tmp := path + ".tmp"
	w, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	at := int64(0)
	for _, d := range append(damage, span{from: end}) {
		if _, err = io.Copy(w, io.NewSectionReader(f, at, d.from-at)); err != nil {
			break
		}
		at = d.to
	}
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && damage.moved(from) != from {
		if err = os.Remove(filepath.Join(s.cfg.Dir, cursorFile)); err == nil || errors.Is(err, os.ErrNotExist) {
			err = syncDir(s.cfg.Dir)
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(s.cfg.Dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: rewrite %s without its damage: %w", path, err)
	}
	s.mu.Lock()
	s.quarantined += int64(lost)
	s.mu.Unlock()
	return nil
}

// recordsIn is how many records damaged bytes held: none when they are all zero; else the frames their headers
// chain when they end exactly at the damage's end (a payload corrupt, its header whole); else as many frames of
// the segment's mean length as fit in them, and at least one more than they chain before they stop.
func recordsIn(b []byte, mean int64) int {
	if !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
		return 0
	}
	n, off := 0, int64(0)
	for int64(len(b))-off >= headerLen {
		size, err := frameLen(b[off:], off, int64(len(b)))
		if err != nil {
			break
		}
		n, off = n+1, off+headerLen+size
	}
	if off == int64(len(b)) {
		return n
	}
	return max(n+1, int(int64(len(b))/max(mean, 1)))
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// eachFrame hands f each frame's offset and payload of a file of size bytes, in order, passing over damage in the
// middle: where a frame is torn or corrupt, reading goes on at the next offset where a frame starts (see resync).
// It returns where the frames end: size, or with an error, where a torn or corrupt tail (no frame after it)
// starts; and the damaged spans passed over.
func (s *Spool) eachFrame(r io.ReaderAt, size int64, f func(off int64, payload []byte)) (int64, spans, error) {
	var damage spans
	for off := int64(0); off < size; {
		payloads, next, err := readFrames(r, off, size, math.MaxInt, math.MaxInt64)
		for _, p := range payloads {
			f(off, p)
			off += headerLen + int64(len(p))
		}
		if err == nil {
			continue
		}
		again, ok := resync(r, next, size, s.cfg.Valid)
		if !ok {
			return next, damage, err
		}
		damage, off = append(damage, span{from: next, to: again}), again
	}
	return size, damage, nil
}

// resync finds the first offset after from where a whole frame starts: its length is not 0 (zeroed bytes are no
// frame) and fits before size, its checksum holds, and its payload is valid (when valid is set). false when none
// does.
func resync(r io.ReaderAt, from, size int64, valid func([]byte) bool) (int64, bool) {
	var buf []byte // the file's bytes from base on
	base := int64(0)
	for off := from + 1; size-off > headerLen; off++ {
		if off+headerLen > base+int64(len(buf)) {
			base, buf = off, make([]byte, min(size-off, chunk))
			if _, err := r.ReadAt(buf, base); err != nil {
				return 0, false
			}
		}
		h := buf[off-base:]
		n, err := frameLen(h, off, size)
		if err != nil {
			continue
		}
		var payload []byte
		if headerLen+n <= int64(len(h)) {
			if payload = h[headerLen : headerLen+n]; crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
				continue
			}
		} else {
			// past the buffer: the checksum first, without taking a payload's length of memory for each offset
			sum, want := crc32.New(castagnoli), binary.LittleEndian.Uint32(h[4:])
			if _, err := io.Copy(sum, io.NewSectionReader(r, off+headerLen, n)); err != nil || sum.Sum32() != want {
				continue
			}
			if payload, err = readFrame(r, off, size); err != nil {
				continue
			}
		}
		if valid == nil || valid(payload) {
			return off, true
		}
	}
	return 0, false
}

// chunk is what one read(2) of a segment takes at most, for the frames that fit in it.
const chunk = 256 << 10

// readFrames reads the frames from off on (off < limit): the first, and those after it that the same read of up
// to chunk bytes holds, at most max of them and about maxBytes. It returns their payloads, which share one
// buffer, and where the next frame starts; an error concerns the frame there (a torn or corrupt record).
func readFrames(r io.ReaderAt, off, limit int64, max int, maxBytes int64) ([][]byte, int64, error) {
	buf := make([]byte, min(limit-off, chunk))
	if _, err := r.ReadAt(buf, off); err != nil {
		return nil, off, err
	}
	var out [][]byte
	var size int64
	for len(out) < max && size < maxBytes && len(buf) >= headerLen {
		n, err := frameLen(buf, off, limit)
		if err != nil {
			return out, off, err
		}
		if headerLen+n > int64(len(buf)) { // beyond this read
			break
		}
		payload := buf[headerLen : headerLen+n : headerLen+n]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(buf[4:]) {
			return out, off, errors.New("checksum mismatch")
		}
		out, size, off, buf = append(out, payload), size+n, off+headerLen+n, buf[headerLen+n:]
	}
	if len(out) > 0 {
		return out, off, nil
	}
	payload, err := readFrame(r, off, limit) // one frame larger than a read
	if err != nil {
		return nil, off, err
	}
	return [][]byte{payload}, off + headerLen + int64(len(payload)), nil
}

// frameLen is the payload's length that the header h of the frame at off gives, or io.ErrUnexpectedEOF when no
// whole frame can start there before limit: one torn, or a length of 0, which Append never writes but zeroed
// bytes read as, with a matching checksum (the CRC of nothing is 0): a file system may leave a file's end zeroed
// after a machine crash, and those bytes are no records.
func frameLen(h []byte, off, limit int64) (int64, error) {
	n := int64(binary.LittleEndian.Uint32(h[:4]))
	if n == 0 || n > MaxRecord || off+headerLen+n > limit {
		return 0, io.ErrUnexpectedEOF
	}
	return n, nil
}

func readFrame(r io.ReaderAt, off, limit int64) ([]byte, error) {
	if limit-off < headerLen {
		return nil, io.ErrUnexpectedEOF
	}
	var h [headerLen]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return nil, err
	}
	n, err := frameLen(h[:], off, limit)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, n)
	if _, err := r.ReadAt(payload, off+headerLen); err != nil {
		return nil, err
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, errors.New("checksum mismatch")
	}
	return payload, nil
}

// startSegment makes seg the segment appended to; the caller holds mu (or is Open).
func (s *Spool) startSegment(seg uint64) error {
	f, err := os.OpenFile(s.path(seg), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if s.w != nil {
		// the old segment must reach the disk before a sync of the new one may claim to cover it
		if s.cfg.Sync {
			if err := s.w.Sync(); err != nil {
				f.Close()
				return fmt.Errorf("spool: sync: %w", err)
			}
		}
		s.w.Close()
	}
	s.w, s.wpos = f, Pos{Seg: seg}
	s.sizes[seg] = 0
	return nil
}

// Append writes one record. It returns when the record is in the page cache (with Sync, on disk). payload and
// value are kept in memory for the reader until released (or until MemoryBytes wait: then the reader takes
// those from the files).
func (s *Spool) Append(payload []byte, value any) error {
	if len(payload) > MaxRecord {
		return ErrTooLarge
	}
	if len(payload) == 0 {
		return ErrEmpty
	}
	frame := frame(payload)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.wpos.Off >= s.cfg.SegmentBytes {
		if err := s.startSegment(s.wpos.Seg + 1); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if err := writeFrame(s.w, s.wpos.Off, frame); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("spool: append: %w", err)
	}
	start := s.wpos
	s.wpos.Off += int64(len(frame))
	s.sizes[s.wpos.Seg] = s.wpos.Off
	s.remember(start, payload, value)
	s.depth += int64(len(frame))
	s.records++
	end, w := s.wpos, s.w
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	if s.cfg.Sync {
		return s.sync(end, w)
	}
	return nil
}

// remember keeps the record appended at pos in memory; when MemoryBytes wait already, it forgets them all and
// starts again after this record. The caller holds mu.
func (s *Spool) remember(pos Pos, payload []byte, value any) {
	if s.memBytes+int64(len(payload)) > s.cfg.MemoryBytes {
		clear(s.mem)
		s.mem, s.memBytes, s.memStart = s.mem[:0], 0, s.wpos
		return
	}
	s.mem = append(s.mem, memRecord{pos: pos, end: s.wpos, rec: ports.SpoolRecord{Payload: payload, Value: value}})
	s.memBytes += int64(len(payload))
}

// sync makes everything up to end durable; whoever gets the lock first fsyncs for all who wait behind it.
func (s *Spool) sync(end Pos, w *os.File) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if !s.synced.before(end) {
		return nil
	}
	s.mu.Lock()
	upTo := s.wpos
	if s.w != w { // rotated since: the old segment was synced on rotation, sync the current one
		w = s.w
	}
	s.mu.Unlock()
	if err := w.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("spool: sync: %w", err)
	}
	s.synced = upTo
	return nil
}

// Notify is signalled after appends: a reader waits on it when Read found nothing.
func (s *Spool) Notify() <-chan struct{} { return s.notify }

// Read returns up to max records after those the previous Read returned, at most about maxBytes of them (at
// least one), and the function that releases them; none when nothing is waiting. Records stay in the spool until
// released, and a release takes effect once every earlier Read's records are released too.
func (s *Spool) Read(max int, maxBytes int64) ([]ports.SpoolRecord, func() error, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.isClosed() {
		return nil, nil, ErrClosed
	}
	for {
		recs, n, pos, err := s.read(max, maxBytes)
		if err != nil || n == 0 {
			return nil, nil, err
		}
		s.next = pos
		t := &taken{end: pos, n: n}
		s.reads = append(s.reads, t)
		if len(recs) > 0 {
			return recs, func() error { return s.released(t) }, nil
		}
		if err := s.releasedLocked(t); err != nil { // records the quarantine holds, and none other
			return nil, nil, err
		}
	}
}

// released marks t released, releases the reads before which none is left unreleased, and writes the cursor
// when its last write is older than cursorEvery.
func (s *Spool) released(t *taken) error {
	s.rmu.Lock()
	err := ErrClosed // after Close another process may hold the spool: its files are not ours to change
	if !s.isClosed() {
		err = s.releasedLocked(t)
	}
	s.rmu.Unlock()
	if err != nil {
		return err
	}
	return s.saveCursor(false)
}

// releasedLocked is released for a caller that holds rmu, without writing the cursor.
func (s *Spool) releasedLocked(t *taken) error {
	t.released = true
	n, done := 0, 0
	for ; done < len(s.reads) && s.reads[done].released; done++ {
		n += s.reads[done].n
	}
	if done == 0 {
		return nil
	}
	pos := s.reads[done-1].end
	clear(s.reads[:done])
	s.reads = s.reads[done:]
	return s.release(pos, n)
}

// read takes the records from s.next on, and passes over those in s.kept: it returns the others, how many it
// took in all, and where they end. The caller holds rmu.
func (s *Spool) read(max int, maxBytes int64) ([]ports.SpoolRecord, int, Pos, error) {
	var out []ports.SpoolRecord
	var size int64
	skipped := 0
	pos := s.next
	for len(out) < max && size < maxBytes {
		s.mu.Lock()
		if !pos.before(s.memStart) { // the rest is in memory
			i, _ := slices.BinarySearchFunc(s.mem, pos, func(m memRecord, p Pos) int { return m.pos.compare(p) })
			for ; i < len(s.mem) && len(out) < max && size < maxBytes; i++ {
				out = append(out, s.mem[i].rec)
				size += int64(len(s.mem[i].rec.Payload))
				pos = s.mem[i].end
			}
			s.mu.Unlock()
			break
		}
		limit, ok := s.sizes[pos.Seg]
		last := pos.Seg == s.wpos.Seg
		if s.memStart.Seg == pos.Seg { // what follows is read from memory, with the values appended
			limit = min(limit, s.memStart.Off)
		}
		s.mu.Unlock()
		if !ok || pos.Off >= limit {
			if last || !ok && pos.Seg >= s.wpos.Seg {
				break
			}
			pos = Pos{Seg: pos.Seg + 1}
			continue
		}
		f, err := s.reader(pos.Seg)
		if err != nil {
			return nil, 0, s.next, err
		}
		payloads, next, err := readFrames(f, pos.Off, limit, max-len(out), maxBytes-size)
		if err != nil {
			return nil, 0, s.next, fmt.Errorf("spool: read %s at %d: %w", s.path(pos.Seg), next, err)
		}
		for _, p := range payloads {
			if _, ok := s.kept[pos]; ok {
				delete(s.kept, pos)
				skipped++
				s.log.Warn("spool record of the earlier run passed over: the quarantine holds it", "segment", s.path(pos.Seg), "offset", pos.Off)
			} else {
				out = append(out, ports.SpoolRecord{Payload: p})
				size += int64(len(p))
			}
			pos.Off += headerLen + int64(len(p))
		}
	}
	return out, len(out) + skipped, pos, nil
}

func (s *Spool) reader(seg uint64) (*os.File, error) {
	if s.rfile != nil && s.rseg == seg {
		return s.rfile, nil
	}
	if s.rfile != nil {
		s.rfile.Close()
	}
	f, err := os.Open(s.path(seg))
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.rfile, s.rseg = f, seg
	return f, nil
}

// release marks everything before pos (n records) as drained: its bytes stop counting against MaxBytes, and
// segments wholly before pos are deleted. The caller holds rmu.
func (s *Spool) release(pos Pos, n int) error {
	s.mu.Lock()
	var freed int64
	var gone []uint64
	for seg, size := range s.sizes {
		switch {
		case seg < pos.Seg && seg != s.wpos.Seg:
			gone = append(gone, seg)
			freed += size - s.offsetIn(seg)
			delete(s.sizes, seg)
		case seg == pos.Seg:
			freed += pos.Off - s.offsetIn(seg)
		}
	}
	s.rpos = pos
	s.depth -= freed
	s.records -= int64(n)
	drop := 0
	for drop < len(s.mem) && !pos.before(s.mem[drop].end) {
		s.memBytes -= int64(len(s.mem[drop].rec.Payload))
		drop++
	}
	clear(s.mem[:drop])
	s.mem = s.mem[drop:]
	s.mu.Unlock()
	sort.Slice(gone, func(i, j int) bool { return gone[i] < gone[j] })
	for _, seg := range gone {
		if s.rfile != nil && s.rseg == seg {
			s.rfile.Close()
			s.rfile = nil
		}
		if err := os.Remove(s.path(seg)); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
	}
	return nil
}

// saveCursor writes the release cursor when it moved: when force (Close), or when its last write is older than
// cursorEvery; not after Close (another process may hold the spool by then).
func (s *Spool) saveCursor(force bool) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	now := s.cfg.Now()
	if !force && now.Sub(s.cursorAt) < cursorEvery {
		return nil
	}
	s.mu.Lock()
	pos, closed := s.rpos, s.closed
	s.mu.Unlock()
	if pos == s.cursor || closed && !force {
		return nil
	}
	var b [cursorLen]byte
	binary.LittleEndian.PutUint64(b[:], pos.Seg)
	binary.LittleEndian.PutUint64(b[8:], uint64(pos.Off))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	path := filepath.Join(s.cfg.Dir, cursorFile)
	f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("spool: cursor: %w", err)
	}
	_, err = f.Write(b[:])
	if err == nil && s.cfg.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		return fmt.Errorf("spool: cursor: %w", err)
	}
	s.cursor, s.cursorAt = pos, now
	return nil
}

// offsetIn is where the released part of seg ends, given the reader's position before this release.
func (s *Spool) offsetIn(seg uint64) int64 {
	switch {
	case seg < s.rpos.Seg:
		return s.sizes[seg] // nothing left: already counted
	case seg == s.rpos.Seg:
		return s.rpos.Off
	}
	return 0
}

// Stats is what waits to be drained.
func (s *Spool) Stats() ports.SpoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ports.SpoolStats{Records: s.records, Bytes: s.depth, MaxBytes: s.cfg.MaxBytes, Quarantined: s.quarantined}
}

// quarantineFile holds the records the store refused, framed as the segments are; it is never replayed.
const quarantineFile = "quarantine.log"

// Quarantine appends payload to the quarantine file (synced: it is rare and must not be lost).
func (s *Spool) Quarantine(payload []byte) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.cfg.Dir, quarantineFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("spool: quarantine: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("spool: quarantine: %w", err)
	}
	if err := writeFrame(f, info.Size(), frame(payload)); err != nil {
		return fmt.Errorf("spool: quarantine: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: quarantine: %w", err)
	}
	s.mu.Lock()
	s.quarantined++
	s.mu.Unlock()
	return nil
}

// Requeue moves the records kept in the quarantine back into the spool, to be read again after those waiting:
// for an operator, once the cause of the refusals is fixed, while no gateway uses the spool (Open locks it). The
// records reach the disk (fsync) before the quarantine file goes, so a crash in between leaves them in both: the
// next Open passes over the spool's copies (the quarantine holds them), and a requeue moves them again. It never
// deletes what it did not move: when frames cannot be read (torn by a crash, or corrupt), the records before and
// after them are moved (reading goes on after damage as Open does, see eachFrame) and the file is kept as
// quarantine.log.damaged-<unix nanoseconds>, which the error names with the offsets that could not be read. It
// returns how many records it moved.
func (s *Spool) Requeue() (int, error) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	path := filepath.Join(s.cfg.Dir, quarantineFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spool: requeue: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("spool: requeue: %w", err)
	}
	var recs [][]byte
	var damage error // what could not be read
	end, holes, err := s.eachFrame(f, info.Size(), func(_ int64, p []byte) { recs = append(recs, p) })
	for _, d := range holes {
		damage = errors.Join(damage, fmt.Errorf("%s cannot be read from offset %d to %d", path, d.from, d.to))
	}
	if err != nil {
		damage = errors.Join(damage, fmt.Errorf("%s cannot be read from offset %d on (%d of its %d bytes): %w", path,
			end, info.Size()-end, info.Size(), err))
	}
	for _, rec := range recs {
		if err := s.Append(rec, nil); err != nil {
			return 0, fmt.Errorf("spool: requeue: %w (the quarantine is kept: a requeue moves its records again, "+
				"and the writer skips ids already stored)", err)
		}
	}
	s.mu.Lock()
	err = s.w.Sync()
	s.mu.Unlock()
	if err == nil {
		err = syncDir(s.cfg.Dir)
	}
	kept := ""
	if err == nil && damage != nil {
		// a link, not a rename: it never replaces a file of the same name
		kept = fmt.Sprintf("%s.damaged-%d", path, time.Now().UnixNano())
		err = os.Link(path, kept)
	}
	if err == nil {
		err = os.Remove(path)
	}
	if err == nil {
		err = syncDir(s.cfg.Dir)
	}
	if err != nil {
		return 0, fmt.Errorf("spool: requeue: %w (the records may be both in the spool and in the quarantine: "+
			"run the requeue again)", err)
	}
	if damage != nil {
		s.log.Error("quarantine damaged: the records it could read were moved, the file is kept whole",
			"moved", len(recs), "kept_as", kept, "err", damage)
		return len(recs), fmt.Errorf("spool: requeue: %d records moved; %w: the file is kept whole as %s "+
			"(only what could not be read is not moved)", len(recs), damage, kept)
	}
	return len(recs), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeFrame appends frame to f, which ends at size; a failed write (a short one leaves a torn frame) is cut
// back to size so that the file stays readable and what is appended later follows whole frames.
func writeFrame(f *os.File, size int64, frame []byte) error {
	_, err := f.Write(frame)
	if err != nil {
		_ = f.Truncate(size)
	}
	return err
}

func frame(payload []byte) []byte {
	f := make([]byte, headerLen+len(payload))
	binary.LittleEndian.PutUint32(f[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(f[4:8], crc32.Checksum(payload, castagnoli))
	copy(f[headerLen:], payload)
	return f
}

func (s *Spool) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops appends, reads and releases (a Read or a release under way finishes first; later ones, and
// appends, get ErrClosed), writes the release cursor and closes the files; what is not drained stays for the
// next Open.
func (s *Spool) Close() error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	cerr := s.saveCursor(true)
	if s.rfile != nil {
		s.rfile.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Sync {
		_ = s.w.Sync()
	}
	defer s.lock.Close()
	if err := s.w.Close(); err != nil {
		return err
	}
	return cerr
}

var _ ports.Spool = (*Spool)(nil)
