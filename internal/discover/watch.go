package discover

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// watch adds a watch on dir unless it has one, the watcher is polling
// only, closed, or past its watch limit, and reports whether dir has a
// watch now.
//
// A directory a Scan's walk names this way is marked as found (see
// watchMark), so that the Scan keeps its watch.
func (w *Watcher) watch(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.watched[dir]
	if ok {
		m.mark = w.mark
		w.watched[dir] = m
	}
	if w.fsw == nil || w.closed || w.stats.Fallback {
		return false
	}
	if ok {
		return true
	}
	var err error
	if w.hook != nil {
		err = w.hook(dir)
	}
	if err == nil {
		err = w.fsw.Add(dir)
	}
	switch {
	case err == nil:
		w.seq++
		w.watched[dir] = watchMark{seq: w.seq, mark: w.mark}
		return true
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// Gone or replaced under us: the rescan will tell.
	case isWatchLimit(err):
		w.stats.WatchErrors++
		w.stats.Fallback = true
		w.log.Warn("directory watch limit reached, new directories found by rescan only",
			"path", dir, "watched", len(w.watched), "err", err,
			"hint", "raise fs.inotify.max_user_watches (sysctl) or use --tail.poll-only")
	default:
		w.stats.WatchErrors++
		w.log.Debug("watch directory failed", "path", dir, "err", err)
	}
	return false
}

// isWatchLimit reports whether err says the kernel will not give more
// watches (inotify: ENOSPC; kqueue and others: out of descriptors).
func isWatchLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// watchMark is what the watcher knows of a watched directory: seq, when
// its watch was added (Watcher.seq), and mark, the last Scan walk that
// found it or check of the watch list that saw it (Watcher.mark). A Scan
// used to gather the directories it found in a set of its own, and the
// watch list in another: at 100,000 directories (a subagents/ dir per
// session, and the session's dir), two more maps of as many paths, kept
// between scans (12 MB), and built even for a one-shot, which watches
// nothing.
type watchMark struct{ seq, mark uint64 }

// syncWatchList forgets watches the watcher dropped on its own (a watched
// directory deleted or moved while its events were lost), so Scan adds
// them again. It returns the current watch sequence number and the mark
// of the walk that follows.
func (w *Watcher) syncWatchList() (seq, mark uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mark++
	if w.fsw != nil && !w.closed {
		for _, p := range w.fsw.WatchList() {
			if m, ok := w.watched[p]; ok {
				m.mark = w.mark
				w.watched[p] = m
			}
		}
		for p, m := range w.watched {
			if m.mark != w.mark {
				delete(w.watched, p)
			}
		}
	}
	w.mark++
	return w.seq, w.mark
}

// unwatchStale removes the watches of directories the Scan whose walk
// marked what it found with mark did not find, except those added after
// the Scan started (by the event goroutine).
func (w *Watcher) unwatchStale(mark, startSeq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, m := range w.watched {
		if m.mark != mark && m.seq <= startSeq {
			w.unwatchLocked(p)
		}
	}
}

// unwatchUnder removes the watches on dir and every directory below it,
// and reports whether there was any.
func (w *Watcher) unwatchUnder(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	prefix := dir + string(filepath.Separator)
	found := false
	for p := range w.watched {
		if p == dir || strings.HasPrefix(p, prefix) {
			w.unwatchLocked(p)
			found = true
		}
	}
	return found
}

func (w *Watcher) unwatchLocked(p string) {
	delete(w.watched, p)
	if w.fsw != nil && !w.closed {
		// Often already gone with its directory: nothing to report.
		_ = w.fsw.Remove(p)
	}
}

// run turns fsnotify events into hints until the watcher is closed.
func (w *Watcher) run() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.handleError(err)
		}
	}
}

// handle turns one fsnotify event into hints, watches and rescan requests.
func (w *Watcher) handle(ev fsnotify.Event) {
	path := ev.Name
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if w.unwatchUnder(path) {
			// A watched directory went: its files went with it.
			w.signalRescan()
		} else if pl, ok := w.locate(path); ok && pl.underProjects && w.match(filepath.Base(path)) {
			w.hint(path, Removed)
		}
	}
	pl, ok := w.locate(path)
	if !ok {
		return
	}
	name := filepath.Base(path)
	if pl.inRoot {
		// The root is watched only until projects/ appears.
		if ev.Has(fsnotify.Create) && name == "projects" {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				// The rescan is asked first, so that whoever takes a
				// hint of the walk finds it asked.
				w.signalRescan()
				(&walker{w: w, file: w.hintFile}).walk(path, nil)
			}
		}
		return
	}
	if !pl.underProjects {
		return
	}
	if ev.Has(fsnotify.Create) {
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
			// Gone already; its Remove follows.
		case fi.IsDir():
			if name != skippedDir {
				// Files may have been created before the watch landed:
				// list them, and have the caller rescan anyway. The
				// rescan is asked first: a hint of the walk can reach the
				// caller at once (pump), and one that arrived before the
				// request left a caller that had taken every hint without
				// a rescan pending (TestFileInNewDirectoryIsHintedEven-
				// IfCreatedBeforeTheWatch failed so, now and then).
				w.signalRescan()
				(&walker{w: w, file: w.hintFile}).walk(path, pl.parts)
			}
		case fi.Mode().IsRegular() && w.match(name):
			w.hint(path, Changed)
			w.wake(path, pl.parts)
		}
		return
	}
	if ev.Has(fsnotify.Write) && w.match(name) {
		w.hint(path, Changed)
		w.wake(path, pl.parts)
	}
}

// wake watches a dormant session's directory again (see dormantAfter)
// when its transcript, path (parts below projects/), is written: the
// session runs, and its subagents are about to write. The directory is
// walked as one that just appeared (watched, then listed, its files
// hinted), so that a subagent's file written before the watch landed is
// read too. A session's directory that is watched (itself or its
// subagents/) or does not exist costs a map lookup and a stat per
// write.
func (w *Watcher) wake(path string, parts []string) {
	session, ok := strings.CutSuffix(path, transcriptExt)
	if len(parts) != 2 || !ok {
		return
	}
	sub := session + string(filepath.Separator) + subagentsDir
	w.mu.Lock()
	watched := false
	for _, dir := range [...]string{session, sub} {
		if m, ok := w.watched[dir]; ok {
			// Found, as a walk finds it: a Scan running now that saw
			// the session dormant (its transcript's stat before this
			// write) keeps the watch instead of dropping it.
			m.mark = w.mark
			w.watched[dir] = m
			watched = true
		}
	}
	off := w.fsw == nil || w.closed || w.stats.Fallback
	w.mu.Unlock()
	if watched || off {
		return
	}
	if fi, err := os.Lstat(session); err != nil || !fi.IsDir() {
		return
	}
	(&walker{w: w, file: w.hintFile}).walk(session, []string{parts[0], filepath.Base(session)})
}

// hintFile hints a file found in a directory that just appeared.
func (w *Watcher) hintFile(f File) { w.hint(f.Path, Changed) }

// handleError counts a watcher error and asks for a rescan.
func (w *Watcher) handleError(err error) {
	w.mu.Lock()
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.stats.Overflows++
		if !w.overflowed {
			w.overflowed = true
			w.log.Warn("directory watch events overflowed, rescanning", "err", err,
				"hint", "raise fs.inotify.max_queued_events (sysctl); later overflows are counted only")
		}
	} else {
		w.stats.WatchErrors++
		w.log.Warn("directory watcher error, rescanning", "err", err)
	}
	w.mu.Unlock()
	w.signalRescan()
}

// hint queues a hint for the consumer without blocking.
func (w *Watcher) hint(path string, op Op) {
	if !w.hints.put(path, op) {
		w.signalRescan()
	}
}

// pump moves queued hints to the Events channel. It may block on a slow
// consumer; meanwhile new hints coalesce in the queue.
func (w *Watcher) pump() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.hints.wake:
		}
		for _, ev := range w.hints.take() {
			select {
			case w.events <- ev:
			case <-w.done:
				return
			}
		}
	}
}

// hintQueue holds hints not yet handed to the consumer, one per path, in
// the order the paths were first hinted. The last op for a path wins.
type hintQueue struct {
	mu      sync.Mutex
	pending map[string]Op
	order   []string
	max     int
	dropped uint64
	wake    chan struct{} // capacity 1
}

// put queues a hint and reports false when it was dropped because max
// paths are already pending.
func (q *hintQueue) put(path string, op Op) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.pending[path]; !ok {
		if len(q.pending) >= q.max {
			q.dropped++
			return false
		}
		q.order = append(q.order, path)
	}
	q.pending[path] = op
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take empties the queue.
func (q *hintQueue) take() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := make([]Event, 0, len(q.order))
	for _, p := range q.order {
		evs = append(evs, Event{Path: p, Op: q.pending[p]})
	}
	clear(q.pending)
	q.order = q.order[:0]
	return evs
}

func (q *hintQueue) droppedCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
