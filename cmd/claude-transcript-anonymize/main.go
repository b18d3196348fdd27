// Command claude-transcript-anonymize copies a Claude config dir with every
// piece of personal text replaced by filler, keeping everything the
// exporter reads, so that a transcript can be attached to a bug report. This
// file is wiring only: flags → anonymize.Tree.
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/anonymize"
)

const name = "claude-transcript-anonymize"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	defaultFrom := filepath.Join(home, ".claude")
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		defaultFrom = strings.Split(d, ",")[0]
	}
	var (
		from, to, key string
		sessions      []string
	)
	app := kingpin.New(name, "Copy a Claude config dir with prompts, responses, thinking, tool input and output, "+
		"paths, branches and titles replaced by filler of the same byte length; ids, timestamps, models, "+
		"token usage and tool names are kept. Only projects/, todos/, tasks/, sessions/, jobs/ and "+
		"history.jsonl are read; settings and credentials never are.")
	app.Version(version.Print(name))
	app.HelpFlag.Short('h')
	app.ErrorWriter(stderr)
	app.UsageWriter(stderr)
	app.Flag("from", "Claude config dir to copy. Default: $CLAUDE_CONFIG_DIR (its first entry) or ~/.claude.").
		Default(defaultFrom).StringVar(&from)
	app.Flag("to", "Directory to write the copy to; it must not exist or be empty.").Required().StringVar(&to)
	app.Flag("key", "Key of the path filler: the same key gives the same copy. Default: a random key, so that "+
		"filled paths cannot be guessed from likely names.").StringVar(&key)
	app.Flag("session", "Copy only this session id (repeatable): its transcript, subagents, todos and tasks.").
		StringsVar(&sessions)
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if fi, err := os.Stat(from); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "%s: --from=%s is not a directory\n", name, from)
		return 2
	}
	if missing, err := anonymize.MissingSessions(from, sessions); err != nil {
		fmt.Fprintf(stderr, "%s: --session: %v\n", name, err)
		return 1
	} else if len(missing) > 0 {
		fmt.Fprintf(stderr, "%s: --session: no session %s in %s (no projects/<dir>/<id>.jsonl): give the id of a session transcript there\n",
			name, strings.Join(missing, ", "), from)
		return 2
	}
	k := []byte(key)
	if key == "" {
		k = make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			fmt.Fprintf(stderr, "%s: random key: %v\n", name, err)
			return 1
		}
	}
	res, err := anonymize.Tree(from, to, anonymize.Options{Key: k, Sessions: sessions})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	s := res.Stats
	fmt.Fprintf(stdout, "wrote %s: %d files, %d bytes, %d JSON lines (%d malformed, kept broken)\n",
		to, s.Files, s.Bytes, s.Lines, s.Malformed)
	fmt.Fprintf(stdout, "replaced %d texts, %d paths and branches, %d path keys; kept %d ids, types, models and markers\n",
		s.Text, s.Paths, s.Keys, s.Kept)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(stdout, "not copied: %d entries (settings, credentials, caches, non-JSON files), e.g. %s\n",
			len(res.Skipped), res.Skipped[0])
	}
	return 0
}
