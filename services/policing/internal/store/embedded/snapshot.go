package embedded

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// The snapshot is JSON lines: a header, then every active session, then the history
// (oldest first). It is written to a temporary file, fsync'd and renamed, so a crash while
// writing leaves the previous snapshot intact.
type snapshotHeader struct {
	Format  string `json:"format"`
	Active  int    `json:"active"`
	History int    `json:"history"`
	// SQNs: the AKA sequence numbers, one line each after the history (sqnRecord).
	SQNs int `json:"sqns,omitempty"`
}

type sqnRecord struct {
	Subscriber string `json:"subscriber"`
	SQN        uint64 `json:"sqn"`
}

const snapshotFormat = "openaaa-sessions/v1"

func (s *Store) writeSnapshot(path string) (int, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	enc := json.NewEncoder(w)
	var active []*session.Session
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, x := range sh.sessions {
			active = append(active, x)
		}
		sh.mu.Unlock()
	}
	hist := s.history.all()
	sqns := s.allSQNs()
	if err := enc.Encode(snapshotHeader{Format: snapshotFormat, Active: len(active), History: len(hist), SQNs: len(sqns)}); err != nil {
		return 0, err
	}
	for _, x := range active {
		if err := enc.Encode(x); err != nil {
			return 0, fmt.Errorf("session snapshot: %w", err)
		}
	}
	for _, x := range hist {
		if err := enc.Encode(x); err != nil {
			return 0, fmt.Errorf("session snapshot: %w", err)
		}
	}
	for sub, n := range sqns {
		if err := enc.Encode(sqnRecord{sub, n}); err != nil {
			return 0, fmt.Errorf("session snapshot: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	return len(active), nil
}

func (s *Store) loadSnapshot(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("session snapshot: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	var h snapshotHeader
	if err := dec.Decode(&h); err != nil || h.Format != snapshotFormat || h.Active < 0 || h.History < 0 || h.SQNs < 0 {
		return 0, fmt.Errorf("session snapshot %s: not a %s file", path, snapshotFormat)
	}
	active := 0
	for i := 0; i < h.Active+h.History; i++ {
		x := &session.Session{}
		if err := dec.Decode(x); err != nil {
			return 0, fmt.Errorf("session snapshot %s: record %d: %w", path, i+1, err)
		}
		session.ReadLegacy(x) // a snapshot written before Session.GxThrottled
		if i >= h.Active {
			s.history.add(x)
			continue
		}
		sh := s.shardOf(x.Key)
		if old, dup := sh.sessions[x.Key]; dup { // the same key twice: the later record wins
			s.unindex(sh, entryOf(old))
		} else {
			active++
		}
		sh.sessions[x.Key] = x
		s.index(sh, entryOf(x))
	}
	for i := 0; i < h.SQNs; i++ {
		var r sqnRecord
		if err := dec.Decode(&r); err != nil {
			return 0, fmt.Errorf("session snapshot %s: sequence number %d: %w", path, i+1, err)
		}
		if _, err := s.NextSQN(context.Background(), r.Subscriber, r.SQN); err != nil {
			return 0, err
		}
	}
	s.active.Add(int64(active))
	s.opt.Metrics.SessionsActive.Add(float64(active))
	return active, nil
}
