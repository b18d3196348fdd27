package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// skippedDir is never walked nor watched: it holds overflowed tool output
// (only sizes matter, and it can hold many files).
const skippedDir = "tool-results"

// Scan walks every root's projects/ dir and returns every matching regular
// file, sorted by path. It is the truth the hints approximate. On the way
// it adds the directory watches that are missing (a directory is watched
// before it is read, so a file created during the walk is either listed or
// hinted), drops watches of directories that are gone, and watches a root
// whose projects/ dir does not exist yet. A root that does not exist is
// not an error: it is looked for again on the next Scan.
//
// The error, when not nil, names the directories that could not be read;
// the files are still every one that could be found.
func (w *Watcher) Scan() ([]File, error) {
	return w.scan(nil)
}

// ScanEach is Scan handing each file to fn in path order instead of
// returning them. With one root, fn gets each project's files as soon as
// they are walked, while later projects are still being read, so that the
// caller may start on them (fn runs on ScanEach's goroutine, one call at a
// time); the files of several roots are gathered and sorted first (Scan).
func (w *Watcher) ScanEach(fn func(File)) error {
	if len(w.roots) != 1 {
		files, err := w.Scan()
		for _, f := range files {
			fn(f)
		}
		return err
	}
	_, err := w.scan(fn)
	return err
}

// scan is Scan (fn nil: the files are gathered, sorted and deduplicated
// if the walk did not already order them, and returned) and one root's
// ScanEach (files go to fn as the walk hands them over, in the walk's
// order: sortEntries gives path order).
func (w *Watcher) scan(fn func(File)) ([]File, error) {
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	startSeq, mark := w.syncWatchList()

	var files []File
	found := 0
	emit := func(f File) {
		found++
		fn(f)
	}
	if fn == nil {
		files = make([]File, 0, w.lastCount)
		emit = func(f File) { files = append(files, f) }
	}
	var errs []error
	blind := false
	for _, root := range w.roots {
		projects := filepath.Join(root, "projects")
		fi, err := os.Stat(projects)
		switch {
		case err == nil && fi.IsDir():
			wk := walker{w: w, file: emit}
			wk.walkProjects(projects, runtime.GOMAXPROCS(0))
			errs = append(errs, wk.errs...)
			blind = blind || wk.blind
			continue
		case err == nil || errors.Is(err, fs.ErrNotExist):
			// Claude Code creates projects/ later: watch the root for it.
			// A root that does not exist (or could not be watched) is
			// seen by the rescan only.
			ri, rerr := os.Stat(root)
			if rerr != nil || !ri.IsDir() || !w.watch(root) {
				blind = true
			}
		default:
			errs = append(errs, err)
			blind = true
		}
	}
	w.unwatchStale(mark, startSeq)

	if fn == nil {
		// One root's walk is sorted already (see sortEntries); roots may
		// interleave or overlap.
		if !strictlySorted(files) {
			slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
			files = slices.CompactFunc(files, func(a, b File) bool { return a.Path == b.Path })
		}
		found = len(files)
	}
	w.lastCount = found

	w.mu.Lock()
	w.last, w.scanned = w.now(), true
	w.blind = blind || len(errs) > 0
	w.mu.Unlock()

	if len(errs) > 0 {
		return files, fmt.Errorf("scan transcripts: %w", errors.Join(errs...))
	}
	return files, nil
}

// strictlySorted reports whether files are sorted by path without
// duplicates.
func strictlySorted(files []File) bool {
	for i := 1; i < len(files); i++ {
		if files[i-1].Path >= files[i].Path {
			return false
		}
	}
	return true
}

// walker is the state of one walk.
type walker struct {
	w *Watcher
	// file is called for every matching regular file, in path order.
	file func(File)
	errs []error
	// blind is set when a matching file was found in a directory without
	// a watch, or a watchable directory could not be watched.
	blind bool
	// buf builds paths; found holds the files of the directories being
	// walked (a stack: each directory's files above its parent's).
	buf   []byte
	found []stat
	// dormant is set while the walk is in a dormant session's directory
	// (dormantSession): it is listed, not watched.
	dormant bool
}

// stat is a file's stat, its Path not filled in yet; ok is false for a
// file that is gone or not regular any more.
type stat struct {
	f  File
	ok bool
}

// walk visits dir, whose place below projects/ is parts, and everything
// under it except tool-results/ dirs and symlinks. A directory the layout
// names (see watchable) is watched before it is read (which marks it
// found: watchMark). Files are stat'ed relative to their open
// directory, then the directory is closed before its subdirectories are
// walked, so at most one directory is open at a time. Directories that
// vanish are skipped silently; other read errors are kept in errs.
func (wk *walker) walk(dir string, parts []string) {
	base := len(wk.found)
	defer func() { wk.found = wk.found[:base] }()
	entries, watched := wk.enter(dir, parts)
	next := base
	// last is the file handed over last: a session's transcript sorts
	// right before its directory (sortEntries).
	var last stat
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			sub := append(slices.Clip(parts), name)
			was := wk.dormant
			wk.dormant = was || wk.dormantSession(sub, dir, last)
			wk.walk(string(wk.join(dir, name)), sub)
			wk.dormant = was
			continue
		}
		if st := wk.found[next]; st.ok {
			st.f.Path, st.f.Dir = wk.path(dir, name), dir
			wk.file(st.f)
			// A dormant session's files are seen by the rescan, and by
			// a listing when its transcript is written (wake): not
			// blind.
			wk.blind = wk.blind || !watched && !wk.dormant
			last = st
		} else {
			last = stat{}
		}
		next++
	}
}

// dormantAfter is how long after its transcript was last written a
// session's directory (its subagents/, workflows) goes without watches.
// A subagent's file is written while its session runs, and the session's
// transcript is written first (the Task call that starts it): a write to
// a dormant session's transcript has its directory watched again (wake).
// A subagent still writing this long after its session's last line is
// seen by the periodic rescan instead.
const dormantAfter = 24 * time.Hour

// dormantSession reports whether the directory whose path parts below
// projects/ are parts, in dir, is a session's (<enc>/<session>/) whose
// transcript, the file last handed over before it, was last written over
// dormantAfter ago. Its directories are then listed, not watched: at
// 50,000 sessions with subagents, their watches were the daemon's
// largest cost after the file table (the keys, the watcher's and
// fsnotify's maps: 8 MB, and the kernel's memory for each, against the
// user's inotify watch limit), for directories nothing writes to again.
func (wk *walker) dormantSession(parts []string, dir string, last stat) bool {
	if len(parts) != 2 || !last.ok || last.f.Dir != dir || len(last.f.Path) <= len(dir) {
		return false
	}
	name := last.f.Path[len(dir)+1:]
	session, ok := strings.CutSuffix(name, transcriptExt)
	return ok && session == parts[1] && wk.w.now().Sub(last.f.ModTime) > dormantAfter
}

// transcriptExt ends a session's transcript, <session>.jsonl.
const transcriptExt = ".jsonl"

// walkProjects walks a projects/ dir as walk does, its project
// directories spread over up to n goroutines (each project's subtree on
// one, with a walker of its own), and hands the files over in path order.
// A walk is system calls (getdents, fstatat) on directories the kernel has
// cached, so two walkers take about three quarters of the time of one
// (BenchmarkScan on 2 cores). At most 2n projects are walked ahead of the
// one being handed over, so their files are held twice only for those.
func (wk *walker) walkProjects(projects string, n int) {
	if n <= 1 {
		wk.walk(projects, nil)
		return
	}
	entries, watched := wk.enter(projects, nil)
	type sub struct {
		files []File
		errs  []error
		blind bool
		done  chan struct{}
	}
	subs := make([]sub, len(entries))
	for i, e := range entries {
		if e.IsDir() {
			subs[i].done = make(chan struct{})
		}
	}
	tasks := make(chan int)
	ahead := make(chan struct{}, 2*n)
	// spare holds the file lists already handed over, for the next
	// projects: a fresh list per project made as much garbage as the
	// scan's own result (8 MB at 100,000 files).
	spare := make(chan []File, 3*n)
	go func() {
		defer close(tasks)
		for i, e := range entries {
			if e.IsDir() {
				ahead <- struct{}{}
				tasks <- i
			}
		}
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tasks {
				s := &subs[i]
				select {
				case s.files = <-spare:
				default:
				}
				sw := walker{w: wk.w, file: func(f File) { s.files = append(s.files, f) }}
				name := entries[i].Name()
				sw.walk(projects+string(filepath.Separator)+name, []string{name})
				s.errs, s.blind = sw.errs, sw.blind
				close(s.done)
			}
		}()
	}
	found := 0
	for i, e := range entries {
		if e.IsDir() {
			s := &subs[i]
			<-s.done
			for _, f := range s.files {
				wk.file(f)
			}
			wk.errs = append(wk.errs, s.errs...)
			wk.blind = wk.blind || s.blind
			select {
			case spare <- s.files[:0]:
			default:
			}
			*s = sub{}
			<-ahead
			continue
		}
		if st := wk.found[found]; st.ok {
			st.f.Path, st.f.Dir = wk.path(projects, e.Name()), projects
			wk.file(st.f)
			wk.blind = wk.blind || !watched
		}
		found++
	}
	wg.Wait()
	wk.found = wk.found[:0]
}

// enter watches dir when the layout names it (see watchable; marking it
// found) and it is not in a dormant session's directory, then lists it
// with readDir. A directory that vanished lists
// nothing; other read errors are kept in errs.
func (wk *walker) enter(dir string, parts []string) (entries []fs.DirEntry, watched bool) {
	if wk.dormant {
		entries, _ = wk.list(dir)
		return entries, false
	}
	if len(parts) == 2 {
		return wk.enterSession(dir)
	}
	if watchable(parts) {
		watched = wk.w.watch(dir)
		wk.blind = wk.blind || !watched
	}
	entries, _ = wk.list(dir)
	return entries, watched
}

// enterSession is enter for a directory <enc>/<session>/, which holds no
// transcripts of its own: it is watched to see its subagents/ appear, and
// only until then. Once subagents/ is there (with a watch of its own),
// the session's watch is left out, and the scan drops it (a removed
// subagents/ asks for a rescan, which watches the session again): at
// 50,000 sessions with subagents it was half of all watches (the watch
// keys, the watcher's and fsnotify's maps: 10 MB, and the kernel's).
// It lists dir first, so a subagents/ made between the listing and the
// watch is met by asking for a rescan (only when the listing succeeded: a
// listing that failed, out of descriptors say, would ask at every scan).
// A session's dir holding a transcript of its own keeps its watch.
func (wk *walker) enterSession(dir string) (entries []fs.DirEntry, watched bool) {
	entries, err := wk.list(dir)
	hasSub, hasFiles := false, false
	for _, e := range entries {
		if e.IsDir() {
			hasSub = hasSub || e.Name() == subagentsDir
		} else {
			hasFiles = true // a transcript of its own: its appends need the watch
		}
	}
	if err == nil && hasSub && !hasFiles {
		return entries, false
	}
	watched = wk.w.watch(dir)
	wk.blind = wk.blind || !watched
	if err == nil && !hasSub && watched {
		if fi, err := os.Lstat(filepath.Join(dir, subagentsDir)); err == nil && fi.IsDir() {
			wk.w.signalRescan()
		}
	}
	return entries, watched
}

// list is readDir, keeping its error in errs unless dir vanished.
func (wk *walker) list(dir string) ([]fs.DirEntry, error) {
	entries, err := wk.readDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		wk.errs = append(wk.errs, err)
	}
	return entries, err
}

// metaExt ends the .meta.json Claude Code writes beside a subagent's
// transcript (File.NoMeta).
const metaExt = ".meta.json"

// subagentsDir holds a session's subagent transcripts (Claude Code 2.1.2+).
const subagentsDir = "subagents"

// readDir lists dir's subdirectories to walk and its matching files, in
// path order, and stats the files (onto the found stack, one slot per
// file). Paths are built as the files are handed over.
func (wk *walker) readDir(dir string) ([]fs.DirEntry, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	keep := entries[:0]
	metas := false
	for _, e := range entries {
		metas = metas || strings.HasSuffix(e.Name(), metaExt)
		switch name := e.Name(); {
		case e.IsDir():
			if name != skippedDir {
				keep = append(keep, e)
			}
		case (e.Type().IsRegular() || e.Type()&irregular != 0) && wk.w.match(name):
			keep = append(keep, e)
		}
	}
	sortEntries(keep)
	now := wk.w.now()
	for _, e := range keep {
		if e.IsDir() {
			continue
		}
		f, ok, serr := statAt(d, dir, e)
		if serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			wk.errs = append(wk.errs, serr)
		}
		f.NoMeta = !metas && now.Sub(f.ModTime) > MetaSettled
		wk.found = append(wk.found, stat{f, ok})
	}
	return keep, err
}

// join returns dir/name in the walker's buffer (valid until the next
// call). The parts come from the roots and from directory listings, so
// there is nothing to clean.
func (wk *walker) join(dir, name string) []byte {
	wk.buf = append(append(append(wk.buf[:0], dir...), filepath.Separator), name...)
	return wk.buf
}

// path returns dir/name as a string.
func (wk *walker) path(dir, name string) string { return string(wk.join(dir, name)) }

// sortEntries sorts a directory's entries so that walking them in order
// visits paths in order: by name, a directory's name followed by the
// separator (its files' paths continue with it), so that "x-y" comes
// before the files of "x/", and those before "x.jsonl".
func sortEntries(entries []fs.DirEntry) {
	key := func(e fs.DirEntry, i int) int {
		name := e.Name()
		switch {
		case i < len(name):
			return int(name[i])
		case i == len(name) && e.IsDir():
			return filepath.Separator
		}
		return -1 // the end sorts first
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int {
		an, bn := a.Name(), b.Name()
		n := min(len(an), len(bn))
		if c := strings.Compare(an[:n], bn[:n]); c != 0 {
			return c
		}
		for i := n; ; i++ {
			ka, kb := key(a, i), key(b, i)
			if ka != kb || ka < 0 {
				return ka - kb
			}
		}
	})
}

// watchable reports whether a directory below projects/ gets a watch,
// from its path parts below projects/ (none for projects/ itself):
// projects/, <enc>/, <enc>/<session>/ (to see subagents/ appear; only
// until it does, enterSession),
// <session>/subagents/, subagents/workflows/ and workflows/<wf>/.
// Anything deeper is found by the rescan only.
func watchable(parts []string) bool {
	n := len(parts)
	switch {
	case n <= 2:
		return true
	case parts[2] != "subagents":
		return false
	case n == 3:
		return true
	case parts[3] != "workflows":
		return false
	default:
		return n <= 5
	}
}

// place is where a path sits relative to the roots.
type place struct {
	// underProjects: the path is a projects/ dir or below one; parts are
	// its path parts below projects/.
	underProjects bool
	parts         []string
	// inRoot: the path is a direct child of a root (not projects/).
	inRoot bool
}

// locate places a path relative to the roots.
func (w *Watcher) locate(path string) (place, bool) {
	for _, root := range w.roots {
		projects := filepath.Join(root, "projects")
		if path == projects {
			return place{underProjects: true}, true
		}
		if rel, ok := strings.CutPrefix(path, projects+string(filepath.Separator)); ok {
			return place{underProjects: true, parts: strings.Split(rel, string(filepath.Separator))}, true
		}
	}
	for _, root := range w.roots {
		if filepath.Dir(path) == root {
			return place{inRoot: true}, true
		}
	}
	return place{}, false
}
