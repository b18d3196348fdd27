// Package anonymize copies a Claude config dir with every piece of personal
// text replaced by filler, keeping everything the exporter reads.
//
// Its one job is the transform behind cmd/claude-transcript-anonymize and
// the repository's test corpus (testdata/corpus). Design:
//
//   - Every JSON string is rewritten in place, byte for byte: the output has
//     the same length as the input, line for line and file for file, so
//     sizes, offsets and benchmarks stay realistic. Escapes that carry no
//     text (\n, \t, \r, \", \\, \/, lone surrogates) are kept, so line
//     structure survives; every other byte becomes filler.
//   - What is kept is an allowlist (rules.go): record types, ids, links,
//     timestamps, models, stop reasons, tool names, agent types, enums and
//     numbers, each only where its key says it is one and its value looks
//     like one (short printable ASCII with no path or address in it).
//     Everything else is personal: prompts, responses, thinking, tool input
//     and output, titles, summaries, paths, branches, host and user names.
//   - Text becomes a fixed lorem-ipsum pattern that restarts at every
//     newline (it compresses to almost nothing in git). The markers Claude
//     Code itself writes at the start of a text ("<command-name>",
//     "[Request interrupted by user", "Warmup", the rejection notice, ...)
//     are kept and the rest filled, so the exporter classifies prompts,
//     interrupts and warmups as before. Lines that Claude Code made up
//     itself (model "<synthetic>", isApiErrorMessage) keep their text: it is
//     an API error or a limit notice, not anyone's words.
//   - Paths, working directories and branches are filled run by run (a run
//     is a maximal stretch of letters, digits or non-ASCII), keeping the
//     separators and a short lowercase extension. Each run maps to one
//     filler run through a keyed hash, injectively, across the whole copy:
//     two sessions in one project stay in one project, the project label
//     (the basename of cwd) stays distinct per project, and the encoded
//     project folder names map the same way, so they still match their cwd.
//   - What the counters read inside filled text stays: the first byte
//     of a structuredPatch line (+, -, space: lines of code), newlines
//     (line counts of edited text), a path's extension and the names
//     Makefile and Dockerfile (the language label), job states, and in a
//     shell command every byte that is not a word plus the words the
//     commit and pull-request rules compare with (shell.go); the other
//     words of a command are replaced, through the key outside quotes.
//     Pull request URLs keep their number and map case-insensitively.
//   - Ids that are not random (subagent ids built from a name or from the
//     words of a prompt, in file names and agentId fields) and custom
//     skill and command names are replaced through the key, the same in
//     every file; random hex, Claude Code's own fork prefixes (acompact,
//     aprompt_suggestion, aside_question) and built-in commands stay
//     (ids.go).
//   - Object keys that are not identifiers (the file paths that key
//     file-history snapshots) are filled like paths, injectively, so an
//     object never gets two equal keys.
//   - A line that is not valid JSON keeps its defect: JSON punctuation,
//     quotes, white space and digits stay, letters become x, and every byte
//     that is not valid UTF-8 becomes 0xFF, so it fails to decode for the
//     same reason. Invalid UTF-8 inside a valid line also becomes 0xFF, one
//     byte for one.
//
// The key makes path filler reproducible: the same key over the same input
// gives the same output. Without one, the command draws a random key, so
// path fillers cannot be guessed from a dictionary of likely names.
package anonymize
