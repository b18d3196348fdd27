package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	startSeq := w.syncWatchList()

	var (
		files   []File
		errs    []error
		desired = map[string]bool{}
	)
	add := func(f File) { files = append(files, f) }
	for _, root := range w.roots {
		projects := filepath.Join(root, "projects")
		fi, err := os.Stat(projects)
		switch {
		case err == nil && fi.IsDir():
			errs = append(errs, w.walk(projects, nil, desired, add)...)
		case err == nil || errors.Is(err, fs.ErrNotExist):
			// Claude Code creates projects/ later: watch the root for it.
			if ri, rerr := os.Stat(root); rerr == nil && ri.IsDir() {
				desired[root] = true
				w.watch(root)
			}
		default:
			errs = append(errs, err)
		}
	}
	w.unwatchStale(desired, startSeq)

	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	files = slices.CompactFunc(files, func(a, b File) bool { return a.Path == b.Path })

	w.mu.Lock()
	w.next = w.now().Add(w.interval)
	w.mu.Unlock()

	if len(errs) > 0 {
		return files, fmt.Errorf("scan transcripts: %w", errors.Join(errs...))
	}
	return files, nil
}

// walk visits dir, whose place below projects/ is parts, and everything
// under it except tool-results/ dirs and symlinks. A directory the layout
// names (see watchable) is watched before it is read and, when desired is
// not nil, recorded in it. file is called for every matching regular
// file. Directories that vanish are skipped silently; other read errors
// are returned.
func (w *Watcher) walk(dir string, parts []string, desired map[string]bool, file func(File)) []error {
	if watchable(parts) {
		if desired != nil {
			desired[dir] = true
		}
		w.watch(dir)
	}
	entries, err := os.ReadDir(dir)
	var errs []error
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case e.IsDir():
			if name == skippedDir {
				continue
			}
			errs = append(errs, w.walk(path, append(slices.Clip(parts), name), desired, file)...)
		case e.Type().IsRegular() && w.match(name):
			fi, err := e.Info()
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				continue
			}
			file(fileOf(path, fi))
		}
	}
	return errs
}

// fileOf builds a File from its Lstat info.
func fileOf(path string, fi fs.FileInfo) File {
	dev, ino := fileID(fi)
	return File{Path: path, Size: fi.Size(), ModTime: fi.ModTime(), Dev: dev, Ino: ino}
}

// watchable reports whether a directory below projects/ gets a watch,
// from its path parts below projects/ (none for projects/ itself):
// projects/, <enc>/, <enc>/<session>/ (to see subagents/ appear),
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
