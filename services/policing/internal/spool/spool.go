// Package spool is the local, durable, bounded, append-only spool that takes accounting
// records while Cassandra cannot, and gives them back in order when it can again.
//
// On disk: segment files named by the global offset of their first byte
// (00000000000000000000.seg, ...), each a sequence of records
// [length uint32 BE][CRC-32C uint32 BE][payload], and a cursor file with the global offset of
// the next record to replay. Append returns only after the record is fsync'd (group commit:
// one fsync covers every append that is waiting). Replay is at least once: a crash between
// applying a record and saving the cursor replays the last few records again.
package spool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// ErrFull is returned by Append when the spool has reached its size bound.
var ErrFull = errors.New("spool: full")

// ErrBudget is returned by Append when the spool holds as many records as it can deliver
// within Options.DeliverWithin: the caller does not acknowledge the record (the NAS
// retransmits it, or fails over to another server) rather than keep what may be lost.
var ErrBudget = errors.New("spool: holds what it can deliver within its delivery budget")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("spool: closed")

const (
	headerSize  = 8
	maxRecord   = 1 << 20
	cursorFile  = "cursor"
	segSuffix   = ".seg"
	saveEvery   = 256
	defaultSeg  = 16 << 20
	minMaxBytes = 64 << 10
	// defaultMinRate (records/s): what a replay delivers to a slow Cassandra at the least.
	defaultMinRate = 100
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configure a spool.
type Options struct {
	Dir      string
	MaxBytes int64 // bound on the records not yet replayed, headers included
	// SegmentBytes is the size at which a new segment file starts (default 16 MiB).
	SegmentBytes int64
	// DeliverWithin bounds a spool whose directory dies with its process (a pod's emptyDir)
	// to what its replays deliver in this long: Append refuses records past DeliverWithin
	// times the delivery rate the replays measured (never below MinDeliveryRate). A backlog
	// taken faster than it drains — the spool acknowledges at disk speed — would otherwise
	// outgrow what the process can hand on when it stops. 0: no such bound (MaxBytes only).
	DeliverWithin time.Duration
	// MinDeliveryRate (records/s) is the rate assumed before any replay was measured, and
	// the floor of the measured one. Default 100.
	MinDeliveryRate float64
	// Metrics are the node's openaaa_spool_* metrics for its accounting spool; nil:
	// unregistered ones (a proxy queue, which has its own).
	Metrics *Metrics
	Log     *slog.Logger
}

type segment struct {
	base int64 // global offset of the first byte
	size int64
}

// Spool is safe for concurrent use: many appenders, one replayer at a time.
type Spool struct {
	opts Options
	log  *slog.Logger
	m    *Metrics

	mu      sync.Mutex
	segs    []segment // oldest first; the last one is being written
	cur     *os.File  // the last segment, open for append
	end     int64     // global offset after the last record written
	cursor  int64     // global offset of the next record to replay
	records int       // records not yet replayed
	closed  bool

	syncMu sync.Mutex // serialises fsyncs and segment rolls
	synced int64      // global offset up to which the data is on disk

	replayMu sync.Mutex
	rate     float64 // delivered records/s, as measured by the replays (under mu)
}

// Open opens (or creates) the spool in opts.Dir, recovering from a torn last record.
func Open(opts Options) (*Spool, error) {
	if opts.Dir == "" {
		return nil, errors.New("spool: no directory")
	}
	if opts.MaxBytes < minMaxBytes {
		return nil, fmt.Errorf("spool: maxBytes %d is below %d", opts.MaxBytes, minMaxBytes)
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = defaultSeg
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.MinDeliveryRate <= 0 {
		opts.MinDeliveryRate = defaultMinRate
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &Spool{opts: opts, log: opts.Log, m: opts.Metrics}
	if s.m == nil {
		s.m = NewMetrics(metrics.Factory{})
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.updateMetrics()
	return s, nil
}

func (s *Spool) segPath(base int64) string {
	return filepath.Join(s.opts.Dir, fmt.Sprintf("%020d%s", base, segSuffix))
}

func (s *Spool) load() error {
	ents, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		s.segs = append(s.segs, segment{base: base, size: fi.Size()})
	}
	sort.Slice(s.segs, func(i, j int) bool { return s.segs[i].base < s.segs[j].base })
	if raw, err := os.ReadFile(filepath.Join(s.opts.Dir, cursorFile)); err == nil {
		s.cursor, err = strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return fmt.Errorf("spool: cursor file: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("spool: %w", err)
	}
	if len(s.segs) == 0 {
		s.segs = []segment{{base: s.cursor}}
	}
	// Validate every record from the cursor on; cut a torn or corrupt tail.
	for i := range s.segs {
		seg := &s.segs[i]
		if seg.base+seg.size <= s.cursor {
			continue
		}
		start := max(s.cursor-seg.base, 0)
		good, n, err := scan(s.segPath(seg.base), start)
		if err != nil {
			return err
		}
		s.records += n
		if good < seg.size {
			s.log.Warn("spool: cutting a torn record at the end of a segment",
				"segment", s.segPath(seg.base), "at", good, "size", seg.size)
			if err := os.Truncate(s.segPath(seg.base), good); err != nil {
				return fmt.Errorf("spool: %w", err)
			}
			seg.size = good
			// Anything after a torn record is unreachable.
			for _, later := range s.segs[i+1:] {
				_ = os.Remove(s.segPath(later.base))
			}
			s.segs = s.segs[:i+1]
			break
		}
	}
	last := s.segs[len(s.segs)-1]
	f, err := os.OpenFile(s.segPath(last.base), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	s.cur = f
	s.end = last.base + last.size
	if s.cursor > s.end {
		s.cursor = s.end
	}
	s.synced = s.end
	s.dropReplayedLocked()
	return syncDir(s.opts.Dir)
}

// scan validates the records of one file from offset start, returning the offset after the
// last good record and how many good records there are.
func scan(path string, start int64) (int64, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return 0, 0, fmt.Errorf("spool: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<16)
	off, n := start, 0
	for {
		rec, err := readRecord(r)
		if err != nil {
			return off, n, nil // EOF or a torn/corrupt record: stop here
		}
		off += headerSize + int64(len(rec))
		n++
	}
}

func readRecord(r io.Reader) ([]byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[0:4])
	if n > maxRecord {
		return nil, fmt.Errorf("spool: record of %d bytes", n)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(r, rec); err != nil {
		return nil, err
	}
	if crc32.Checksum(rec, castagnoli) != binary.BigEndian.Uint32(h[4:8]) {
		return nil, errors.New("spool: checksum mismatch")
	}
	return rec, nil
}

// Append writes one record and returns once it is on disk.
func (s *Spool) Append(rec []byte) error { return s.append(rec, true) }

// Requeue is Append for a record the spool's own replay took out and hands back undelivered
// (a stopping proxy queue): it was within the bound when it was first taken, so only MaxBytes
// bounds it again.
func (s *Spool) Requeue(rec []byte) error { return s.append(rec, false) }

func (s *Spool) append(rec []byte, budget bool) error {
	if len(rec) > maxRecord {
		return fmt.Errorf("spool: record of %d bytes is too large", len(rec))
	}
	buf := make([]byte, headerSize+len(rec))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(rec)))
	binary.BigEndian.PutUint32(buf[4:8], crc32.Checksum(rec, castagnoli))
	copy(buf[headerSize:], rec)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.end-s.cursor+int64(len(buf)) > s.opts.MaxBytes {
		s.mu.Unlock()
		s.m.rejected.Inc()
		return ErrFull
	}
	if c := s.capacityLocked(); budget && c > 0 && s.records >= c {
		s.mu.Unlock()
		s.m.rejectedBudget.Inc()
		return ErrBudget
	}
	if _, err := s.cur.Write(buf); err != nil {
		// A partial write would corrupt what follows: cut it off.
		_ = s.cur.Truncate(s.end - s.segs[len(s.segs)-1].base)
		s.mu.Unlock()
		s.m.errs.Inc()
		return fmt.Errorf("spool: %w", err)
	}
	s.end += int64(len(buf))
	s.segs[len(s.segs)-1].size += int64(len(buf))
	s.records++
	want := s.end
	s.mu.Unlock()

	if err := s.syncTo(want); err != nil {
		s.m.errs.Inc()
		return err
	}
	s.m.appended.Inc()
	s.updateMetrics()
	return nil
}

// syncTo makes sure everything up to want is on disk; one fsync serves every waiter.
func (s *Spool) syncTo(want int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced >= want {
		return nil
	}
	s.mu.Lock()
	f, target := s.cur, s.end
	s.mu.Unlock()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: fsync: %w", err)
	}
	s.synced = target
	// Roll to a new segment when this one is big enough (under syncMu: nobody else holds f).
	s.mu.Lock()
	defer s.mu.Unlock()
	if last := s.segs[len(s.segs)-1]; last.size >= s.opts.SegmentBytes && s.end == target {
		if err := s.rollLocked(); err != nil {
			s.log.Error("spool: cannot start a new segment", "err", err)
		}
	}
	return nil
}

// rollLocked starts a new segment at s.end. Callers hold syncMu and mu, with s.end synced.
func (s *Spool) rollLocked() error {
	f, err := os.OpenFile(s.segPath(s.end), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	old := s.cur
	s.cur = f
	s.segs = append(s.segs, segment{base: s.end})
	_ = old.Close()
	if err := syncDir(s.opts.Dir); err != nil {
		return err
	}
	s.dropReplayedLocked()
	return nil
}

// dropReplayedLocked removes segments entirely before the cursor (never the last one).
func (s *Spool) dropReplayedLocked() {
	for len(s.segs) > 1 && s.segs[0].base+s.segs[0].size <= s.cursor {
		_ = os.Remove(s.segPath(s.segs[0].base))
		s.segs = s.segs[1:]
	}
}

// Records returns how many records wait for replay.
func (s *Spool) Records() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// Bytes returns the size of the records waiting for replay.
func (s *Spool) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end - s.cursor
}

// Pending reports whether records wait for replay.
func (s *Spool) Pending() bool { return s.Records() > 0 }

// Replay calls apply for each waiting record, oldest first, until the spool is empty or
// apply fails (that record stays first in line). It returns how many records were applied.
func (s *Spool) Replay(apply func(rec []byte) error) (int, error) {
	return s.ReplayBatch(1, func(recs [][]byte) error { return apply(recs[0]) })
}

// ReplayBatch is Replay in batches of up to n records (a batch never spans two segment
// files): apply gets them oldest first and may apply them concurrently, e.g. the records of
// different sessions in parallel. The cursor moves past a batch only when apply returns nil,
// so a batch that failed is replayed whole the next time (at least once).
func (s *Spool) ReplayBatch(n int, apply func(recs [][]byte) error) (int, error) {
	n = max(n, 1)
	s.replayMu.Lock()
	defer s.replayMu.Unlock()
	done := 0
	sinceSave := 0
	began := time.Now()
	defer func() {
		s.measure(done, n, time.Since(began))
		if sinceSave > 0 {
			if err := s.saveCursor(); err != nil {
				s.log.Error("spool: cannot save the cursor", "err", err)
			}
		}
		s.updateMetrics()
	}()
	for {
		s.syncMu.Lock()
		limit := s.synced
		s.syncMu.Unlock()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return done, ErrClosed
		}
		from := s.cursor
		var seg segment
		found := false
		for _, sg := range s.segs {
			if from >= sg.base && from < sg.base+sg.size {
				seg, found = sg, true
				break
			}
		}
		s.mu.Unlock()
		if !found || from >= limit {
			return done, nil
		}
		f, err := os.Open(s.segPath(seg.base))
		if err != nil {
			return done, fmt.Errorf("spool: %w", err)
		}
		if _, err := f.Seek(from-seg.base, io.SeekStart); err != nil {
			f.Close()
			return done, fmt.Errorf("spool: %w", err)
		}
		r := bufio.NewReaderSize(f, 1<<16)
		segEnd := min(seg.base+seg.size, limit)
		for from < segEnd {
			var batch [][]byte
			end := from
			for end < segEnd && len(batch) < n {
				rec, err := readRecord(r)
				if err != nil {
					f.Close()
					return done, fmt.Errorf("spool: reading at %d: %w", end, err)
				}
				batch = append(batch, rec)
				end += headerSize + int64(len(rec))
			}
			if err := apply(batch); err != nil {
				f.Close()
				return done, err
			}
			from = end
			s.mu.Lock()
			s.cursor = from
			s.records -= len(batch)
			s.mu.Unlock()
			done += len(batch)
			sinceSave += len(batch)
			s.m.replayed.Add(float64(len(batch)))
			if sinceSave >= saveEvery {
				if err := s.saveCursor(); err != nil {
					f.Close()
					return done, err
				}
				sinceSave = 0
				s.updateMetrics()
			}
		}
		f.Close()
		s.mu.Lock()
		s.dropReplayedLocked()
		s.mu.Unlock()
	}
}

// capacityLocked is the bound DeliverWithin sets on the records (0: none). Callers hold mu.
func (s *Spool) capacityLocked() int {
	if s.opts.DeliverWithin <= 0 {
		return 0
	}
	return max(int(max(s.rate, s.opts.MinDeliveryRate)*s.opts.DeliverWithin.Seconds()), 1)
}

// measure updates the delivery rate from one ReplayBatch call that delivered done records
// in elapsed, when it delivered at least a full batch (a few records say more about the
// latency than the rate). A moving average: one replay does not move the bound at once.
func (s *Spool) measure(done, batch int, elapsed time.Duration) {
	if done < max(batch, minMeasured) || elapsed <= 0 {
		return
	}
	r := float64(done) / elapsed.Seconds()
	s.mu.Lock()
	// From the assumed rate on: the first replays after a stall meet an idle Cassandra and
	// deliver faster than a shutdown will, beside the pods that took over the load.
	s.rate = 0.7*max(s.rate, s.opts.MinDeliveryRate) + 0.3*r
	rate := s.rate
	s.mu.Unlock()
	s.m.deliveryRate.Set(rate)
}

// minMeasured is the fewest records a replay must deliver for its rate to count.
const minMeasured = 64

func (s *Spool) saveCursor() error {
	s.mu.Lock()
	c := s.cursor
	s.mu.Unlock()
	tmp := filepath.Join(s.opts.Dir, cursorFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strconv.FormatInt(c, 10) + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.opts.Dir, cursorFile)); err != nil {
		return err
	}
	return syncDir(s.opts.Dir)
}

// Close saves the cursor and closes the files. Records not replayed stay on disk.
func (s *Spool) Close() error {
	s.replayMu.Lock()
	defer s.replayMu.Unlock()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.cur.Sync()
	if cerr := s.cur.Close(); err == nil {
		err = cerr
	}
	s.mu.Unlock()
	if serr := s.saveCursor(); err == nil {
		err = serr
	}
	return err
}

func (s *Spool) updateMetrics() {
	s.mu.Lock()
	b, n, c := s.end-s.cursor, s.records, s.capacityLocked()
	s.mu.Unlock()
	s.m.bytes.Set(float64(b))
	s.m.records.Set(float64(n))
	if c > 0 {
		s.m.capacity.Set(float64(c))
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
