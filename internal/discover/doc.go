// Package discover turns Claude config roots into the list of transcript
// files under <root>/projects/, and tells its caller early when that list
// may have changed.
//
// One job: roots → files. [Watcher.Scan] walks every root and returns every
// matching file (path, size, mtime, device and inode); that walk is the
// truth. fsnotify watches on directories (never files) are only a hint that
// makes the caller look sooner: [Watcher.Events] carries per-path hints and
// [Watcher.RescanNeeded] asks for a full Scan when hints may have been lost
// (queue overflow, watcher error, too many pending hints, a new directory).
// [Watcher.Step] says when the periodic rescan is due, on the caller's clock.
// Reading the files is internal/tail's job, not this package's.
//
// Import rule: discover imports the standard library, fsnotify and
// golang.org/x/sys/unix only, nothing from mapping/* or exporter/*. What counts as a transcript name is
// passed in as [Config.Match]. See design.md for the guarantees and limits.
package discover
